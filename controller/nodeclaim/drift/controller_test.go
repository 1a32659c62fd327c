package drift

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/nodeclaim/internal/fixtures"
)

// driftingProvider is the fixtures' kwok provider whose IsDrifted answers from its fields.
type driftingProvider struct {
	*fixtures.Provider
	reason cloudprovider.DriftReason
	err    error
	calls  int
}

func (p *driftingProvider) IsDrifted(context.Context, *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	p.calls++
	return p.reason, p.err
}

const (
	hashVersion = "joinery-v1"
	poolHash    = "1111"
)

var testNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// nodePool is NodePool "default" with its hash, allowing on-demand small or big instances.
func nodePool() *karpv1.NodePool {
	return &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: map[string]string{
			karpv1.NodePoolHashAnnotationKey: poolHash, karpv1.NodePoolHashVersionAnnotationKey: hashVersion,
		}},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"small", "big"}},
			},
			NodeClassRef: fixtures.NodeClaim("x").Spec.NodeClassRef,
		}}},
	}
}

// launchedNodeClaim is a NodeClaim of the default NodePool launched as an on-demand small
// instance, stamped with the NodePool's hash.
func launchedNodeClaim() *karpv1.NodeClaim {
	nc := fixtures.NodeClaim("nc")
	nc.Labels[corev1.LabelInstanceTypeStable] = "small"
	nc.Labels[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeOnDemand
	nc.Annotations = map[string]string{karpv1.NodePoolHashAnnotationKey: poolHash, karpv1.NodePoolHashVersionAnnotationKey: hashVersion}
	nc.Status.ProviderID = "kwok://nc"
	nc.Status.Conditions = []metav1.Condition{{
		Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: karpv1.ConditionTypeLaunched, LastTransitionTime: metav1.NewTime(testNow.Add(-time.Hour)),
	}}
	return nc
}

func drifted(reason cloudprovider.DriftReason) func(*karpv1.NodeClaim) {
	return func(nc *karpv1.NodeClaim) {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{
			Type: karpv1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: string(reason), LastTransitionTime: metav1.NewTime(testNow.Add(-time.Minute)),
		})
	}
}

func TestReconcile(t *testing.T) {
	tests := []struct {
		name          string
		editPool      func(*karpv1.NodePool)
		noPool        bool
		editClaim     func(*karpv1.NodeClaim)
		cloudReason   cloudprovider.DriftReason
		cloudErr      error
		wantErr       bool
		wantReason    cloudprovider.DriftReason // "" means no Drifted condition
		wantMessage   string                    // a substring of the condition's message
		wantCounted   bool                      // the metric counts a new drift
		wantCloudCall bool
		wantRequeue   bool
		// wantHash and wantVersion are the NodeClaim's hash annotations afterwards, when set.
		wantHash, wantVersion string
	}{
		{
			name:          "matching nodeclaim is not drifted",
			wantCloudCall: true, wantRequeue: true,
		},
		{
			name: "not launched: no drift is looked for",
			editClaim: func(nc *karpv1.NodeClaim) {
				nc.Status.Conditions = nil
				nc.Annotations[karpv1.NodePoolHashAnnotationKey] = "2222"
			},
		},
		{
			name: "not launched: a stale Drifted condition is removed",
			editClaim: func(nc *karpv1.NodeClaim) {
				nc.Status.Conditions = nil
				drifted(NodePoolDrifted)(nc)
			},
		},
		{
			name:       "template hash changed: NodePoolDrifted",
			editPool:   func(np *karpv1.NodePool) { np.Annotations[karpv1.NodePoolHashAnnotationKey] = "2222" },
			wantReason: NodePoolDrifted, wantMessage: "karpenter.sh/nodepool-hash is 2222, the NodeClaim was made from 1111",
			wantCounted: true, wantRequeue: true,
		},
		{
			name: "hash of another version: restamped, not drifted",
			editPool: func(np *karpv1.NodePool) {
				np.Annotations[karpv1.NodePoolHashAnnotationKey] = "2222"
				np.Annotations[karpv1.NodePoolHashVersionAnnotationKey] = "joinery-v2"
			},
			wantCloudCall: true, wantRequeue: true, wantHash: "2222", wantVersion: "joinery-v2",
		},
		{
			name: "nodeclaim without hash annotations takes the nodepool's",
			editClaim: func(nc *karpv1.NodeClaim) {
				nc.Annotations = nil
			},
			wantCloudCall: true, wantRequeue: true, wantHash: poolHash, wantVersion: hashVersion,
		},
		{
			name: "hash of another version on a drifted nodeclaim: old hash kept, still drifted",
			editPool: func(np *karpv1.NodePool) {
				np.Annotations[karpv1.NodePoolHashAnnotationKey] = "2222"
				np.Annotations[karpv1.NodePoolHashVersionAnnotationKey] = "joinery-v2"
			},
			editClaim:  drifted(NodePoolDrifted),
			wantReason: NodePoolDrifted, wantRequeue: true, wantHash: poolHash, wantVersion: "joinery-v2",
		},
		{
			name: "requirements narrowed past the nodeclaim's labels: RequirementsDrifted",
			editPool: func(np *karpv1.NodePool) {
				np.Spec.Template.Spec.Requirements[1].Values = []string{"big"}
			},
			wantReason: RequirementsDrifted, wantMessage: "node.kubernetes.io/instance-type",
			wantCounted: true, wantRequeue: true,
		},
		{
			name: "requirements widened: still satisfied, not drifted",
			editPool: func(np *karpv1.NodePool) {
				np.Spec.Template.Spec.Requirements[1].Values = []string{"small", "big", "huge"}
			},
			wantCloudCall: true, wantRequeue: true,
		},
		{
			name: "a required label the nodeclaim lacks: RequirementsDrifted",
			editPool: func(np *karpv1.NodePool) {
				np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
					karpv1.NodeSelectorRequirementWithMinValues{Key: "example.com/team", Operator: corev1.NodeSelectorOpExists})
			},
			wantReason: RequirementsDrifted, wantMessage: "example.com/team", wantCounted: true, wantRequeue: true,
		},
		{
			name: "a NotIn on a label the nodeclaim lacks is satisfied",
			editPool: func(np *karpv1.NodePool) {
				np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
					karpv1.NodeSelectorRequirementWithMinValues{Key: "example.com/team", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a"}})
			},
			wantCloudCall: true, wantRequeue: true,
		},
		{
			name:        "cloud provider drift",
			cloudReason: "AMIDrift", wantCloudCall: true,
			wantReason: "AMIDrift", wantMessage: "reports AMIDrift", wantCounted: true, wantRequeue: true,
		},
		{
			name:        "static drift is reported before the cloud provider is asked",
			editPool:    func(np *karpv1.NodePool) { np.Annotations[karpv1.NodePoolHashAnnotationKey] = "2222" },
			cloudReason: "AMIDrift",
			wantReason:  NodePoolDrifted, wantCounted: true, wantRequeue: true,
		},
		{
			name: "requirements drift is reported before the cloud provider is asked",
			editPool: func(np *karpv1.NodePool) {
				np.Spec.Template.Spec.Requirements[0].Values = []string{karpv1.CapacityTypeSpot}
			},
			cloudReason: "SubnetDrift",
			wantReason:  RequirementsDrifted, wantCounted: true, wantRequeue: true,
		},
		{
			name:          "no longer drifted: the condition is removed",
			editClaim:     drifted("AMIDrift"),
			wantCloudCall: true, wantRequeue: true,
		},
		{
			name:        "drifted for another reason: the reason is updated, not counted again",
			editClaim:   drifted(RequirementsDrifted),
			cloudReason: "SecurityGroupDrift", wantCloudCall: true,
			wantReason: "SecurityGroupDrift", wantRequeue: true,
		},
		{
			name:      "cloud provider failure is retried, the condition left alone",
			editClaim: drifted("AMIDrift"),
			cloudErr:  fixtures.ErrBoom, wantErr: true, wantCloudCall: true,
			wantReason: "AMIDrift",
		},
		{
			name:     "instance gone: left to garbage collection",
			cloudErr: cloudprovider.NewNodeClaimNotFoundError(errors.New("no such instance")), wantCloudCall: true,
		},
		{
			name:   "nodepool gone: nothing to compare against",
			noPool: true, editClaim: drifted(NodePoolDrifted),
			wantReason: NodePoolDrifted,
		},
		{
			name: "deleting nodeclaim is left alone",
			editClaim: func(nc *karpv1.NodeClaim) {
				nc.Finalizers = []string{karpv1.TerminationFinalizer}
				nc.DeletionTimestamp = &metav1.Time{Time: testNow}
			},
			editPool: func(np *karpv1.NodePool) { np.Annotations[karpv1.NodePoolHashAnnotationKey] = "2222" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np, nc := nodePool(), launchedNodeClaim()
			if tt.editPool != nil {
				tt.editPool(np)
			}
			if tt.editClaim != nil {
				tt.editClaim(nc)
			}
			objs := []client.Object{nc}
			if !tt.noPool {
				objs = append(objs, np)
			}
			c := fixtures.NewClient(t, objs...)
			cp := &driftingProvider{Provider: fixtures.NewProvider(t, c), reason: tt.cloudReason, err: tt.cloudErr}
			ctl := New(c, cp, Options{Clock: clocktesting.NewFakePassiveClock(testNow)})

			var counted float64
			if tt.wantReason != "" {
				counted = testutil.ToFloat64(driftedTotal.WithLabelValues(string(tt.wantReason), "default"))
			}
			res, err := ctl.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "nc"}})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Reconcile error = %v, want error %v", err, tt.wantErr)
			}
			if got := res.RequeueAfter == DefaultInterval; got != tt.wantRequeue {
				t.Errorf("RequeueAfter = %s, want periodic requeue %v", res.RequeueAfter, tt.wantRequeue)
			}
			if (cp.calls > 0) != tt.wantCloudCall {
				t.Errorf("IsDrifted called %d times, want called %v", cp.calls, tt.wantCloudCall)
			}

			fixtures.Get(t, c, nc)
			cond := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrifted)
			switch {
			case tt.wantReason == "" && cond != nil:
				t.Errorf("Drifted = %+v, want none", cond)
			case tt.wantReason != "" && (cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != string(tt.wantReason)):
				t.Errorf("Drifted = %+v, want True with reason %s", cond, tt.wantReason)
			case cond != nil && !strings.Contains(cond.Message, tt.wantMessage):
				t.Errorf("Drifted message = %q, want it to contain %q", cond.Message, tt.wantMessage)
			}
			if tt.wantReason != "" {
				delta := testutil.ToFloat64(driftedTotal.WithLabelValues(string(tt.wantReason), "default")) - counted
				if want := map[bool]float64{true: 1, false: 0}[tt.wantCounted]; delta != want {
					t.Errorf("joinery_nodeclaims_drifted_total{type=%s} grew by %v, want %v", tt.wantReason, delta, want)
				}
			}
			if tt.wantHash != "" {
				if got := nc.Annotations[karpv1.NodePoolHashAnnotationKey]; got != tt.wantHash {
					t.Errorf("nodepool-hash = %q, want %q", got, tt.wantHash)
				}
				if got := nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey]; got != tt.wantVersion {
					t.Errorf("nodepool-hash-version = %q, want %q", got, tt.wantVersion)
				}
			}
		})
	}
}

// TestDriftedConditionFields checks what a newly set condition carries, and that a second
// reconcile of a drifted NodeClaim keeps its transition time.
func TestDriftedConditionFields(t *testing.T) {
	np, nc := nodePool(), launchedNodeClaim()
	nc.Generation = 3
	np.Annotations[karpv1.NodePoolHashAnnotationKey] = "2222"
	c := fixtures.NewClient(t, np, nc)
	clk := clocktesting.NewFakeClock(testNow)
	ctl := New(c, &driftingProvider{Provider: fixtures.NewProvider(t, c)}, Options{Clock: clk, Interval: time.Minute})
	req := ctrl.Request{NamespacedName: client.ObjectKey{Name: "nc"}}
	res, err := ctl.Reconcile(t.Context(), req)
	if err != nil || res.RequeueAfter != time.Minute {
		t.Fatalf("Reconcile = %+v, %v; want a requeue after the configured interval", res, err)
	}
	clk.Step(time.Hour)
	if _, err := ctl.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	fixtures.Get(t, c, nc)
	cond := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrifted)
	if cond == nil || !cond.LastTransitionTime.Time.Equal(testNow) || cond.ObservedGeneration != nc.Generation {
		t.Errorf("Drifted = %+v, want set at %s for generation %d", cond, testNow, nc.Generation)
	}
	if launched := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeLaunched); launched == nil || launched.Status != metav1.ConditionTrue {
		t.Errorf("Launched = %+v, want it untouched", launched)
	}
}
