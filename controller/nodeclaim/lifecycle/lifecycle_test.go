package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/nodeclaim/internal/fixtures"
	"github.com/joinery-dev/joinery/controller/state"
)

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

type harness struct {
	client      client.Client
	provider    *fixtures.Provider
	clock       *clocktesting.FakePassiveClock
	events      *events.FakeRecorder
	unavailable *state.UnavailableOfferings
	controller  *Controller
}

func newHarness(t *testing.T, objs ...client.Object) *harness {
	t.Helper()
	c := fixtures.NewClient(t, objs...)
	h := &harness{
		client:   c,
		provider: fixtures.NewProvider(t, c),
		clock:    clocktesting.NewFakePassiveClock(epoch),
		events:   events.NewFakeRecorder(100),
	}
	h.unavailable = state.NewUnavailableOfferings(c, c, "kube-system", h.clock)
	h.controller = New(c, h.provider, h.unavailable, h.events, Options{RegistrationTTL: 15 * time.Minute, InitializationTTL: 15 * time.Minute, Clock: h.clock})
	return h
}

func (h *harness) reconcile(t *testing.T, name string) (ctrl.Result, error) {
	t.Helper()
	return h.controller.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: name}})
}

func (h *harness) mustReconcile(t *testing.T, name string) ctrl.Result {
	t.Helper()
	result, err := h.reconcile(t, name)
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return result
}

func condition(t *testing.T, nc *karpv1.NodeClaim, condType string) metav1.Condition {
	t.Helper()
	cond := meta.FindStatusCondition(nc.Status.Conditions, condType)
	if cond == nil {
		t.Fatalf("no %s condition in %v", condType, nc.Status.Conditions)
	}
	return *cond
}

func wantCondition(t *testing.T, nc *karpv1.NodeClaim, condType string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	cond := condition(t, nc, condType)
	if cond.Status != status || cond.Reason != reason {
		t.Errorf("%s = %s (%s: %s), want %s (%s)", condType, cond.Status, cond.Reason, cond.Message, status, reason)
	}
	if cond.ObservedGeneration != nc.Generation {
		t.Errorf("%s observedGeneration = %d, want %d", condType, cond.ObservedGeneration, nc.Generation)
	}
}

func wantEvents(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("events = %q, want %d events like %q", got, len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("event %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
}

func TestLaunchRegisterInitialize(t *testing.T) {
	ctx := context.Background()
	nc := fixtures.NodeClaim("default-abc")
	nc.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	nc.Spec.StartupTaints = []corev1.Taint{{Key: "example.com/agent", Effect: corev1.TaintEffectNoSchedule}}
	nc.Annotations = map[string]string{"example.com/team": "db"}
	h := newHarness(t, nc)

	// Launch, and registration of the Node kwok created at once.
	h.mustReconcile(t, nc.Name)
	fixtures.Get(t, h.client, nc)
	if !slices.Contains(nc.Finalizers, karpv1.TerminationFinalizer) {
		t.Errorf("finalizers = %v", nc.Finalizers)
	}
	if nc.Status.ProviderID != "kwok://default-abc" || nc.Status.ImageID != "kwok-linux-amd64" || nc.Status.NodeName != "default-abc" {
		t.Errorf("status provider ID %q, image %q, node %q", nc.Status.ProviderID, nc.Status.ImageID, nc.Status.NodeName)
	}
	if nc.Status.Allocatable.Cpu().IsZero() || nc.Status.Capacity.Memory().IsZero() {
		t.Errorf("status resources: allocatable %v capacity %v", nc.Status.Allocatable, nc.Status.Capacity)
	}
	for key, want := range map[string]string{
		corev1.LabelInstanceTypeStable: "small", corev1.LabelTopologyZone: "a",
		karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand, karpv1.NodePoolLabelKey: "default",
	} {
		if nc.Labels[key] != want {
			t.Errorf("nodeclaim label %s = %q, want %q", key, nc.Labels[key], want)
		}
	}
	wantCondition(t, nc, karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched")
	wantCondition(t, nc, karpv1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered")
	wantCondition(t, nc, karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, reasonNodeNotReady)
	wantCondition(t, nc, karpv1.ConditionTypeReady, metav1.ConditionUnknown, reasonNodeNotReady)
	wantEvents(t, fixtures.Drain(h.events.Events),
		"Normal Launched Status condition transitioned, Type: Launched, Status: Unknown -> True, Reason: Launched",
		"Normal Registered Status condition transitioned, Type: Registered, Status: Unknown -> True, Reason: Registered")

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Status.NodeName}}
	fixtures.Get(t, h.client, node)
	if node.Labels[karpv1.NodeRegisteredLabelKey] != "true" || node.Labels[corev1.LabelInstanceTypeStable] != "small" || node.Annotations["example.com/team"] != "db" {
		t.Errorf("node labels %v annotations %v", node.Labels, node.Annotations)
	}
	if !slices.Contains(node.Finalizers, karpv1.TerminationFinalizer) {
		t.Errorf("node finalizers = %v", node.Finalizers)
	}
	if len(node.OwnerReferences) != 1 || node.OwnerReferences[0].Kind != "NodeClaim" || node.OwnerReferences[0].UID != nc.UID {
		t.Errorf("node owner references = %v", node.OwnerReferences)
	}
	var taintKeys []string
	for _, taint := range node.Spec.Taints {
		taintKeys = append(taintKeys, taint.Key)
	}
	if slices.Contains(taintKeys, karpv1.UnregisteredTaintKey) || !slices.Contains(taintKeys, "dedicated") || !slices.Contains(taintKeys, "example.com/agent") {
		t.Errorf("node taints = %v, want dedicated and the startup taint, without the unregistered taint", taintKeys)
	}

	// Ready but the startup taint is still there.
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := h.client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	h.mustReconcile(t, nc.Name)
	fixtures.Get(t, h.client, nc)
	wantCondition(t, nc, karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, reasonStartupTaints)

	// The agent removes its startup taint: initialized and ready.
	fixtures.Get(t, h.client, node)
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(taint corev1.Taint) bool { return taint.Key == "example.com/agent" })
	if err := h.client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	h.mustReconcile(t, nc.Name)
	fixtures.Get(t, h.client, nc)
	wantCondition(t, nc, karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized")
	wantCondition(t, nc, karpv1.ConditionTypeReady, metav1.ConditionTrue, "Ready")
	fixtures.Get(t, h.client, node)
	if node.Labels[karpv1.NodeInitializedLabelKey] != "true" {
		t.Errorf("node labels = %v, want initialized", node.Labels)
	}
	wantEvents(t, fixtures.Drain(h.events.Events),
		"Normal Initialized Status condition transitioned, Type: Initialized, Status: Unknown -> True, Reason: Initialized",
		"Normal Ready Status condition transitioned, Type: Ready, Status: Unknown -> True, Reason: Ready")

	// Once more: nothing changes, the startup taint is not put back, no events.
	before := nc.ResourceVersion
	h.mustReconcile(t, nc.Name)
	fixtures.Get(t, h.client, nc)
	fixtures.Get(t, h.client, node)
	if nc.ResourceVersion != before {
		t.Error("a reconcile of a ready NodeClaim wrote it")
	}
	if hasTaint(node, corev1.Taint{Key: "example.com/agent", Effect: corev1.TaintEffectNoSchedule}) {
		t.Error("the startup taint came back")
	}
	wantEvents(t, fixtures.Drain(h.events.Events))
}

func TestLaunchIsIdempotentAfterLostStatusWrite(t *testing.T) {
	// A previous attempt created the Node, but its status write was lost (crash): Create is
	// repeated and adopts it, and nothing is launched twice.
	nc := fixtures.NodeClaim("default-lost")
	nc.Finalizers = []string{karpv1.TerminationFinalizer}
	h := newHarness(t, nc)
	if _, err := h.provider.CloudProvider.Create(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	h.mustReconcile(t, nc.Name)
	fixtures.Get(t, h.client, nc)
	wantCondition(t, nc, karpv1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered")
	var nodes corev1.NodeList
	if err := h.client.List(context.Background(), &nodes); err != nil || len(nodes.Items) != 1 {
		t.Errorf("nodes = %d (%v), want 1", len(nodes.Items), err)
	}
}

func TestLaunchFailure(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantReason string
	}{
		{"create error", cloudprovider.NewCreateError(fixtures.ErrBoom, "SubnetExhausted", "no free addresses"), "SubnetExhausted"},
		{"node class not ready", cloudprovider.NewNodeClassNotReadyError(fixtures.ErrBoom), reasonNodeClassNotReady},
		{"other", fixtures.ErrBoom, reasonLaunchFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := fixtures.NodeClaim("default-fail")
			h := newHarness(t, nc)
			h.provider.CreateErr = tt.err
			if _, err := h.reconcile(t, nc.Name); err == nil {
				t.Fatal("Reconcile succeeded; want the launch error so the request is retried with backoff")
			}
			fixtures.Get(t, h.client, nc)
			wantCondition(t, nc, karpv1.ConditionTypeLaunched, metav1.ConditionFalse, tt.wantReason)
			wantCondition(t, nc, karpv1.ConditionTypeReady, metav1.ConditionFalse, tt.wantReason)
			if nc.DeletionTimestamp != nil || !slices.Contains(nc.Finalizers, karpv1.TerminationFinalizer) {
				t.Errorf("nodeclaim deleting %v, finalizers %v", nc.DeletionTimestamp, nc.Finalizers)
			}
			wantEvents(t, fixtures.Drain(h.events.Events),
				"Warning "+tt.wantReason+" Failed to launch",
				"Warning Launched Status condition transitioned, Type: Launched, Status: Unknown -> False, Reason: "+tt.wantReason,
				"Warning Ready Status condition transitioned, Type: Ready, Status: Unknown -> False")

			// The cause goes away: the retry launches.
			h.provider.CreateErr = nil
			h.mustReconcile(t, nc.Name)
			fixtures.Get(t, h.client, nc)
			wantCondition(t, nc, karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched")
		})
	}
}

func TestInsufficientCapacity(t *testing.T) {
	refused := cloudprovider.OfferingKey{CapacityType: "on-demand", InstanceType: "big", Zone: "a"}
	tests := []struct {
		name string
		err  error
		// want are the offerings marked unavailable.
		want []cloudprovider.OfferingKey
	}{{
		name: "the provider does not say which offerings it tried: every compatible one",
		err:  cloudprovider.NewInsufficientCapacityError(fixtures.ErrBoom),
		// On-demand offerings of small and big, except the one the catalog says is unavailable.
		want: []cloudprovider.OfferingKey{
			{CapacityType: "on-demand", InstanceType: "small", Zone: "a"},
			{CapacityType: "on-demand", InstanceType: "small", Zone: "b"},
			{CapacityType: "on-demand", InstanceType: "big", Zone: "a"},
		},
	}, {
		name: "the provider names the refused offerings: exactly those",
		err:  fmt.Errorf("launching: %w", cloudprovider.NewInsufficientCapacityError(fixtures.ErrBoom, refused)),
		want: []cloudprovider.OfferingKey{refused},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			nc := fixtures.NodeClaim("default-ice")
			h := newHarness(t, nc)
			h.provider.CreateErr = tt.err
			h.mustReconcile(t, nc.Name)

			// The finalizer keeps the deleted NodeClaim until the termination controller releases it.
			fixtures.Get(t, h.client, nc)
			if nc.DeletionTimestamp == nil {
				t.Error("nodeclaim not deleted after insufficient capacity")
			}
			got, err := h.unavailable.Unavailable(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Errorf("unavailable offerings = %v, want %v", got, tt.want)
			}
			for _, key := range tt.want {
				if until, ok := got[key]; !ok || !until.Equal(epoch.Add(3*time.Minute)) {
					t.Errorf("offering %s unavailable until %v (%v), want %v", key, until, ok, epoch.Add(3*time.Minute))
				}
			}
			wantEvents(t, fixtures.Drain(h.events.Events), fmt.Sprintf("Warning InsufficientCapacityError NodeClaim default-ice event: %s; marked %d offerings unavailable for 3m0s", tt.err.Error(), len(tt.want)))
		})
	}
}

func TestRegistrationTimeout(t *testing.T) {
	launchedAt := metav1.NewTime(epoch)
	nc := fixtures.NodeClaim("default-late")
	nc.Finalizers = []string{karpv1.TerminationFinalizer}
	nc.Status.ProviderID = "kwok://never-registers"
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: launchedAt}}
	h := newHarness(t, nc)

	h.clock.SetTime(epoch.Add(10 * time.Minute))
	result := h.mustReconcile(t, nc.Name)
	if result.RequeueAfter != 5*time.Minute {
		t.Errorf("requeue after %s, want the 5m left of the TTL", result.RequeueAfter)
	}
	fixtures.Get(t, h.client, nc)
	wantCondition(t, nc, karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, reasonNodeNotFound)
	if nc.DeletionTimestamp != nil {
		t.Fatal("nodeclaim deleted before the registration TTL")
	}

	h.clock.SetTime(epoch.Add(15 * time.Minute))
	h.mustReconcile(t, nc.Name)
	fixtures.Get(t, h.client, nc)
	if nc.DeletionTimestamp == nil {
		t.Error("nodeclaim not deleted after the registration TTL")
	}
	wantEvents(t, fixtures.Drain(h.events.Events), "Warning RegistrationTimeout Node with provider ID kwok://never-registers did not register within 15m0s")
}

func TestDeletingNodeClaimIsLeftToTermination(t *testing.T) {
	nc := fixtures.NodeClaim("default-gone")
	nc.Finalizers = []string{karpv1.TerminationFinalizer}
	h := newHarness(t, nc)
	if err := h.client.Delete(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	h.mustReconcile(t, nc.Name)
	fixtures.Get(t, h.client, nc)
	if nc.Status.ProviderID != "" || len(nc.Status.Conditions) != 0 {
		t.Errorf("a deleting nodeclaim was launched: %+v", nc.Status)
	}
	if _, err := h.reconcile(t, "absent"); err != nil {
		t.Errorf("Reconcile of a missing nodeclaim: %v", err)
	}
	if err := h.client.Get(context.Background(), client.ObjectKey{Name: "absent"}, &karpv1.NodeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("missing nodeclaim: %v", err)
	}
}

// TestLifecycleTimeouts (issue 17, defect 2): a NodeClaim is deleted, with an event and a
// count, when it has not registered within the liveness TTL of its creation — whether it never
// launched or launched late — or has registered but not initialized within the initialization
// TTL. Before the deadline it is kept and looked at again when the deadline comes.
func TestLifecycleTimeouts(t *testing.T) {
	created := metav1.NewTime(epoch)
	tests := []struct {
		name string
		// setup shapes the NodeClaim and the provider before the first reconcile at epoch.
		setup func(h *harness, nc *karpv1.NodeClaim)
		// at is when it is looked at again; before are times it must survive.
		before, at time.Duration
		wantEvent  string
		wantPhase  string
	}{{
		name:      "never launches",
		setup:     func(h *harness, _ *karpv1.NodeClaim) { h.provider.CreateErr = fixtures.ErrBoom },
		before:    14 * time.Minute,
		at:        15 * time.Minute,
		wantEvent: "Warning RegistrationTimeout Node with provider ID  did not register within 15m0s of the NodeClaim's creation (launch failed",
		wantPhase: phaseRegistration,
	}, {
		name: "launched late, never registers",
		setup: func(_ *harness, nc *karpv1.NodeClaim) {
			nc.Finalizers = []string{karpv1.TerminationFinalizer}
			nc.Status.ProviderID = "kwok://never-registers"
			nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: metav1.NewTime(epoch.Add(10 * time.Minute))}}
		},
		before:    14 * time.Minute,
		at:        15 * time.Minute, // counted from creation, not from the launch 10 minutes in
		wantEvent: "Warning RegistrationTimeout Node with provider ID kwok://never-registers did not register within 15m0s of the NodeClaim's creation",
		wantPhase: phaseRegistration,
	}, {
		name:      "registers, never initializes",
		setup:     func(*harness, *karpv1.NodeClaim) {}, // kwok's node registers at once, NotReady
		before:    14 * time.Minute,
		at:        15 * time.Minute,
		wantEvent: "Warning InitializationTimeout Node default-timeout did not initialize within 15m0s of registering (Node status is NotReady)",
		wantPhase: phaseInitialization,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := fixtures.NodeClaim("default-timeout")
			nc.CreationTimestamp = created
			h := newHarness(t)
			tt.setup(h, nc)
			if err := h.client.Create(context.Background(), nc); err != nil {
				t.Fatal(err)
			}
			before, err := testutil.GetCounterMetricValue(timedOutTotal.WithLabelValues(tt.wantPhase, "default"))
			if err != nil {
				t.Fatal(err)
			}
			for _, at := range []time.Duration{0, tt.before} {
				h.clock.SetTime(epoch.Add(at))
				result, _ := h.reconcile(t, nc.Name)
				fixtures.Get(t, h.client, nc)
				if nc.DeletionTimestamp != nil {
					t.Fatalf("deleted %s after creation, before its deadline", at)
				}
				if result.RequeueAfter > tt.at-at {
					t.Errorf("at %s: requeue after %s, past the deadline %s", at, result.RequeueAfter, tt.at)
				}
			}
			fixtures.Drain(h.events.Events)

			h.clock.SetTime(epoch.Add(tt.at))
			_, _ = h.reconcile(t, nc.Name)
			fixtures.Get(t, h.client, nc)
			if nc.DeletionTimestamp == nil {
				t.Fatalf("not deleted at its deadline %s", tt.at)
			}
			events := fixtures.Drain(h.events.Events)
			if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, tt.wantEvent) }) {
				t.Errorf("events %q, want one starting %q", events, tt.wantEvent)
			}
			after, err := testutil.GetCounterMetricValue(timedOutTotal.WithLabelValues(tt.wantPhase, "default"))
			if err != nil {
				t.Fatal(err)
			}
			if after != before+1 {
				t.Errorf("joinery_nodeclaims_lifecycle_timeouts_total{phase=%q} went from %v to %v, want +1", tt.wantPhase, before, after)
			}
		})
	}
}

// TestInitializationTTLOffByDefault (issue 22, item 6): without --initialization-ttl a node that
// registers but never initializes (a GPU device plugin or CNI still starting, a startup taint)
// is kept, as Karpenter keeps it; nothing is deleted and no timer is set.
func TestInitializationTTLOffByDefault(t *testing.T) {
	h := newHarness(t)
	h.controller = New(h.client, h.provider, h.unavailable, h.events, Options{Clock: h.clock})
	nc := fixtures.NodeClaim("slow")
	nc.CreationTimestamp = metav1.NewTime(epoch)
	if err := h.client.Create(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{0, time.Minute, 24 * time.Hour} {
		h.clock.SetTime(epoch.Add(at))
		result, _ := h.reconcile(t, nc.Name)
		fixtures.Get(t, h.client, nc)
		if nc.DeletionTimestamp != nil {
			t.Fatalf("deleted %s after creation; the initialization TTL is off by default", at)
		}
		if at > time.Minute && result.RequeueAfter != 0 {
			t.Errorf("at %s: requeue after %s, want no timer", at, result.RequeueAfter)
		}
	}
	if events := fixtures.Drain(h.events.Events); slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, "InitializationTimeout") }) {
		t.Errorf("events %q, want no InitializationTimeout", events)
	}
}
