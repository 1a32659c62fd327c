package whatif

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/joinery-dev/joinery/controller/disruption"
)

// Move is a pod a disruption moves, and where the simulation puts it.
type Move struct {
	Pod string `json:"pod"`
	To  string `json:"to"`
}

// DisruptedNode is a node a disruption command removes.
type DisruptedNode struct {
	NodeClaim string    `json:"nodeClaim"`
	Node      string    `json:"node"`
	NodePool  string    `json:"nodePool"`
	Offering  *Offering `json:"offering,omitempty"`
	Pods      []Move    `json:"pods,omitempty"`
}

// Blocked is a node a method passed over, with the text of its event.
type Blocked struct {
	Method  string `json:"method"`
	Node    string `json:"node"`
	Event   string `json:"event"`
	Message string `json:"message"`
}

// Disruption is what one pass of joinery-controller's disruption loop would do.
type Disruption struct {
	// Method, Reason and Decision describe the command; empty when there is none.
	Method       string          `json:"method,omitempty"`
	Reason       string          `json:"reason,omitempty"`
	Decision     string          `json:"decision,omitempty"`
	Nodes        []DisruptedNode `json:"nodes,omitempty"`
	Replacements []NodeClaim     `json:"replacements,omitempty"`
	// Savings is the cost per hour the command saves (removed nodes less replacements).
	Savings float64   `json:"savings"`
	Blocked []Blocked `json:"blocked,omitempty"`
}

// Disrupt runs one pass of the controller's graceful methods (disruption.DryRun over
// disruption.GracefulMethods) at the snapshot's time.
func (c *Cluster) Disrupt(ctx context.Context, opts Options) (*Disruption, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	setup, err := c.disruptionSetup(ctx, opts)
	if err != nil {
		return nil, err
	}
	pass, err := disruption.DryRun(ctx, setup.cluster, setup.methods, c.Now)
	if err != nil {
		return nil, err
	}
	out := &Disruption{}
	seen := map[string]bool{}
	for _, m := range pass.Methods {
		for _, b := range m.Blocked {
			node := ""
			if b.Node != nil {
				node = b.Node.Name
			}
			event := b.Reason
			if event == "" {
				event = disruption.EventDisruptionBlocked
			}
			key := node + "\x00" + event + "\x00" + b.Message
			if seen[key] {
				continue
			}
			seen[key] = true
			out.Blocked = append(out.Blocked, Blocked{Method: m.Method, Node: node, Event: event, Message: b.Message})
		}
	}
	cmd := pass.Command
	if cmd == nil {
		return out, nil
	}
	out.Method, out.Reason, out.Decision = cmd.Method, cmd.Reason, string(cmd.Decision())
	for _, cand := range cmd.Candidates {
		dn := DisruptedNode{NodeClaim: cand.NodeClaim.Name, Node: cand.Node.Name, NodePool: cand.NodePool.Name}
		if o, ok, err := c.LaunchedOffering(ctx, cand.NodeClaim, cand.Node); err != nil {
			return nil, err
		} else if ok {
			dn.Offering = &o
		}
		for _, p := range cand.Pods {
			dn.Pods = append(dn.Pods, Move{Pod: p.Namespace + "/" + p.Name, To: cmd.Destinations[p.UID]})
		}
		slices.SortFunc(dn.Pods, func(a, b Move) int { return strings.Compare(a.Pod, b.Pod) })
		out.Nodes = append(out.Nodes, dn)
	}
	for _, r := range cmd.Replacements {
		nc, err := c.describeNodeClaim(ctx, r, nil)
		if err != nil {
			return nil, err
		}
		nc.Pods = nil
		for _, cand := range cmd.Candidates {
			for _, p := range cand.Pods {
				if cmd.Destinations[p.UID] == "replacement-"+strconv.Itoa(len(out.Replacements)) {
					nc.Pods = append(nc.Pods, p.Namespace+"/"+p.Name)
				}
			}
		}
		slices.Sort(nc.Pods)
		out.Replacements = append(out.Replacements, nc)
	}
	// The controller's savings gauge prices the command the same way.
	saved, err := cmd.Savings(ctx, c.pricer())
	if err != nil {
		return nil, err
	}
	for _, np := range slices.Sorted(maps.Keys(saved)) {
		out.Savings += saved[np]
	}
	return out, nil
}
