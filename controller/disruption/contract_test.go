package disruption

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// TestMethodContracts pins what every method of the loop declares: its reason (the budget it
// counts under), its class, its consolidation type and the delay its commands wait.
func TestMethodContracts(t *testing.T) {
	want := []struct {
		name, reason, consolidationType string
		class                           Class
		validation                      Validation
	}{
		{"drift", karpv1.DisruptionReasonDrifted, "", ClassEventual, ValidateAfterDelay},
		{"emptiness", karpv1.DisruptionReasonEmpty, ConsolidationTypeEmpty, ClassGraceful, ValidateAfterConsolidationDelay},
		{"multi-node-consolidation", karpv1.DisruptionReasonUnderutilized, ConsolidationTypeMulti, ClassGraceful, ValidateAfterConsolidationDelay},
		{"single-node-consolidation", karpv1.DisruptionReasonUnderutilized, ConsolidationTypeSingle, ClassGraceful, ValidateAfterConsolidationDelay},
	}
	methods := GracefulMethods(Consolidation{})
	if len(methods) != len(want) {
		t.Fatalf("%d methods, want %d", len(methods), len(want))
	}
	for i, m := range methods {
		w := want[i]
		got := fmt.Sprint(m.Name(), m.Reason(), m.ConsolidationType(), m.Class(), m.Validation())
		if exp := fmt.Sprint(w.name, w.reason, w.consolidationType, w.class, w.validation); got != exp {
			t.Errorf("method %d declares %q, want %q", i, got, exp)
		}
		if got, exp := consolidationTypeOfCommandID(m.Name()+"-abcdefgh"), m.ConsolidationType(); got != exp {
			t.Errorf("%s: a command ID's consolidation type %q, want %q", m.Name(), got, exp)
		}
	}
}

// contractOnly is a method seen only through the Method interface: a loop that looked for
// anything else (a type assertion on the concrete method) would find nothing here.
type contractOnly struct{ m Method }

func (c contractOnly) Name() string              { return c.m.Name() }
func (c contractOnly) Reason() string            { return c.m.Reason() }
func (c contractOnly) Class() Class              { return c.m.Class() }
func (c contractOnly) ConsolidationType() string { return c.m.ConsolidationType() }
func (c contractOnly) Validation() Validation    { return c.m.Validation() }
func (c contractOnly) ShouldDisrupt(cand *Candidate) bool {
	return c.m.ShouldDisrupt(cand)
}
func (c contractOnly) ComputeCommand(ctx context.Context, cl *Cluster, allowed map[string]int, cands []*Candidate) (*Command, []Blocked, error) {
	return c.m.ComputeCommand(ctx, cl, allowed, cands)
}
func (c contractOnly) Revalidate(ctx context.Context, cl *Cluster, old *Command, fresh []*Candidate) (*Command, error) {
	return c.m.Revalidate(ctx, cl, old, fresh)
}

// TestLoopUsesOnlyTheContract: the loop's pass, its dry run and `joinery explain node` decide
// the same with the methods hidden behind the interface as with the methods themselves:
// drift's eventual class lets a NodeClaim with a terminationGracePeriod go despite a blocking
// PDB, consolidation's blocked nodes get Unconsolidatable events, each command waits its
// method's delay and is revalidated by its method.
func TestLoopUsesOnlyTheContract(t *testing.T) {
	its := testCatalog(t, 0)
	tests := []struct {
		name       string
		objs       []client.Object
		wantMethod string
		delay      time.Duration
	}{
		{name: "drift with a terminationGracePeriod past a blocking PDB", wantMethod: "drift", delay: 5 * time.Second,
			objs: objects(pair(testNode("a", "default", typed(its, "small", "on-demand"), drifted, withTGP)), pair(testNode("b", "default", typed(its, "medium", "on-demand"))),
				cpuPod("web", "node-a", "500m"), pdb("web-pdb", 0, map[string]string{"app": "web"}))},
		{name: "an empty node", wantMethod: "emptiness", delay: 15 * time.Second,
			objs: objects(pair(testNode("a", "default", typed(its, "small", "on-demand"))))},
		{name: "an underused node, another held by a PDB", wantMethod: "single-node-consolidation", delay: 15 * time.Second,
			objs: objects(pair(testNode("a", "default", typed(its, "large", "on-demand"))), cpuPod("p", "node-a", "500m"),
				pair(testNode("held", "default", typed(its, "small", "on-demand"))), cpuPod("inflate", "node-held", "500m"),
				pdb("inflate-pdb", 0, map[string]string{"app": "inflate"}))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := append([]client.Object{testNodePool("default", onDemandOnly)}, tt.objs...)
			sim := newSolverSimulator(t, its)
			raw := GracefulMethods(Consolidation{Simulator: sim, InstanceTypes: benchTypes(its)})
			var hidden []Method
			for _, m := range raw {
				hidden = append(hidden, contractOnly{m})
			}
			decide := func(methods []Method) (string, []string, string) {
				cluster, err := LoadCluster(context.Background(), newClient(t, objs...))
				if err != nil {
					t.Fatal(err)
				}
				pass, err := DryRun(context.Background(), cluster, methods, epoch)
				if err != nil {
					t.Fatal(err)
				}
				cmd := ""
				if pass.Command != nil {
					cmd = pass.Command.String()
				}
				var blocked []string
				for _, r := range pass.Methods {
					for _, b := range r.Blocked {
						blocked = append(blocked, r.Method+" "+b.Reason+" "+b.NodeClaim.Name+": "+b.Message)
					}
				}
				slices.Sort(blocked)
				ex, err := Explain(context.Background(), cluster, methods, "node-a", epoch)
				if err != nil {
					t.Fatal(err)
				}
				return cmd, blocked, fmt.Sprint(ex.Method, ex.Checks)
			}
			cmd, blocked, explained := decide(raw)
			hCmd, hBlocked, hExplained := decide(hidden)
			if hCmd != cmd || !slices.Equal(hBlocked, blocked) || hExplained != explained {
				t.Errorf("behind the interface: %q, %q, %s\nthe methods: %q, %q, %s", hCmd, hBlocked, hExplained, cmd, blocked, explained)
			}
			if tt.wantMethod == "single-node-consolidation" && !slices.Contains(hBlocked, "single-node-consolidation "+EventUnconsolidatable+" held: pdb default/inflate-pdb prevents pod evictions") {
				t.Errorf("blocked %q, want the PDB-held node Unconsolidatable", hBlocked)
			}

			// The pass waits the delay the contract names, then the method revalidates and the
			// command runs.
			c := newClient(t, objs...)
			clk := clocktesting.NewFakeClock(epoch)
			ctrl := New(c, c, events.NewFakeRecorder(100), clk, hidden, Options{ValidationDelay: 5 * time.Second, ConsolidationValidationDelay: 15 * time.Second})
			if !stepAcrossDelay(t, ctrl, clk, tt.delay) {
				t.Errorf("the %s command did not run", tt.wantMethod)
			}
			if !strings.HasPrefix(cmd, tt.wantMethod+"/") {
				t.Errorf("command %q, want one by %s", cmd, tt.wantMethod)
			}
		})
	}
}
