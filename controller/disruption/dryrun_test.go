package disruption

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDryRun: a pass over the loop's methods reports the command the loop would start and,
// for a pass without one, every node passed over with the text its events would carry.
func TestDryRun(t *testing.T) {
	its := testCatalog(t, 0)
	held := append(pair(testNode("held", "default", typed(its, "small", "on-demand"))),
		cpuPod("inflate", "node-held", "500m"), pdb("inflate-pdb", 0, map[string]string{"app": "inflate"}))
	snug := append(pair(testNode("snug", "default", typed(its, "small", "on-demand"))), cpuPod("snug", "node-snug", "1500m"))
	empty := pair(testNode("empty", "default", typed(its, "small", "on-demand")))
	tests := []struct {
		name        string
		objs        [][]client.Object
		wantMethod  string
		wantBlocked []string
	}{
		{name: "nothing to do", objs: [][]client.Object{held, snug},
			wantBlocked: []string{"pdb default/inflate-pdb prevents pod evictions", msgNoCheaper}},
		{name: "an empty node", objs: [][]client.Object{held, empty}, wantMethod: "emptiness"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []client.Object{testNodePool("default", onDemandOnly)}
			for _, o := range tt.objs {
				objs = append(objs, o...)
			}
			cluster, err := LoadCluster(context.Background(), newClient(t, objs...))
			if err != nil {
				t.Fatal(err)
			}
			methods := GracefulMethods(Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its)})
			pass, err := DryRun(context.Background(), cluster, methods, epoch)
			if err != nil {
				t.Fatal(err)
			}
			if got := ""; pass.Command != nil {
				got = pass.Command.Method
				if got != tt.wantMethod {
					t.Errorf("command by %q, want %q", got, tt.wantMethod)
				}
			} else if tt.wantMethod != "" {
				t.Errorf("no command, want one by %s", tt.wantMethod)
			}
			var msgs []string
			for _, m := range pass.Methods {
				for _, b := range m.Blocked {
					msgs = append(msgs, b.Message)
				}
			}
			all := strings.Join(msgs, "\n")
			for _, want := range tt.wantBlocked {
				if !strings.Contains(all, want) {
					t.Errorf("blocked %q lacks %q", all, want)
				}
			}
		})
	}
}
