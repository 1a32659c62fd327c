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
	// Commands are every command the pass chooses (disruption.Pass.Commands), in order: the
	// commands the controller would validate and start together. None when there is nothing
	// to do.
	Commands []DisruptionCommand `json:"commands,omitempty"`
	// Savings is the cost per hour the commands save together.
	Savings float64   `json:"savings"`
	Blocked []Blocked `json:"blocked,omitempty"`
}

// DisruptionCommand is one command of the pass.
type DisruptionCommand struct {
	Method       string          `json:"method"`
	Reason       string          `json:"reason"`
	Decision     string          `json:"decision"`
	Nodes        []DisruptedNode `json:"nodes,omitempty"`
	Replacements []NodeClaim     `json:"replacements,omitempty"`
	// Savings is the cost per hour the command saves (removed nodes less replacements).
	Savings float64 `json:"savings"`
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
	for _, cmd := range pass.Commands {
		dc, err := c.describeCommand(ctx, cmd)
		if err != nil {
			return nil, err
		}
		out.Commands = append(out.Commands, dc)
		out.Savings += dc.Savings
	}
	return out, nil
}

// describeCommand says what cmd does: the nodes it removes with where their pods go, its
// replacements, and what it saves.
func (c *Cluster) describeCommand(ctx context.Context, cmd *disruption.Command) (DisruptionCommand, error) {
	out := DisruptionCommand{Method: cmd.Method, Reason: cmd.Reason, Decision: string(cmd.Decision())}
	for _, cand := range cmd.Candidates {
		dn := DisruptedNode{NodeClaim: cand.NodeClaim.Name, Node: cand.Node.Name, NodePool: cand.NodePool.Name}
		if o, ok, err := c.LaunchedOffering(ctx, cand.NodeClaim, cand.Node); err != nil {
			return DisruptionCommand{}, err
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
			return DisruptionCommand{}, err
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
		return DisruptionCommand{}, err
	}
	for _, np := range slices.Sorted(maps.Keys(saved)) {
		out.Savings += saved[np]
	}
	return out, nil
}
