package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/joinery-dev/joinery/cli/whatif"
)

// twoCommands is a disruption pass that chooses two commands.
func twoCommands() *whatif.Disruption {
	return &whatif.Disruption{
		Commands: []whatif.DisruptionCommand{
			{Method: "single-node-consolidation", Reason: "Underutilized", Decision: "delete", Savings: 0.1,
				Nodes: []whatif.DisruptedNode{{NodeClaim: "claim-a", Node: "node-a", NodePool: "default", Pods: []whatif.Move{{Pod: "default/web", To: "node-c"}}}}},
			{Method: "single-node-consolidation", Reason: "Underutilized", Decision: "replace", Savings: 0.2,
				Nodes:        []whatif.DisruptedNode{{NodeClaim: "claim-b", Node: "node-b", NodePool: "default"}},
				Replacements: []whatif.NodeClaim{{NodePool: "default", InstanceTypes: []string{"c5.large"}, Pods: []string{"default/db"}}}},
		},
		Savings: 0.3,
	}
}

// TestEveryCommandOfThePassIsPrinted: `joinery simulate` and `joinery cost` print each
// command the pass chooses, in every output format, in the pass's order.
func TestEveryCommandOfThePassIsPrinted(t *testing.T) {
	res := &whatif.Result{Provisioning: &whatif.Provisioning{}, Disruption: twoCommands()}
	rep := &costReport{Consolidation: twoCommands(), Savings: 0.3}
	tests := []struct {
		name  string
		value any
		table func(*printer)
		// want appear in this order for each format.
		want map[string][]string
	}{
		{name: "simulate", value: res, table: func(p *printer) { simulateTable(p, res) }, want: map[string][]string{
			"table": {
				"Disruption 1 of 2: single-node-consolidation, delete (Underutilized), saves $0.1000/hour", "claim-a", "default/web→node-c",
				"Disruption 2 of 2: single-node-consolidation, replace (Underutilized), saves $0.2000/hour", "claim-b", "Replacements", "c5.large",
			},
			"json": {`"method": "single-node-consolidation"`, `"nodeClaim": "claim-a"`, `"decision": "replace"`, `"nodeClaim": "claim-b"`, `"c5.large"`},
			"yaml": {"decision: delete", "nodeClaim: claim-a", "decision: replace", "nodeClaim: claim-b"},
		}},
		{name: "cost", value: rep, table: func(p *printer) { costTable(p, rep) }, want: map[string][]string{
			"table": {"Next disruption pass: 2 commands, saves $0.3000/hour", "delete", "node-a", "$0.1000", "replace", "node-b", "$0.2000"},
			"json":  {`"nodeClaim": "claim-a"`, `"nodeClaim": "claim-b"`},
			"yaml":  {"nodeClaim: claim-a", "nodeClaim: claim-b"},
		}},
	}
	for _, tt := range tests {
		for _, format := range formats {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				var out bytes.Buffer
				if err := write(&out, format, tt.value, tt.table); err != nil {
					t.Fatal(err)
				}
				rest := out.String()
				for _, want := range tt.want[format] {
					i := strings.Index(rest, want)
					if i < 0 {
						t.Fatalf("%q missing or out of order in\n%s", want, out.String())
					}
					rest = rest[i+len(want):]
				}
			})
		}
	}
}
