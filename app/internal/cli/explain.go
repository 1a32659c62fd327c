package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/joinery-dev/joinery/cli/whatif"
)

func newExplainCommand(cluster *clusterFlags, outOfTree frameworkruntime.Registry) *cobra.Command {
	var (
		path   string
		format string
		engine engineFlags
	)
	cmd := &cobra.Command{
		Use:   "explain (pod NAMESPACE/NAME | node NAME) [--snapshot FILE]",
		Short: "Why a pod is pending and what joinery plans for it, or why a node is or is not disrupted",
		Long: `explain pod: every NodePool and why it can or cannot serve the pod (taints, requirements,
limits, requests, the kube-scheduler Filter that rejected it), the instance types left after
each step, and the NodeClaim it is or would be planned onto.
explain node: why the node is or is not a disruption candidate (do-not-disrupt, PDBs, budgets,
consolidateAfter, drift) and what the disruption methods' simulation of it alone decides.
Reads the live cluster, or a snapshot with --snapshot.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			opts, err := engine.options()
			if err != nil {
				return err
			}
			kind, name := args[0], args[1]
			var ns string
			switch kind {
			case "pod", "pods", "po":
				var ok bool
				if ns, name, ok = strings.Cut(name, "/"); !ok || ns == "" || name == "" {
					return fmt.Errorf("explain pod takes NAMESPACE/NAME, got %q", args[1])
				}
			case "node", "nodes", "no":
			default:
				return fmt.Errorf("explain takes pod NAMESPACE/NAME or node NAME, got %q", kind)
			}
			s, err := cluster.load(cmd.Context(), path)
			if err != nil {
				return err
			}
			c, err := engine.load(cmd, s)
			if err != nil {
				return err
			}
			if ns != "" {
				ex, err := c.ExplainPod(cmd.Context(), opts, ns, name)
				if err != nil {
					return err
				}
				return write(cmd.OutOrStdout(), format, ex, func(p *printer) { podTable(p, ex) })
			}
			ex, err := c.ExplainNode(cmd.Context(), opts, name)
			if err != nil {
				return err
			}
			return write(cmd.OutOrStdout(), format, ex, func(p *printer) { nodeTable(p, ex) })
		},
	}
	cmd.Flags().StringVar(&path, "snapshot", "", "read a snapshot file instead of the live cluster")
	outputFlag(cmd, &format)
	engine.bind(cmd, outOfTree)
	return cmd
}

func podTable(p *printer, ex *whatif.PodExplanation) {
	p.section("Pod " + ex.Pod)
	p.line("State:     %s", ex.State)
	if ex.Node != "" {
		p.line("Node:      %s", ex.Node)
	}
	if ex.PlannedOnto != "" {
		p.line("Planned:   onto launching NodeClaim %s", ex.PlannedOnto)
	}
	if ex.Decision != "" {
		p.line("Decision:  %s", ex.Decision)
	}
	if ex.NewClaim != nil {
		nodeClaimsTable(p, "NodeClaim it would be planned onto", []whatif.NodeClaim{*ex.NewClaim})
	}
	if len(ex.NodePools) > 0 {
		p.section("NodePools", "NODEPOOL", "INSTANCE TYPES", "COMPATIBLE", "HOLD REQUESTS", "VERDICT")
		for _, v := range ex.NodePools {
			p.row(v.NodePool, fmt.Sprint(v.InstanceTypes), fmt.Sprint(v.Compatible), fmt.Sprint(v.HoldsPodsRequests), v.Verdict)
		}
	}
}

func nodeTable(p *printer, ex *whatif.NodeExplanation) {
	p.section("Node " + ex.Node)
	if ex.NodeClaim != "" {
		p.line("NodeClaim: %s (nodepool %s)", ex.NodeClaim, dash(ex.NodePool))
	}
	if ex.Offering != nil {
		p.line("Offering:  %s/%s/%s at %s/hour", ex.Offering.InstanceType, ex.Offering.Zone, ex.Offering.CapacityType, money(ex.Offering.Price))
	}
	p.line("Verdict:   %s", ex.Verdict)
	p.section("Checks", "CHECK", "OK", "DETAIL")
	for _, c := range ex.Checks {
		ok := "no"
		if c.OK {
			ok = "yes"
		}
		p.row(c.Check, ok, c.Detail)
	}
}
