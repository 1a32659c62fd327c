package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/joinery-dev/joinery/cli/snapshot"
	"github.com/joinery-dev/joinery/cli/whatif"
	"github.com/joinery-dev/joinery/internal/featuregates"
)

// engineFlags are the scheduler configuration and controller gates the engine runs with, and
// the scheduler plugins registered with the binary.
type engineFlags struct {
	schedulerConfig string
	schedulerName   string
	// gates are Karpenter's feature gates, read as joinery-controller reads them
	// (featuregates.NewValue: FEATURE_GATES, replaced whole by --feature-gates when given).
	gates     *featuregates.Value
	gatesErr  error
	outOfTree frameworkruntime.Registry
}

func (f *engineFlags) bind(cmd *cobra.Command, outOfTree frameworkruntime.Registry) {
	f.outOfTree = outOfTree
	fs := cmd.Flags()
	fs.StringVar(&f.schedulerConfig, "scheduler-config", "", "joinery-scheduler's KubeSchedulerConfiguration (its --config); default: kube-scheduler's default profile")
	fs.StringVar(&f.schedulerName, "scheduler-name", whatif.DefaultSchedulerName, "the scheduler profile (pods' schedulerName) joinery provisions for")
	f.gates, f.gatesErr = featuregates.NewValue(os.Getenv(featuregates.EnvVar))
	if f.gatesErr != nil {
		f.gates = &featuregates.Value{Gates: new(featuregates.Gates)} // reported by options
	}
	fs.Var(f.gates, featuregates.FlagName, "joinery-controller's Karpenter feature gates, "+featuregates.Usage())
}

func (f *engineFlags) options() (whatif.Options, error) {
	if f.gatesErr != nil {
		return whatif.Options{}, f.gatesErr
	}
	return whatif.Options{
		SchedulerConfigPath: f.schedulerConfig,
		SchedulerName:       f.schedulerName,
		OutOfTree:           f.outOfTree,
	}, nil
}

// load serves s with the gates, telling stderr what of s the simulation cannot use.
func (f *engineFlags) load(cmd *cobra.Command, s *snapshot.Snapshot) (*whatif.Cluster, error) {
	c, err := whatif.Load(s, f.gates.Get())
	if err != nil {
		return nil, err
	}
	for _, w := range c.Warnings {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
	}
	return c, nil
}

func newSimulateCommand(outOfTree frameworkruntime.Registry) *cobra.Command {
	var (
		path    string
		changes []string
		format  string
		engine  engineFlags
	)
	cmd := &cobra.Command{
		Use:   "simulate --snapshot FILE [-f CHANGES...]",
		Short: "Apply changes to a snapshot offline and show what joinery would do",
		Long: `simulate applies the objects of the -f files to the snapshot (a NodePool added or changed, a
Deployment scaled, a budget, a NodeOverlay, a CapacityBuffer), then plans the pending pods with
joinery-scheduler's planner (with the buffers' virtual pods under the CapacityBuffer gate) and
runs one pass of joinery-controller's disruption methods, and prints the NodeClaims that would
be created, the pods that stay pending and why, the nodes that would be consolidated, replaced
or drifted with the pods they move, and the cost per hour per NodePool before and after.
No cluster is needed. Exit code 0: no change, 1: the cluster would change, 2: error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return errors.New("--snapshot FILE is required")
			}
			if err := checkFormat(format); err != nil {
				return err
			}
			opts, err := engine.options()
			if err != nil {
				return err
			}
			s, err := snapshot.ReadFile(path)
			if err != nil {
				return err
			}
			objs, err := whatif.ReadChanges(changes...)
			if err != nil {
				return err
			}
			if err := whatif.Apply(s, objs); err != nil {
				return err
			}
			c, err := engine.load(cmd, s)
			if err != nil {
				return err
			}
			res, err := c.Simulate(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if err := write(cmd.OutOrStdout(), format, res, func(p *printer) { simulateTable(p, res) }); err != nil {
				return err
			}
			if res.Changed() {
				return errChanged
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "snapshot", "", "snapshot file written by joinery snapshot")
	cmd.Flags().StringArrayVarP(&changes, "filename", "f", nil, "YAML or JSON file of objects to add or replace (repeatable)")
	outputFlag(cmd, &format)
	engine.bind(cmd, outOfTree)
	return cmd
}

func simulateTable(p *printer, res *whatif.Result) {
	prov, dis := res.Provisioning, res.Disruption
	nodeClaimsTable(p, "NodeClaims to create", prov.NewNodeClaims)
	if len(prov.Placed) > 0 {
		p.section("Pods placed on existing or launching capacity", "ON", "COUNT", "PODS")
		byTarget := map[string][]string{}
		var targets []string
		for _, pl := range prov.Placed {
			if byTarget[pl.Target] == nil {
				targets = append(targets, pl.Target)
			}
			byTarget[pl.Target] = append(byTarget[pl.Target], pl.Pod)
		}
		slices.Sort(targets)
		for _, target := range targets {
			p.row(target, fmt.Sprint(len(byTarget[target])), list(byTarget[target], 5))
		}
	}
	if len(prov.Pending) > 0 {
		p.section("Pods left pending", "POD", "REASON")
		for _, pe := range prov.Pending {
			p.row(pe.Pod, pe.Reason)
		}
	}
	disruptionTable(p, dis)
	p.section("Cost per hour", "NODEPOOL", "BEFORE", "AFTER", "CHANGE")
	for _, c := range res.Cost {
		p.row(c.NodePool, money(c.Before), money(c.After), signed(c.After-c.Before))
	}
}

func nodeClaimsTable(p *printer, title string, ncs []whatif.NodeClaim) {
	if len(ncs) == 0 {
		p.section(title + ": none")
		return
	}
	p.section(title, "NODEPOOL", "INSTANCE TYPES", "ZONES", "CAPACITY TYPES", "LAUNCH", "PRICE", "PODS")
	for _, nc := range ncs {
		launch, price := "-", "-"
		if nc.Launch != nil {
			launch = nc.Launch.InstanceType + "/" + nc.Launch.Zone + "/" + nc.Launch.CapacityType
			price = money(nc.Launch.Price)
		}
		p.row(nc.NodePool, list(nc.InstanceTypes, 5), list(nc.Zones, 0), list(nc.CapacityTypes, 0), launch, price, list(nc.Pods, 5))
	}
}

// disruptionTable prints every command of the pass, titled "Disruption" when it is the only
// one and "Disruption i of n" when the pass chooses several.
func disruptionTable(p *printer, dis *whatif.Disruption) {
	if len(dis.Commands) == 0 {
		p.section("Disruption: none")
	}
	for i, cmd := range dis.Commands {
		title := "Disruption"
		if len(dis.Commands) > 1 {
			title = fmt.Sprintf("Disruption %d of %d", i+1, len(dis.Commands))
		}
		p.section(fmt.Sprintf("%s: %s, %s (%s), saves %s/hour", title, cmd.Method, cmd.Decision, cmd.Reason, money(cmd.Savings)),
			"NODECLAIM", "NODE", "NODEPOOL", "OFFERING", "PRICE", "PODS MOVED")
		for _, n := range cmd.Nodes {
			offering, price := "-", "-"
			if n.Offering != nil {
				offering = n.Offering.InstanceType + "/" + n.Offering.Zone + "/" + n.Offering.CapacityType
				price = money(n.Offering.Price)
			}
			var moves []string
			for _, m := range n.Pods {
				moves = append(moves, m.Pod+"→"+m.To)
			}
			p.row(n.NodeClaim, n.Node, n.NodePool, offering, price, list(moves, 5))
		}
		if len(cmd.Replacements) > 0 {
			nodeClaimsTable(p, "Replacements", cmd.Replacements)
		}
	}
	if len(dis.Blocked) > 0 {
		p.section("Nodes passed over", "NODE", "EVENT", "MESSAGE")
		for _, b := range dis.Blocked {
			p.row(b.Node, b.Event, strings.TrimPrefix(b.Message, "Cannot disrupt Node: "))
		}
	}
}

func signed(v float64) string {
	if v >= 0 {
		return "+" + money(v)
	}
	return "-" + money(-v)
}
