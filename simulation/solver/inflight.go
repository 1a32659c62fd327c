package solver

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// addInFlight adds every NodeClaim that has no registered Node yet as a hypothetical node,
// with the daemons that will run on it and the pending pods already planned onto it, so the
// batch fills launching capacity before asking for more.
func (r *run) addInFlight(ctx context.Context, nodeClaims []*karpv1.NodeClaim, nodes []*corev1.Node, pods []*corev1.Pod) error {
	registered, registeredIDs := sets.New[string](), sets.New[string]()
	for _, n := range nodes {
		registered.Insert(n.Name)
		if n.Spec.ProviderID != "" {
			registeredIDs.Insert(n.Spec.ProviderID)
		}
	}
	pending := map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			pending[p.UID] = p
		}
	}
	placed := sets.New[types.UID]()
	var landed []*karpv1.NodeClaim
	for _, nc := range nodeClaims {
		if nc.DeletionTimestamp != nil {
			continue
		}
		// A NodeClaim's Node can register before the lifecycle controller records it in the
		// status: a Node with its provider ID, or with the claim's own name (the name its
		// hypothetical node would take), is the claim's capacity already in the snapshot.
		if (nc.Status.NodeName != "" && registered.Has(nc.Status.NodeName)) ||
			(nc.Status.ProviderID != "" && registeredIDs.Has(nc.Status.ProviderID)) || registered.Has(nc.Name) {
			landed = append(landed, nc)
			continue
		}
		c := r.inFlightClaim(nc)
		if c == nil {
			continue
		}
		if _, err := r.engine.Snapshot().AddHypotheticalNode(c.node(c.reqs, c.chosen)); err != nil {
			return fmt.Errorf("adding in-flight nodeclaim %s: %w", nc.Name, err)
		}
		daemons, err := addDaemons(ctx, r.engine, r.daemons, c.name)
		if err != nil {
			return err
		}
		c.requests = daemons
		for _, uid := range simulation.PlannedPods(nc) {
			if r.batch.Has(uid) {
				r.plannedOn[uid] = c
				continue
			}
			pod, ok := pending[uid]
			if !ok {
				continue // bound elsewhere or gone
			}
			if err := r.engine.Snapshot().AddPod(pod, c.name); err != nil {
				return err
			}
			placed.Insert(uid)
			r.noteAntiAffinity(pod)
			c.pods = append(c.pods, pod)
			c.requests = c.requests.plus(podVec(pod))
		}
		c.index = len(r.claims)
		r.claims = append(r.claims, c)
	}
	return r.addLandedPlans(landed, nodes, pending, placed)
}

// addLandedPlans puts the pods planned onto NodeClaims whose Node has registered, and that
// have not bound yet, onto that Node in the snapshot: the capacity is promised to them until
// they bind (they are then in the snapshot as bound pods) or are released (they are then in a
// batch, or planned onto another NodeClaim, whose plan counts instead). Without them the
// solver would hand that capacity, spread domains and anti-affinity to the batch as well.
func (r *run) addLandedPlans(landed []*karpv1.NodeClaim, nodes []*corev1.Node, pending map[types.UID]*corev1.Pod, placed sets.Set[types.UID]) error {
	if len(landed) == 0 {
		return nil
	}
	live := make([]*corev1.Node, 0, len(nodes))
	for _, n := range nodes {
		if n.DeletionTimestamp == nil {
			live = append(live, n)
		}
	}
	ix := scheduling.IndexNodes(live)
	for _, nc := range landed {
		n := ix.NodeOf(nc)
		if n == nil {
			n = ix.Node(nc.Name) // a node named after its NodeClaim (kwok's) before the status says so
		}
		if n == nil {
			continue
		}
		node := n.Name
		for _, uid := range simulation.PlannedPods(nc) {
			pod, ok := pending[uid]
			if !ok || r.batch.Has(uid) || placed.Has(uid) {
				continue // bound, gone, being planned again, or counted on another NodeClaim
			}
			if err := r.engine.Snapshot().AddPod(pod, node); err != nil {
				return fmt.Errorf("adding pod %s planned onto node %s: %w", pod.Name, node, err)
			}
			placed.Insert(uid)
			r.noteAntiAffinity(pod)
		}
	}
	return nil
}

// inFlightClaim describes nc as a claim, or returns nil when none of its instance types is
// known (its NodePool is gone or not ready).
func (r *run) inFlightClaim(nc *karpv1.NodeClaim) *claim {
	reqs := scheduling.FromNodeSelectorRequirementsWithMinValues(nc.Spec.Requirements...)
	for k, v := range nc.Labels {
		reqs.Add(scheduling.NewRequirement(k, corev1.NodeSelectorOpIn, v))
	}
	var its cloudprovider.InstanceTypes
	for _, p := range r.pools {
		if p.np.Name == nodePoolOf(nc) {
			its = p.its.Compatible(reqs)
		}
	}
	c := &claim{name: nc.Name, inFlight: nc, reqs: reqs, its: its, taints: nc.Spec.Taints}
	switch {
	case len(nc.Status.Allocatable) > 0:
		c.bound, c.fixed = nc.Status.Allocatable, true
	case len(its) > 0:
		c.bound = maxAllocatable(its)
	default:
		return nil
	}
	c.boundVec = toVec(c.bound)
	c.limits = maxVolumeLimits(its)
	c.devices = sameDevices(its)
	// Keys the NodeClaim leaves open get a value on the node, so a pod that accepts every
	// value (admits checks) passes its node affinity there; topology keys stay unlabelled,
	// as nothing may count the node in a domain it may not launch in.
	var open []string
	for key := range reqs {
		if !r.isTopologyKey(key) && key != corev1.LabelHostname {
			open = append(open, key)
		}
	}
	slices.Sort(open)
	c.chosen = chooseValues(reqs, its, open, nil)
	return c
}
