package whatif_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cli/fixtures"
	"github.com/joinery-dev/joinery/cli/snapshot"
	"github.com/joinery-dev/joinery/cli/whatif"
	"github.com/joinery-dev/joinery/internal/featuregates"
)

func read(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.ReadFile(fixtures.Path())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestApply: workloads become their pods (scaled up and down), objects replace those of the
// same name (a NodePool keeps its status), and kinds a simulation cannot use are refused.
func TestApply(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		check   func(t *testing.T, s *snapshot.Snapshot)
		wantErr string
		// legacy reads the snapshot as one written before snapshot.Format 2.
		legacy bool
	}{
		{
			name: "deployment scaled up adds pending pods of one owner",
			yaml: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: api}, spec: {replicas: 3, selector: {matchLabels: {app: api}},
  template: {metadata: {labels: {app: api}}, spec: {schedulerName: joinery, containers: [{name: a, image: a}]}}}}`,
			check: func(t *testing.T, s *snapshot.Snapshot) {
				owners := map[string]int{}
				for _, p := range s.Pods {
					if p.Labels["app"] == "api" {
						if p.Spec.NodeName != "" || p.Status.Phase != "Pending" || p.UID == "" {
							t.Errorf("pod %s is not a pending pod with a UID", p.Name)
						}
						owners[string(p.OwnerReferences[0].UID)]++
					}
				}
				if len(owners) != 1 || owners["whatif-ReplicaSet-default/api"] != 3 {
					t.Errorf("api pods by owner %v, want 3 of one ReplicaSet", owners)
				}
			},
		},
		{
			name: "replicaset scaled down removes pending pods first",
			yaml: `{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: inflate-5d8f}, spec: {replicas: 1, selector: {matchLabels: {app: inflate}},
  template: {metadata: {labels: {app: inflate}}, spec: {containers: [{name: a, image: a}]}}}}`,
			check: func(t *testing.T, s *snapshot.Snapshot) {
				var left []string
				for _, p := range s.Pods {
					if p.Labels["app"] == "inflate" {
						left = append(left, p.Name)
					}
				}
				if strings.Join(left, ",") != "inflate-0" {
					t.Errorf("inflate pods left %v, want [inflate-0]", left)
				}
			},
		},
		{
			name: "a changed nodepool keeps its readiness",
			yaml: `{apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: default}, spec: {template: {spec: {requirements: [], nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}}}, limits: {cpu: "1000"}}}`,
			check: func(t *testing.T, s *snapshot.Snapshot) {
				for _, np := range s.NodePools {
					if np.Name == "default" && (len(np.Status.Conditions) == 0 || np.Spec.Limits.Cpu().String() != "1k") {
						t.Errorf("nodepool default: limits %v, conditions %v", np.Spec.Limits, np.Status.Conditions)
					}
				}
			},
		},
		{name: "unknown kind", yaml: `{apiVersion: v1, kind: Service, metadata: {name: web}}`, wantErr: "kind Service cannot be simulated"},
		{name: "no name", yaml: `{apiVersion: v1, kind: Pod}`, wantErr: "needs apiVersion, kind and metadata.name"},
		{name: "an invalid budget is refused by the CRD's schema, the field named",
			yaml:    `{apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: default}, spec: {template: {spec: {requirements: [], nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}}}, disruption: {budgets: [{nodes: "ten"}]}}}`,
			wantErr: "spec.disruption.budgets[0].nodes"},
		{name: "an overlay the CRD's CEL rules refuse is refused, the rule's message given",
			yaml:    `{apiVersion: karpenter.sh/v1alpha1, kind: NodeOverlay, metadata: {name: cheap}, spec: {requirements: [], price: "0.1", priceAdjustment: "-10%"}}`,
			wantErr: "price and priceAdjustment are mutually exclusive"},
		{name: "a NodeOverlay change is kept, its status left to the simulation",
			yaml: `{apiVersion: karpenter.sh/v1alpha1, kind: NodeOverlay, metadata: {name: cheap}, spec: {requirements: [], priceAdjustment: "-10%"}}`,
			check: func(t *testing.T, s *snapshot.Snapshot) {
				if len(s.NodeOverlays) != 1 || s.NodeOverlays[0].Name != "cheap" {
					t.Errorf("overlays %v, want cheap", s.NodeOverlays)
				}
			}},
		{name: "a NodeOverlay change on a snapshot of an older joinery is refused, saying why",
			legacy:  true,
			yaml:    `{apiVersion: karpenter.sh/v1alpha1, kind: NodeOverlay, metadata: {name: cheap}, spec: {requirements: [], priceAdjustment: "-10%"}}`,
			wantErr: "NodeOverlay changes cannot be simulated: this snapshot was written by an older joinery"},
		{name: "a CapacityBuffer change on a snapshot of an older joinery is refused, saying why",
			legacy:  true,
			yaml:    `{apiVersion: autoscaling.x-k8s.io/v1alpha1, kind: CapacityBuffer, metadata: {name: spare}, spec: {podTemplateRef: {name: spare}, replicas: 2}}`,
			wantErr: "CapacityBuffer changes cannot be simulated: this snapshot was written by an older joinery"},
		{name: "negative replicas are an error, not a panic",
			yaml:    `{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: inflate-5d8f}, spec: {replicas: -1, selector: {matchLabels: {app: inflate}}, template: {metadata: {labels: {app: inflate}}}}}`,
			wantErr: "spec.replicas: Invalid value: -1"},
		{name: "a job's negative parallelism is an error",
			yaml:    `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {parallelism: -2, template: {metadata: {labels: {app: j}}}}}`,
			wantErr: "spec.parallelism: Invalid value: -2"},
		{name: "selector misses the template", yaml: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: x}, spec: {selector: {matchLabels: {app: api}}, template: {metadata: {labels: {app: web}}}}}`,
			wantErr: "selector does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := read(t)
			if tt.legacy {
				s.Format = 0
			}
			objs, err := whatif.DecodeChanges(strings.NewReader(tt.yaml))
			if err == nil {
				err = whatif.Apply(s, objs)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

// TestSimulateLimits: raising the limit that kept two pods pending plans them onto new
// NodeClaims of the same NodePool, which the cost after counts.
func TestSimulateLimits(t *testing.T) {
	ctx := context.Background()
	run := func(yaml string) *whatif.Result {
		_, c := load(t, yaml, "")
		res, err := c.Simulate(ctx, whatif.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	pendingInflate := func(r *whatif.Result) int {
		n := 0
		for _, p := range r.Provisioning.Pending {
			if strings.HasPrefix(p.Pod, "default/inflate-") {
				if !strings.Contains(p.Reason, `nodepool "default": limits reached`) {
					t.Errorf("%s pending for %q, want the limit", p.Pod, p.Reason)
				}
				n++
			}
		}
		return n
	}
	before := run("")
	if got := pendingInflate(before); got != 2 {
		t.Fatalf("%d inflate pods pending before, want 2 (the cpu limit)", got)
	}
	after := run(`{apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: default}, spec: {template: {spec: {nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default},
  requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]}}, limits: {cpu: "100"}, disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s}}}`)
	if got := pendingInflate(after); got != 0 {
		t.Fatalf("%d inflate pods pending after the limit was raised, want 0", got)
	}
	var planned []string
	for _, nc := range after.Provisioning.NewNodeClaims {
		if nc.NodePool != "default" || nc.Launch == nil {
			t.Errorf("new NodeClaim %+v: want nodepool default with a launch offering", nc)
		}
		planned = append(planned, nc.Pods...)
	}
	if got := strings.Join(planned, ","); !strings.Contains(got, "inflate-1") || !strings.Contains(got, "inflate-2") {
		t.Errorf("new NodeClaims hold %s, want inflate-1 and inflate-2", got)
	}
	if !after.Changed() {
		t.Error("Changed() = false with new NodeClaims")
	}
}

// TestExplainNodeAgreesWithThePass: for every consolidation policy, the node the controller's
// pass disrupts is the node `explain node` says is disrupted, by the same method, and none of
// the checks explain prints for it fails; a Balanced NodePool's nodes are consolidated.
func TestExplainNodeAgreesWithThePass(t *testing.T) {
	ctx := context.Background()
	for _, policy := range []karpv1.ConsolidationPolicy{karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, karpv1.ConsolidationPolicyBalanced} {
		t.Run(string(policy), func(t *testing.T) {
			s := read(t)
			for i := range s.NodePools {
				s.NodePools[i].Spec.Disruption.ConsolidationPolicy = policy
			}
			c, err := whatif.Load(s, featuregates.Default())
			if err != nil {
				t.Fatal(err)
			}
			pass, err := c.Disrupt(ctx, whatif.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(pass.Commands) == 0 {
				t.Fatalf("the pass disrupts nothing under %s: %+v", policy, pass)
			}
			// byNode is the verdict of the command that disrupts each node.
			byNode := map[string]string{}
			first := fmt.Sprintf("disrupted by %s (%s)", pass.Commands[0].Method, pass.Commands[0].Decision)
			for _, cmd := range pass.Commands {
				for _, n := range cmd.Nodes {
					byNode[n.Node] = fmt.Sprintf("disrupted by %s (%s)", cmd.Method, cmd.Decision)
				}
			}
			for _, n := range s.Nodes {
				exp, err := c.ExplainNode(ctx, whatif.Options{}, n.Name)
				if err != nil {
					t.Fatal(err)
				}
				want, disrupted := byNode[n.Name]
				switch {
				case disrupted && exp.Verdict != want:
					t.Errorf("node %s: explain says %q, the pass %q", n.Name, exp.Verdict, want)
				case !disrupted && exp.Verdict == first && pass.Commands[0].Method != "multi-node-consolidation":
					t.Errorf("node %s: explain says %q, the pass disrupts %v", n.Name, exp.Verdict, byNode)
				}
				for _, ch := range exp.Checks {
					if disrupted && ch.Check == "consolidationPolicy" && !ch.OK {
						t.Errorf("node %s is consolidated, explain says %s: %s", n.Name, ch.Check, ch.Detail)
					}
				}
			}
		})
	}
}

// TestLoadKeepsATerminatingPod: a pod in its termination grace period (a deletion timestamp,
// no finalizer) is loaded as terminating. Before, the in-memory client panicked on it, so
// `joinery explain` and `joinery simulate` crashed on any live cluster where a pod was being
// deleted (seen in make test: another test's namespace was terminating).
func TestLoadKeepsATerminatingPod(t *testing.T) {
	s := read(t)
	if len(s.Pods) == 0 {
		t.Fatal("the fixture has no pod")
	}
	terminating := s.Pods[0].DeepCopy()
	terminating.Name += "-terminating"
	terminating.UID += "-terminating"
	terminating.DeletionTimestamp = &metav1.Time{Time: s.TakenAt.Time}
	terminating.Finalizers = nil
	s.Pods = append(s.Pods, *terminating)

	c, err := whatif.Load(s, featuregates.Default())
	if err != nil {
		t.Fatal(err)
	}
	got := &corev1.Pod{}
	if err := c.Client.Get(context.Background(), client.ObjectKeyFromObject(terminating), got); err != nil {
		t.Fatalf("the terminating pod is not loaded: %v", err)
	}
	if got.DeletionTimestamp == nil {
		t.Error("the loaded pod is no longer terminating")
	}
	if s.Pods[len(s.Pods)-1].Finalizers != nil {
		t.Error("Load changed the snapshot")
	}
}
