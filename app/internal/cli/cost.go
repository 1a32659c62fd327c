package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/joinery-dev/joinery/cli/whatif"
)

// costReport is `joinery cost`'s answer.
type costReport struct {
	Lines []whatif.CostLine `json:"lines"`
	// Total is the cost per hour of every NodeClaim.
	Total float64 `json:"total"`
	// Consolidation is what the next disruption pass would do (every command it chooses),
	// and Savings what its commands save together per hour.
	Consolidation *whatif.Disruption `json:"consolidation"`
	Savings       float64            `json:"savings"`
}

func newCostCommand(cluster *clusterFlags, outOfTree frameworkruntime.Registry) *cobra.Command {
	var (
		path   string
		format string
		engine engineFlags
	)
	cmd := &cobra.Command{
		Use:   "cost [--snapshot FILE]",
		Short: "Cost per hour per NodePool, capacity type and zone, utilisation, and what the next consolidation saves",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			opts, err := engine.options()
			if err != nil {
				return err
			}
			s, err := cluster.load(cmd.Context(), path)
			if err != nil {
				return err
			}
			c, err := engine.load(cmd, s)
			if err != nil {
				return err
			}
			lines, err := c.Costs(cmd.Context())
			if err != nil {
				return err
			}
			rep := &costReport{Lines: lines}
			for _, l := range rep.Lines {
				rep.Total += l.PerHour
			}
			if rep.Consolidation, err = c.Disrupt(cmd.Context(), opts); err != nil {
				return err
			}
			rep.Savings = rep.Consolidation.Savings
			return write(cmd.OutOrStdout(), format, rep, func(p *printer) { costTable(p, rep) })
		},
	}
	cmd.Flags().StringVar(&path, "snapshot", "", "read a snapshot file instead of the live cluster")
	outputFlag(cmd, &format)
	engine.bind(cmd, outOfTree)
	return cmd
}

func costTable(p *printer, rep *costReport) {
	p.section("Cost per hour", "NODEPOOL", "CAPACITY TYPE", "ZONE", "NODECLAIMS", "PER HOUR", "CPU", "MEMORY")
	for _, l := range rep.Lines {
		count := fmt.Sprint(l.NodeClaims)
		if l.Unpriced > 0 {
			count += fmt.Sprintf(" (%d unpriced)", l.Unpriced)
		}
		p.row(l.NodePool, dash(l.CapacityType), dash(l.Zone), count, money(l.PerHour), percent(l.CPU), percent(l.Memory))
	}
	p.row("TOTAL", "", "", "", money(rep.Total), "", "")
	d := rep.Consolidation
	switch len(d.Commands) {
	case 0:
		p.section("Next disruption pass: nothing to do")
	case 1:
		cmd := d.Commands[0]
		p.section(fmt.Sprintf("Next disruption pass: %s %s %s, saves %s/hour", cmd.Method, cmd.Decision, nodesOf(cmd), money(cmd.Savings)))
	default:
		p.section(fmt.Sprintf("Next disruption pass: %d commands, saves %s/hour", len(d.Commands), money(rep.Savings)),
			"METHOD", "DECISION", "NODES", "SAVES")
		for _, cmd := range d.Commands {
			p.row(cmd.Method, cmd.Decision, nodesOf(cmd), money(cmd.Savings))
		}
	}
}

// nodesOf lists the nodes cmd removes.
func nodesOf(cmd whatif.DisruptionCommand) string {
	var nodes []string
	for _, n := range cmd.Nodes {
		nodes = append(nodes, n.Node)
	}
	return list(nodes, 5)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func percent(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }
