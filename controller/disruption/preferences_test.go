package disruption

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joinery-dev/joinery/internal/testpods"
)

func preferApart(app string) podOption {
	return func(p *corev1.Pod) {
		a := testpods.Affinity(p)
		a.PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: testpods.AppSelector(app)},
		}}}
	}
}

// TestPreferencesPreventingConsolidationAreLogged: a large node's two pods prefer not to
// share a node, so replacing it would take two new nodes and is refused; without that
// preference one cheaper node would do, so the pods are logged — once per pass. Pods without
// preferences, or whose move fails for another reason, are not.
func TestPreferencesPreventingConsolidationAreLogged(t *testing.T) {
	its := testCatalog(t, 0)
	tests := []struct {
		name   string
		pod    []podOption
		cpu    string
		want   string // the logged pods, "" for no log line
		refuse bool
	}{
		{name: "preferred anti-affinity needs a second node", pod: []podOption{preferApart("web")}, cpu: "500m", want: `"pods"=["default/web-0" "default/web-1"]`, refuse: true},
		{name: "no preferences: replaced by one node", cpu: "500m"},
		{name: "too large for any cheaper node anyway", pod: []podOption{preferApart("web")}, cpu: almostFull(its, "medium"), refuse: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []client.Object{testNodePool("default", onDemandOnly, allBudget)}
			objs = append(objs, pair(testNode("a", "default", typed(its, "large", "on-demand")))...)
			objs = append(objs, pair(testNode("full", "default", typed(its, "large", "on-demand")))...)
			for i := range 2 {
				p := cpuPod(fmt.Sprintf("web-%d", i), "node-a", tt.cpu)
				labelled("app", "web")(p)
				for _, o := range tt.pod {
					o(p)
				}
				objs = append(objs, p)
			}
			objs = append(objs, cpuPod("busy", "node-full", almostFull(its, "large")))
			cluster, _ := loadCluster(t, objs...)
			var lines []string
			ctx := log.IntoContext(context.Background(), funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{}))
			m := &SingleNodeConsolidation{Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its)}}
			cands, _ := cluster.Candidates(m.Reason(), m.Class())
			var a []*Candidate
			for _, c := range cands {
				if c.Name() == "a" {
					a = append(a, c)
				}
			}
			allowed, _ := cluster.Allowed(m.Reason(), epoch)
			for range 2 { // the same pass twice: one log line at most
				cmd, blocked, err := m.ComputeCommand(ctx, cluster, allowed, a)
				if err != nil {
					t.Fatal(err)
				}
				if (cmd == nil) != tt.refuse {
					t.Fatalf("command %v (blocked %+v), want refused: %v", cmd, blocked, tt.refuse)
				}
			}
			var logged []string
			for _, l := range lines {
				if strings.Contains(l, "prevent consolidation") {
					logged = append(logged, l)
				}
			}
			if tt.want == "" {
				if len(logged) != 0 {
					t.Errorf("logged %q, want nothing", logged)
				}
				return
			}
			if len(logged) != 1 || !strings.Contains(logged[0], tt.want) || !strings.Contains(logged[0], `"withoutPreferences"="replace with 1 replacement(s)"`) {
				t.Errorf("logged %q, want one line with %s", logged, tt.want)
			}
		})
	}
}
