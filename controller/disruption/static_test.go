package disruption

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

func staticPool(replicas int64) npOption {
	return func(np *karpv1.NodePool) { np.Spec.Replicas = &replicas }
}

func limitNodes(n string) npOption {
	return func(np *karpv1.NodePool) { np.Spec.Limits = corev1.ResourceList{resourceNodes: resource.MustParse(n)} }
}

// TestStaticNodePoolCandidates checks that a static NodePool's nodes are candidates for drift
// only: consolidation never removes them.
func TestStaticNodePoolCandidates(t *testing.T) {
	objs := objects(testNodePool("fixed", staticPool(1)), testNodePool("default"))
	objs = append(objs, pair(testNode("s", "fixed", drifted))...)
	objs = append(objs, pair(testNode("d", "default", drifted))...)
	cluster, _ := loadCluster(t, objs...)
	for _, tt := range []struct{ reason, want string }{
		{karpv1.DisruptionReasonEmpty, "d"},
		{karpv1.DisruptionReasonUnderutilized, "d"},
		{karpv1.DisruptionReasonDrifted, "d,s"},
	} {
		cands, blocked := cluster.Candidates(tt.reason, classOf(tt.reason))
		if got := strings.Join(names(cands), ","); got != tt.want {
			t.Errorf("%s candidates = %s, want %s", tt.reason, got, tt.want)
		}
		if len(blocked) != 0 {
			t.Errorf("%s blocked = %+v, want none", tt.reason, blocked)
		}
	}
}

// TestDriftStaticNodePool checks that a drifted node of a static NodePool is replaced by a
// NodeClaim from its template, whatever the simulation says (the provisioner never opens one
// of its NodeClaims), within limits.nodes and the budget.
func TestDriftStaticNodePool(t *testing.T) {
	its := testCatalog(t, 0)
	tests := []struct {
		name    string
		pool    []npOption
		want    string
		blocked string
	}{
		{name: "replaced from the template", pool: []npOption{staticPool(2)}, want: "a"},
		{name: "limits.nodes leaves room", pool: []npOption{staticPool(2), limitNodes("3")}, want: "a"},
		{name: "limits.nodes leaves no room", pool: []npOption{staticPool(2), limitNodes("2")},
			blocked: "Cannot disrupt Node: limits.nodes (2) of static nodepool fixed leaves no room for a replacement"},
		{name: "budget exhausted", pool: []npOption{staticPool(2), budgets(karpv1.Budget{Nodes: "0"})},
			blocked: "Cannot disrupt Node: no allowed disruptions for reason Drifted in nodepool fixed (disruption budget)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ncA, nodeA := testNode("a", "fixed", drifted)
			ncB, nodeB := testNode("b", "fixed")
			cluster, _ := loadCluster(t, testNodePool("fixed", tt.pool...), ncA, nodeA, ncB, nodeB, testPod("web-a", "node-a"))
			// The simulation would refuse: the pod fits nowhere but the static NodePool.
			sim := &fakeSimulator{unschedulable: map[string]string{"web-a": "no NodePool fits"}}
			m := &Drift{Simulator: sim, InstanceTypes: benchTypes(its)}
			cands, _ := cluster.Candidates(m.Reason(), m.Class())
			var mine []*Candidate
			for _, c := range cands {
				if m.ShouldDisrupt(c) {
					mine = append(mine, c)
				}
			}
			allowed, _ := cluster.Allowed(m.Reason(), epoch)
			cmd, blocked, err := m.ComputeCommand(context.Background(), cluster, allowed, mine)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if cmd != nil {
				got = strings.Join(cmd.CandidateNames(), ",")
				if len(cmd.Replacements) != 1 {
					t.Fatalf("%d replacements, want 1", len(cmd.Replacements))
				}
				repl := cmd.Replacements[0]
				if repl.Labels[karpv1.NodePoolLabelKey] != "fixed" || repl.GenerateName != "fixed-" {
					t.Errorf("replacement %+v, want one of nodepool fixed", repl.ObjectMeta)
				}
				if dest := cmd.Destinations[cands[0].Pods[0].UID]; dest != "replacement-0" {
					t.Errorf("web-a goes to %q, want replacement-0", dest)
				}
				again, err := m.Revalidate(context.Background(), cluster, cmd, cmd.Candidates)
				if err != nil || len(again.Replacements) != 1 {
					t.Errorf("Revalidate = %v, %v; want the command again", again, err)
				}
			}
			if got != tt.want {
				t.Errorf("command = %q, want %q", got, tt.want)
			}
			if tt.blocked != "" && (len(blocked) == 0 || blocked[0].Message != tt.blocked) {
				t.Errorf("blocked = %+v, want first %q", blocked, tt.blocked)
			}
		})
	}
}
