package scheduling

import (
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// FromNodeSelectorRequirementsWithMinValues builds requirements from a NodePool's or NodeClaim's
// spec.requirements, keys normalized as in FromNodeSelectorRequirements. A key's MinValues is the
// largest given for it.
func FromNodeSelectorRequirementsWithMinValues(reqs ...karpv1.NodeSelectorRequirementWithMinValues) Requirements {
	r := make(Requirements, len(reqs))
	for _, req := range reqs {
		next := NewRequirement(NormalizeLabelKey(req.Key), req.Operator, req.Values...)
		if req.MinValues != nil {
			minValues := *req.MinValues // not aliasing the API object
			next.MinValues = &minValues
		}
		r.Add(next)
	}
	return r
}

// NodeSelectorRequirementsWithMinValues converts r back for a NodeClaim's spec.requirements,
// sorted by key. A key that needs several expressions carries its MinValues on the first.
func (r Requirements) NodeSelectorRequirementsWithMinValues() []karpv1.NodeSelectorRequirementWithMinValues {
	var out []karpv1.NodeSelectorRequirementWithMinValues
	for _, key := range r.Keys() {
		req := r[key]
		for i, expr := range req.NodeSelectorRequirements() {
			converted := karpv1.NodeSelectorRequirementWithMinValues{Key: expr.Key, Operator: expr.Operator, Values: expr.Values}
			if i == 0 && req.MinValues != nil {
				minValues := *req.MinValues
				converted.MinValues = &minValues
			}
			out = append(out, converted)
		}
	}
	return out
}
