package solver

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// finish turns the batch's claims into NodeClaims, and says what each in-flight NodeClaim that
// took pods of the batch must now hold.
func (r *run) finish() (*simulation.Plan, error) {
	took := map[string]bool{}
	for _, name := range r.plan.InFlight {
		took[name] = true
	}
	for _, c := range r.claims {
		if c.inFlight != nil && !c.fixed && took[c.inFlight.Name] {
			if r.plan.InFlightRequests == nil {
				r.plan.InFlightRequests = map[string]corev1.ResourceList{}
			}
			r.plan.InFlightRequests[c.inFlight.Name] = c.requests.list()
		}
	}
	for _, c := range r.claims {
		if c.pool == nil || len(c.pods) == 0 {
			continue
		}
		nc, err := r.nodeClaim(c)
		if err != nil {
			// The pods were planned onto a claim that cannot be published: say why.
			for _, pod := range c.pods {
				r.unschedulable(pod, []simulation.NodePoolReason{poolReason(c.pool.np.Name, simulation.ReasonNoInstanceType, err.Error())})
			}
			continue
		}
		r.plan.NewNodeClaims = append(r.plan.NewNodeClaims, &simulation.PlannedNodeClaim{NodeClaim: nc, Pods: c.pods})
	}
	return r.plan, nil
}

// nodeClaim builds the unsaved NodeClaim for a new claim: the NodePool's template, the
// claim's narrowed requirements with its instance types cheapest first, and the requests of
// its pods and daemons.
func (r *run) nodeClaim(c *claim) (*karpv1.NodeClaim, error) {
	np := c.pool.np
	template := np.Spec.Template
	reqs := c.reqs.Clone()
	// A user-defined label that only has to exist gets a value now: the node must carry one,
	// the one the Filters saw if a pod's node affinity made the solver choose it.
	for key, q := range reqs {
		if isWellKnown(key) || q.AllowsAbsent() || q.Len() == 1 {
			continue
		}
		if _, ok := finite(q); ok {
			continue // a finite choice is left to the launch, like a zone
		}
		value := c.chosen[key]
		if value == "" || !q.Has(value) {
			value = q.Any()
		}
		chosen := scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, value)
		chosen.MinValues = q.MinValues
		reqs[key] = chosen
	}
	its := r.byPrice(c.pool, reqs, c.its)
	if len(its) == 0 {
		return nil, fmt.Errorf("no instance type is left for its requirements %s", reqs)
	}
	annotations := maps.Clone(template.ObjectMeta.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	truncated, err := its.Truncate(reqs, r.s.opts.MaxInstanceTypes)
	if err != nil {
		if r.s.opts.MinValuesPolicy == MinValuesStrict {
			return nil, err
		}
		relaxMinValues(reqs, truncated)
		annotations[karpv1.NodeClaimMinValuesRelaxedAnnotationKey] = "true"
	}
	names := make([]string, len(truncated))
	for i, it := range truncated {
		names[i] = it.Name
	}
	typeReq := karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: names}
	if existing, ok := reqs[corev1.LabelInstanceTypeStable]; ok {
		typeReq.MinValues = existing.MinValues
	}
	delete(reqs, corev1.LabelInstanceTypeStable)

	labels := maps.Clone(template.ObjectMeta.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, reqs.Labels())
	if len(names) == 1 {
		labels[corev1.LabelInstanceTypeStable] = names[0]
	}
	labels[karpv1.NodePoolLabelKey] = np.Name
	if hash, ok := np.Annotations[karpv1.NodePoolHashAnnotationKey]; ok {
		annotations[karpv1.NodePoolHashAnnotationKey] = hash
	}
	if version, ok := np.Annotations[karpv1.NodePoolHashVersionAnnotationKey]; ok {
		annotations[karpv1.NodePoolHashVersionAnnotationKey] = version
	}
	nc := &karpv1.NodeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: np.Name + "-",
			Labels:       labels,
			Annotations:  annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         karpv1.SchemeGroupVersion.String(),
				Kind:               "NodePool",
				Name:               np.Name,
				UID:                np.UID,
				Controller:         new(true),
				BlockOwnerDeletion: new(true),
			}},
		},
		Spec: karpv1.NodeClaimSpec{
			Taints:                 template.Spec.Taints,
			StartupTaints:          template.Spec.StartupTaints,
			Requirements:           withInstanceTypes(reqs.NodeSelectorRequirementsWithMinValues(), typeReq),
			Resources:              karpv1.ResourceRequirements{Requests: c.requests.list()},
			NodeClassRef:           template.Spec.NodeClassRef,
			TerminationGracePeriod: template.Spec.TerminationGracePeriod,
			ExpireAfter:            template.Spec.ExpireAfter,
		},
	}
	uids := make([]types.UID, len(c.pods))
	for i, pod := range c.pods {
		uids[i] = pod.UID
	}
	simulation.AddPlannedPods(nc, uids...)
	return nc, nil
}

// relaxMinValues lowers each minValues of reqs to what its offer, as the BestEffort policy
// allows.
func relaxMinValues(reqs scheduling.Requirements, its interface {
	MinValuesShortfall(scheduling.Requirements) error
}) {
	for key, q := range reqs {
		if q.MinValues == nil {
			continue
		}
		for n := *q.MinValues; n >= 0; n-- {
			relaxed := scheduling.NewRequirements(scheduling.NewRequirement(key, corev1.NodeSelectorOpExists))
			relaxed[key] = q.Intersection(relaxed[key])
			relaxed[key].MinValues = new(n)
			if its.MinValuesShortfall(relaxed) == nil {
				reqs[key] = relaxed[key]
				break
			}
		}
	}
}

// withInstanceTypes inserts the instance-type requirement in key order, its values kept
// cheapest first (the algebra would sort them by name).
func withInstanceTypes(reqs []karpv1.NodeSelectorRequirementWithMinValues, types karpv1.NodeSelectorRequirementWithMinValues) []karpv1.NodeSelectorRequirementWithMinValues {
	i, _ := slices.BinarySearchFunc(reqs, types.Key, func(r karpv1.NodeSelectorRequirementWithMinValues, key string) int {
		return strings.Compare(r.Key, key)
	})
	return slices.Insert(reqs, i, types)
}

// StaticNodeClaim builds the unsaved NodeClaim a static NodePool (spec.replicas) adds to keep
// its count, as Plan builds a new claim's NodeClaim: from the NodePool's template alone, no pod
// narrowing it, with its compatible instance types cheapest first (its are the NodePool's
// instance types from the cloud provider). opts supplies MinValuesPolicy and MaxInstanceTypes.
func StaticNodeClaim(np *karpv1.NodePool, its []*cloudprovider.InstanceType, opts Options) (*karpv1.NodeClaim, error) {
	if opts.MinValuesPolicy == "" {
		opts.MinValuesPolicy = DefaultMinValuesPolicy
	}
	if opts.MaxInstanceTypes == 0 {
		opts.MaxInstanceTypes = DefaultMaxInstanceTypes
	}
	s := &Solver{opts: opts}
	p := &pool{np: np, reqs: poolRequirements(np)}
	p.its = withoutUnavailable(its, opts.Unavailable).Compatible(p.reqs).OrderByPrice(p.reqs)
	if len(p.its) == 0 {
		return nil, fmt.Errorf("nodepool %q: no instance type meets its requirements %s", np.Name, p.reqs)
	}
	c := &claim{pool: p, reqs: p.reqs.Clone(), its: p.its}
	return (&run{s: s}).nodeClaim(c)
}

// byPrice returns its.Compatible(reqs).OrderByPrice(reqs) for its, types of NodePool p in
// p's order. The pool's own types are filtered and priced once per distinct requirements
// (a batch's claims share a few: the pool's with a zone, say) instead of once per claim; the
// order is a total one (price, then name), so its types come in the same order in both.
func (r *run) byPrice(p *pool, reqs scheduling.Requirements, its cloudprovider.InstanceTypes) cloudprovider.InstanceTypes {
	if p.position == nil {
		p.position = make(map[*cloudprovider.InstanceType]int, len(p.its))
		for i, it := range p.its {
			p.position[it] = i
		}
		p.byPrice = map[string]cloudprovider.InstanceTypes{}
	}
	in := make([]bool, len(p.its))
	for _, it := range its {
		i, ok := p.position[it]
		if !ok {
			return its.Compatible(reqs).OrderByPrice(reqs) // not the pool's: nothing to share
		}
		in[i] = true
	}
	key, err := json.Marshal(reqs.NodeSelectorRequirementsWithMinValues())
	if err != nil {
		return its.Compatible(reqs).OrderByPrice(reqs)
	}
	ordered, ok := p.byPrice[string(key)]
	if !ok {
		ordered = p.its.Compatible(reqs).OrderByPrice(reqs)
		p.byPrice[string(key)] = ordered
	}
	out := make(cloudprovider.InstanceTypes, 0, len(its))
	for _, it := range ordered {
		if in[p.position[it]] {
			out = append(out, it)
		}
	}
	return out
}
