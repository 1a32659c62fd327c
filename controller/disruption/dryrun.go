package disruption

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/solver"
)

// SimulationOptions build the solver-backed Simulator every disruption path decides with.
type SimulationOptions struct {
	// Profile is the scheduler profile whose Filters decide fits (joinery-scheduler's);
	// OutOfTree the plugins registered with the binary besides the in-tree ones.
	Profile   *config.KubeSchedulerProfile
	OutOfTree frameworkruntime.Registry
	// InstanceTypes is the cloud provider.
	InstanceTypes cloudprovider.InstanceTypeLister
	// Client and InformerFactory back the simulation's framework; start the factory (and
	// wait for its caches) before simulating.
	Client          kubernetes.Interface
	InformerFactory informers.SharedInformerFactory
	// Offerings, when not nil, is read before each simulation (UnavailableSource).
	Offerings UnavailableSource
	// Policies are joinery-scheduler's (its profile's Provisioner args,
	// plugin.ProvisionerArgs.Policies); the solver's defaults when zero.
	Policies solver.Policies
}

// NewSimulation returns the SolverSimulator over a solver built from opts. It is the one
// constructor of the disruption simulation: joinery-controller's disruption paths, `joinery
// simulate` and the tests all build it here, so they cannot plan with different options.
func NewSimulation(ctx context.Context, opts SimulationOptions) (*SolverSimulator, error) {
	view := &View{}
	solv, err := solver.New(ctx, solver.Options{
		State:         view,
		InstanceTypes: opts.InstanceTypes,
		Profile:       opts.Profile,
		OutOfTree:     opts.OutOfTree,
		Framework:     simulation.FrameworkOptions{Client: opts.Client, InformerFactory: opts.InformerFactory},
		Unavailable:   view.Unavailable,
	}.WithPolicies(opts.Policies))
	if err != nil {
		return nil, fmt.Errorf("building the disruption simulation: %w", err)
	}
	return simulatorOver(solv, view, opts.Offerings), nil
}

// GracefulMethods are the loop's methods in the order it runs them: drift, emptiness, multi-
// then single-node consolidation, over consolidation's simulator.
func GracefulMethods(consolidation Consolidation) []Method {
	return []Method{
		&Drift{Simulator: consolidation.Simulator, InstanceTypes: consolidation.InstanceTypes},
		&Emptiness{},
		&MultiNodeConsolidation{Consolidation: consolidation},
		&SingleNodeConsolidation{Consolidation: consolidation},
	}
}

// MethodResult is what one method decided in a pass.
type MethodResult struct {
	Method string
	Reason string
	// Eligible counts the candidates the method acts on.
	Eligible int
	// Blocked are the nodes passed over, with the DisruptionBlocked / Unconsolidatable text.
	Blocked []Blocked
	// WaitingForBudget says some candidates' NodePool allows no disruption now only because
	// of nodes being disrupted, which a pass may find gone in a second.
	WaitingForBudget bool
}

// Pass is what one pass of the loop would do, computed without doing it.
type Pass struct {
	// Command is the first method's command; nil when no method found one.
	Command *Command
	// Methods are the methods asked, in order, up to the one that made Command.
	Methods []MethodResult
}

// DryRun runs one pass over cluster at now, as Controller.Step does but without validating,
// executing, publishing events or metrics: the command the loop would start, and why every
// node was passed over.
func DryRun(ctx context.Context, cluster *Cluster, methods []Method, now time.Time) (*Pass, error) {
	pass := &Pass{}
	for _, m := range methods {
		cmd, res, err := computeMethod(ctx, cluster, m, now)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name(), err)
		}
		pass.Methods = append(pass.Methods, res)
		if cmd != nil {
			pass.Command = cmd
			return pass, nil
		}
	}
	return pass, nil
}

// computeMethod asks m for a command over cluster: its candidates, the nodes passed over
// (blocked ones first, then those the method passed over) and the command, if any.
func computeMethod(ctx context.Context, cluster *Cluster, m Method, now time.Time) (*Command, MethodResult, error) {
	res := MethodResult{Method: m.Name(), Reason: m.Reason()}
	cands, blocked := cluster.Candidates(m.Reason())
	var mine []*Candidate
	for _, cand := range cands {
		if !m.ShouldDisrupt(cand) {
			continue
		}
		if why := backingOff(cand.NodeClaim, now); why != "" {
			blocked = append(blocked, Blocked{NodeClaim: cand.NodeClaim, Node: cand.Node, Message: why})
			continue
		}
		mine = append(mine, cand)
	}
	_, unconsolidatable := m.(interface{ unconsolidatable() bool })
	for _, b := range blocked {
		res.Blocked = append(res.Blocked, b)
		// A node consolidation would otherwise consider is also Unconsolidatable, with the
		// pod and reason that hold it.
		if unconsolidatable && consolidatable(b.NodeClaim, cluster.NodePoolOf(b.NodeClaim)) {
			res.Blocked = append(res.Blocked, Blocked{NodeClaim: b.NodeClaim, Node: b.Node, Reason: EventUnconsolidatable,
				Message: strings.TrimPrefix(b.Message, "Cannot disrupt Node: ")})
		}
	}
	res.Eligible = len(mine)
	if len(mine) == 0 {
		return nil, res, nil
	}
	allowed, _ := cluster.Allowed(m.Reason(), now)
	counts := cluster.Counts()
	for _, cand := range mine {
		if np := cand.NodePool.Name; allowed[np] <= 0 && counts[np].Deleting > 0 {
			res.WaitingForBudget = true
			break
		}
	}
	cmd, passed, err := m.ComputeCommand(ctx, cluster, allowed, mine)
	res.Blocked = append(res.Blocked, passed...)
	return cmd, res, err
}
