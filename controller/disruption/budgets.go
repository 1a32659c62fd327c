package disruption

import (
	"time"

	"github.com/joinery-dev/joinery/controller/disruption/budget"
)

// Counts returns every NodePool's node counts as budgets see them (Karpenter's): only
// initialized nodes count, so a scale-up in progress neither raises the total nor eats the
// room for disruption; of those, nodes being deleted (or already chosen by a command) and
// nodes not Ready count against the budget.
func (c *Cluster) Counts() map[string]budget.Counts {
	out := map[string]budget.Counts{}
	for name := range c.NodePools {
		out[name] = budget.Counts{}
	}
	for _, nc := range c.NodeClaims {
		np := c.NodePoolOf(nc)
		if np == nil || !isInitialized(nc) {
			continue
		}
		counts := out[np.Name]
		counts.Total++
		switch {
		case c.isDeleting(nc):
			counts.Deleting++
		case !c.isReady(nc):
			counts.NotReady++
		}
		out[np.Name] = counts
	}
	return out
}

// Allowed returns, per NodePool, how many more nodes may be disrupted for reason at now.
// Budget errors (a schedule the schema let through but the parser refuses) come back per
// NodePool; such a NodePool allows nothing.
func (c *Cluster) Allowed(reason string, now time.Time) (map[string]int, map[string]error) {
	counts := c.Counts()
	allowed := make(map[string]int, len(c.NodePools))
	errs := map[string]error{}
	for name, np := range c.NodePools {
		n, err := budget.Allowed(np, reason, counts[name], now)
		allowed[name] = n
		if err != nil {
			errs[name] = err
		}
	}
	return allowed, errs
}
