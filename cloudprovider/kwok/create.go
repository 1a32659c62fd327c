package kwok

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

// Create launches a kwok Node for nodeClaim: of the instance types its requirements allow and its
// requests fit, the first in the launch order (cloudprovider.CompareLaunches, which the cost
// prediction assumes too). Creating a NodeClaim whose Node exists already returns that Node's description,
// so a retried launch does not fail.
func (p *CloudProvider) Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	if err := p.checkNodeClass(ctx, nodeClaim.Spec.NodeClassRef); err != nil {
		return nil, fmt.Errorf("nodeclaim %s: %w", nodeClaim.Name, err)
	}
	reqs := scheduling.FromNodeSelectorRequirementsWithMinValues(nodeClaim.Spec.Requirements...)
	// The NodePool's view of the catalog: overlays may change prices and capacity per NodePool.
	its := p.catalog(nodeClaim.Labels[karpv1.NodePoolLabelKey])
	candidates := its.Launches(reqs, nodeClaim.Spec.Resources.Requests)
	candidates, exhausted, err := p.withoutRecordedUnavailable(ctx, candidates)
	if err != nil {
		return nil, fmt.Errorf("nodeclaim %s: %w", nodeClaim.Name, err)
	}
	if len(candidates) == 0 && len(exhausted) > 0 {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("nodeclaim %s: every offering it may launch as is recorded unavailable", nodeClaim.Name), exhausted...)
	}
	if hasReserved(candidates) {
		p.launchMu.Lock()
		defer p.launchMu.Unlock()
		if candidates, err = p.withoutExhaustedReservations(ctx, candidates); err != nil {
			return nil, err
		}
	}
	if len(candidates) == 0 {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("nodeclaim %s: %s", nodeClaim.Name, whyNoCandidate(its, reqs, nodeClaim.Spec.Resources.Requests)))
	}
	chosen := candidates[0]
	node := buildNode(nodeClaim, reqs, chosen.InstanceType, chosen.Offering)
	if err := p.client.Create(ctx, node); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating node for nodeclaim %s: %w", nodeClaim.Name, err)
		}
		return p.existing(ctx, nodeClaim, node.Name)
	}
	return resolved(nodeClaim, node), nil
}

// candidate is one instance type and offering a NodeClaim could launch as.
type candidate = cloudprovider.Launch

func hasReserved(cs []candidate) bool {
	return slices.ContainsFunc(cs, func(c candidate) bool { return c.Offering.ReservationID() != "" })
}

// withoutExhaustedReservations drops reserved offerings whose reservation already has as many
// nodes as its capacity.
func (p *CloudProvider) withoutExhaustedReservations(ctx context.Context, cs []candidate) ([]candidate, error) {
	nodes, err := p.managedNodes(ctx)
	if err != nil {
		return nil, err
	}
	used := map[string]int{}
	for _, n := range nodes {
		if id := n.Labels[awsv1.LabelCapacityReservationID]; id != "" {
			used[id]++
		}
	}
	return slices.DeleteFunc(cs, func(c candidate) bool {
		id := c.Offering.ReservationID()
		return id != "" && used[id] >= c.Offering.ReservationCapacity
	}), nil
}

// withoutRecordedUnavailable drops the candidates whose offering the cluster's record says is
// exhausted (Options.Unavailable) and returns those offerings.
func (p *CloudProvider) withoutRecordedUnavailable(ctx context.Context, cs []candidate) ([]candidate, []cloudprovider.OfferingKey, error) {
	if p.unavailable == nil || len(cs) == 0 {
		return cs, nil, nil
	}
	recorded, err := p.unavailable.Unavailable(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("reading unavailable offerings: %w", err)
	}
	var exhausted []cloudprovider.OfferingKey
	cs = slices.DeleteFunc(cs, func(c candidate) bool {
		key := cloudprovider.OfferingKey{CapacityType: c.Offering.CapacityType(), InstanceType: c.InstanceType.Name, Zone: c.Offering.Zone()}
		if _, ok := recorded[key]; ok {
			exhausted = append(exhausted, key)
			return true
		}
		return false
	})
	return cs, exhausted, nil
}

// whyNoCandidate explains an empty candidate list for the insufficient-capacity error.
func whyNoCandidate(its cloudprovider.InstanceTypes, reqs scheduling.Requirements, requests corev1.ResourceList) string {
	compatible, fitting := 0, 0
	for _, it := range its {
		if it.Requirements.Intersects(reqs) != nil {
			continue
		}
		compatible++
		if scheduling.Fits(requests, it.Allocatable()) == nil {
			fitting++
		}
	}
	switch {
	case compatible == 0:
		return fmt.Sprintf("no instance type meets requirements %s", reqs)
	case fitting == 0:
		return fmt.Sprintf("none of %d instance types meeting the requirements fits requests %s", compatible, describeResources(requests))
	default:
		return fmt.Sprintf("no available offering of %d instance types matches requirements %s", fitting, reqs)
	}
}

func describeResources(list corev1.ResourceList) string {
	parts := make([]string, 0, len(list))
	for name, q := range list {
		parts = append(parts, fmt.Sprintf("%s=%s", name, q.String()))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// existing describes the Node a previous attempt created for nodeClaim.
func (p *CloudProvider) existing(ctx context.Context, nodeClaim *karpv1.NodeClaim, name string) (*karpv1.NodeClaim, error) {
	var node corev1.Node
	if err := p.client.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
		return nil, fmt.Errorf("getting existing node for nodeclaim %s: %w", nodeClaim.Name, err)
	}
	if !isManaged(&node) {
		return nil, cloudprovider.NewCreateError(fmt.Errorf("node %s exists and is not a kwok node", name), "NodeNameTaken", "a node named "+name+" exists and is not managed by the kwok provider")
	}
	return resolved(nodeClaim, &node), nil
}

// buildNode is the Node for nodeClaim launched as it through offering.
func buildNode(nodeClaim *karpv1.NodeClaim, reqs scheduling.Requirements, it *cloudprovider.InstanceType, offering *cloudprovider.Offering) *corev1.Node {
	name := nodeClaim.Name
	labels := map[string]string{}
	// Later sources win: what the instance and offering are overrides what was asked for.
	for _, source := range []map[string]string{nodeClaim.Labels, reqs.Labels(), it.Requirements.Labels(), offering.Requirements.Labels()} {
		for k, v := range source {
			labels[k] = v
		}
	}
	labels[corev1.LabelOSStable] = chooseOS(it, reqs)
	labels[corev1.LabelHostname] = name
	// Real nodes carry the beta keys and the EBS zone key too (scheduling.LabelAliases).
	maps.Copy(labels, scheduling.LabelAliases(labels))

	taints := slices.Concat(nodeClaim.Spec.Taints, nodeClaim.Spec.StartupTaints)
	unregistered := corev1.Taint{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
	if !slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.MatchTaint(&unregistered) }) {
		taints = append(taints, unregistered)
	}

	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: map[string]string{KwokNodeAnnotation: KwokNodeAnnotationValue},
		},
		Spec: corev1.NodeSpec{ProviderID: ProviderIDPrefix + name, Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    it.Capacity.DeepCopy(),
			Allocatable: it.Allocatable().DeepCopy(),
			NodeInfo:    corev1.NodeSystemInfo{Architecture: labels[corev1.LabelArchStable], OperatingSystem: labels[corev1.LabelOSStable]},
		},
	}
}

// chooseOS picks the node's operating system among those the type runs and the NodeClaim allows:
// linux when possible, as it is every provider's default.
func chooseOS(it *cloudprovider.InstanceType, reqs scheduling.Requirements) string {
	allowed := it.Requirements.Get(corev1.LabelOSStable).Intersection(reqs.Get(corev1.LabelOSStable))
	if allowed.Has(string(corev1.Linux)) {
		return string(corev1.Linux)
	}
	return allowed.Any()
}
