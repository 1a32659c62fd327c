package disruption

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/disruption/budget"
)

// Counts returns every NodePool's node counts as budgets see them (Karpenter's): only
// initialized nodes count, so a scale-up in progress neither raises the total nor eats the
// room for disruption; of those, nodes being deleted (or already chosen by a command) and
// nodes not Ready count against the budget. A NodeClaim whose instance is terminating
// (InstanceTerminating: its node drained and gone, only the cloud's termination and the
// finalizer left) counts no more, as in Karpenter: nothing on it can be disrupted any more.
func (c *Cluster) Counts() map[string]budget.Counts {
	out := map[string]budget.Counts{}
	for name := range c.NodePools {
		out[name] = budget.Counts{}
	}
	for _, nc := range c.NodeClaims {
		np := c.NodePoolOf(nc)
		if np == nil || !isInitialized(nc) || instanceTerminating(nc) {
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

// instanceTerminating reports whether nc's instance is being terminated: the termination
// controller sets InstanceTerminating once the node is drained.
func instanceTerminating(nc *karpv1.NodeClaim) bool {
	return nc.DeletionTimestamp != nil && meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInstanceTerminating)
}

// AllowedOnceDisrupted returns, per NodePool, how many nodes may be disrupted for reason once
// the nodes being disrupted now are gone: the budget over the NodePool without them. A pass
// decides with it while those nodes hold the whole budget, so a command's validation delay
// runs alongside the commands before it; the command starts only when Allowed allows it.
// NodePools with nothing being disrupted, or whose budget still allows something, get Allowed.
func (c *Cluster) AllowedOnceDisrupted(reason string, now time.Time) map[string]int {
	allowed, _ := c.Allowed(reason, now)
	counts := c.Counts()
	for name, np := range c.NodePools {
		n := counts[name]
		if allowed[name] > 0 || n.Deleting == 0 {
			continue
		}
		after, err := budget.Allowed(np, reason, budget.Counts{Total: n.Total - n.Deleting, NotReady: n.NotReady}, now)
		if err == nil {
			allowed[name] = after
		}
	}
	return allowed
}
