package solver

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// domainLabelKey marks the placeholder nodes the solver adds for topology domains. The solver
// never tries to place a pod on such a node. They are not tainted for it: a spread with
// nodeTaintsPolicy Honor would not count them.
const domainLabelKey = "joinery.dev/topology-domain"

// domainLabelKeys are the keys a placeholder node carries per combination.
var domainLabelKeys = []string{corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey, corev1.LabelArchStable, corev1.LabelOSStable}

// maxCustomDomains bounds the combinations of user-defined label values a NodePool's
// placeholder nodes enumerate; keys past the bound are left off the placeholders.
const maxCustomDomains = 256

// addDomains adds an empty placeholder node for every (zone, capacity type, arch, os)
// a NodePool can launch, crossed with every combination of the values its requirements list
// for user-defined labels (In with several values). PodTopologySpread counts the domains of
// the nodes in the snapshot; a zone (or rack) where nothing runs yet but a NodePool could
// launch must count as a domain with zero pods, as Karpenter counts it, or the Filters would
// let a spread pile onto the first one. A placeholder carries the NodePool's taints, which its
// nodes keep (a spread with nodeTaintsPolicy Honor leaves out the domains of a NodePool whose
// taints the pod does not tolerate), and not the ones a node loses by itself once it is
// ready (karpenter.sh/unregistered, startup taints), which the planned nodes do not carry
// either.
func (r *run) addDomains() error {
	for _, p := range r.pools {
		custom := customDomains(p.reqs)
		combos := sets.New[string]()
		var nodes []*corev1.Node
		for _, it := range p.its {
			for _, o := range it.Offerings {
				if !o.Available || !o.CompatibleWith(p.reqs) {
					continue
				}
				for _, arch := range valuesOf(it.Requirements.Get(corev1.LabelArchStable), p.reqs.Get(corev1.LabelArchStable)) {
					for _, os := range valuesOf(it.Requirements.Get(corev1.LabelOSStable), p.reqs.Get(corev1.LabelOSStable)) {
						values := []string{o.Zone(), o.CapacityType(), arch, os}
						key := strings.Join(values, "\x00") // runs per offering in every plan: no fmt
						if combos.Has(key) {
							continue
						}
						combos.Insert(key)
						for _, extra := range custom {
							labels := p.reqs.Labels()
							maps.Copy(labels, extra)
							labels[domainLabelKey] = "true"
							for i, k := range domainLabelKeys {
								if values[i] != "" {
									labels[k] = values[i]
								}
							}
							name := fmt.Sprintf("joinery-domain-%s-%d", p.np.Name, len(nodes)+1)
							nodes = append(nodes, simulation.NewHypotheticalNode(simulation.NodeTemplate{
								Name:   name,
								Labels: labels,
								Taints: p.np.Spec.Template.Spec.Taints,
							}))
						}
					}
				}
			}
		}
		for _, n := range nodes {
			if err := r.engine.Snapshot().AddNode(n); err != nil {
				return fmt.Errorf("adding topology domain: %w", err)
			}
		}
	}
	return nil
}

// customDomains lists every combination of the values reqs lists for user-defined labels
// with several In values (well-known keys are enumerated from the offerings instead), up to
// maxCustomDomains; one empty combination when there are none.
func customDomains(reqs scheduling.Requirements) []map[string]string {
	out := []map[string]string{{}}
	for _, key := range reqs.Keys() {
		values, ok := finite(reqs[key])
		if !ok || len(values) < 2 || isWellKnown(key) || len(out)*len(values) > maxCustomDomains {
			continue
		}
		next := make([]map[string]string, 0, len(out)*len(values))
		for _, base := range out {
			for _, v := range values {
				labels := maps.Clone(base)
				labels[key] = v
				next = append(next, labels)
			}
		}
		out = next
	}
	return out
}

// valuesOf lists the values of have (an instance type's requirement) that want allows, or
// [""] when have is not a finite set.
func valuesOf(have, want *scheduling.Requirement) []string {
	values, ok := finite(have)
	out := []string{}
	if ok {
		for _, v := range values {
			if want.Has(v) {
				out = append(out, v)
			}
		}
	}
	if len(out) == 0 {
		return []string{""}
	}
	return out
}

// finite returns the allowed values of an In requirement, sorted.
func finite(r *scheduling.Requirement) ([]string, bool) {
	if r.Operator() != corev1.NodeSelectorOpIn {
		return nil, false
	}
	return r.Values(), true
}
