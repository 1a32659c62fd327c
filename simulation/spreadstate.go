package simulation

import (
	"math"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"
)

// spreadView is a read-only view of PodTopologySpread's PreFilter state for one pod: per
// constraint, the matching pods per domain and the minimum the plugin keeps. The plugin
// exports the fields of its state (for its own tests) but not the type, so they are read by
// reflection. When they are not as expected (another Kubernetes version), readSpread says so
// and the engine falls back to rerunning the plugin's PreFilter and to its Filter only.
//
// The engine uses the view for two things, both checks of the plugin's own numbers:
//   - the plugin's AddPod keeps only two "critical paths", so after a pod lands in the
//     domain holding the minimum, the minimum it reports can be too high; the view tells
//     whether it is, and only then is the plugin's PreFilter rerun;
//   - the plugin's Filter rejects a node when matching pods + self − minimum > maxSkew; a
//     node the view shows rejected is not handed to the Filters again (pruning: a node the
//     view admits still goes through every Filter).
type spreadView struct {
	constraints []spreadConstraint
	counts      []map[string]int // shared with the state: read only
	minimums    []int
	minDomains  []string // the domain holding each minimum
	domains     []int    // number of domains per constraint when read
}

type spreadConstraint struct {
	maxSkew    int
	minDomains int
	key        string
	selfMatch  int // 1 when the pod matches the constraint's selector
}

// readSpread reads the PodTopologySpread state of state for pod.
func readSpread(state fwk.CycleState, pod *corev1.Pod) (*spreadView, bool) {
	data, err := state.Read(spreadStateKey)
	if err != nil {
		return nil, false
	}
	v := reflect.ValueOf(data)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	v = v.Elem()
	constraints := v.FieldByName("Constraints")
	paths := v.FieldByName("CriticalPaths")
	countsField := v.FieldByName("TpValueToMatchNum")
	if !constraints.IsValid() || !paths.IsValid() || !countsField.IsValid() ||
		constraints.Kind() != reflect.Slice || paths.Kind() != reflect.Slice || !countsField.CanInterface() {
		return nil, false
	}
	counts, ok := countsField.Interface().([]map[string]int)
	if !ok || len(counts) != constraints.Len() || paths.Len() != constraints.Len() {
		return nil, false
	}
	view := &spreadView{counts: counts}
	podLabels := labels.Set(pod.Labels)
	for i := range constraints.Len() {
		c := constraints.Index(i)
		maxSkew, minDomains := c.FieldByName("MaxSkew"), c.FieldByName("MinDomains")
		key, selector := c.FieldByName("TopologyKey"), c.FieldByName("Selector")
		if !maxSkew.IsValid() || !minDomains.IsValid() || !key.IsValid() || !selector.IsValid() ||
			!maxSkew.CanInt() || !minDomains.CanInt() || key.Kind() != reflect.String || !selector.CanInterface() {
			return nil, false
		}
		sel, ok := selector.Interface().(labels.Selector)
		if !ok {
			return nil, false
		}
		sc := spreadConstraint{maxSkew: int(maxSkew.Int()), minDomains: int(minDomains.Int()), key: key.String()}
		if sel.Matches(podLabels) {
			sc.selfMatch = 1
		}
		view.constraints = append(view.constraints, sc)

		p := paths.Index(i)
		if p.Kind() == reflect.Pointer {
			if p.IsNil() {
				return nil, false
			}
			p = p.Elem()
		}
		if p.Kind() != reflect.Array || p.Len() < 1 {
			return nil, false
		}
		num, value := p.Index(0).FieldByName("MatchNum"), p.Index(0).FieldByName("TopologyValue")
		if !num.IsValid() || !value.IsValid() || !num.CanInt() || value.Kind() != reflect.String {
			return nil, false
		}
		view.minimums = append(view.minimums, int(num.Int()))
		view.minDomains = append(view.minDomains, value.String())
		view.domains = append(view.domains, len(counts[i]))
	}
	return view, true
}

// minimumHeld reports, for each constraint, whether node's domain holds the minimum: a pod
// added there may leave the plugin's minimum stale.
func (v *spreadView) minimumHeld(node *corev1.Node) []bool {
	held := make([]bool, len(v.constraints))
	for i, c := range v.constraints {
		value, ok := node.Labels[c.key]
		held[i] = ok && value == v.minDomains[i]
	}
	return held
}

// minimumStale reports whether the minimum the plugin keeps for a constraint marked in
// check is above the smallest count, after pods were added.
func (v *spreadView) minimumStale(check []bool) bool {
	for i, counts := range v.counts {
		if i >= len(check) || !check[i] || len(counts) == 0 {
			continue
		}
		for _, n := range counts {
			if n < v.minimums[i] {
				return true
			}
		}
	}
	return false
}

// rejects reports whether the plugin's Filter rejects node for the pod whose state this is:
// matching pods in the node's domain + self − minimum > maxSkew for some constraint. A node
// without a constraint's key is left to the Filter.
func (v *spreadView) rejects(node *corev1.Node) bool {
	for i, c := range v.constraints {
		value, ok := node.Labels[c.key]
		if !ok {
			return false
		}
		minimum := v.minimums[i]
		if len(v.counts[i]) < c.minDomains {
			minimum = 0
		}
		if v.counts[i][value]+c.selfMatch-minimum > c.maxSkew {
			return true
		}
	}
	return false
}

// settledSince reports whether every node before rejected stays rejected under v: no
// constraint's minimum, as the Filter takes it (0 while there are fewer domains than
// minDomains), rose. Counts are not compared: the caller knows that only pods were added.
func (v *spreadView) settledSince(before *spreadView) bool {
	if v == nil || before == nil || len(v.minimums) != len(before.minimums) {
		return false
	}
	for i := range v.constraints {
		if v.effectiveMinimum(i) > before.effectiveMinimum(i) {
			return false
		}
	}
	return true
}

// effectiveMinimum is the minimum the Filter uses for constraint i, when the view was read.
func (v *spreadView) effectiveMinimum(i int) int {
	if v.domains[i] < v.constraints[i].minDomains {
		return 0
	}
	return v.minimums[i]
}

// spreadRejection is the status PodTopologySpread's Filter gives a node it rejects for skew.
func spreadRejection() *fwk.Status {
	return fwk.NewStatus(fwk.Unschedulable, podtopologyspread.ErrReasonConstraintsNotMatch).WithPlugin(names.PodTopologySpread)
}

// repairMinimums sets PodTopologySpread's kept minimum of every constraint of state to the
// smallest count and the next one, as its PreFilter would from the same counts, after AddPod
// left it stale (see roleSpread). Only the two "critical paths" change: the counts, which
// AddPod and RemovePod keep exact, stay. It reports false when the state does not have the
// expected shape; then the plugin's PreFilter reruns instead.
func repairMinimums(state fwk.CycleState) bool {
	data, err := state.Read(spreadStateKey)
	if err != nil {
		return false
	}
	v := reflect.ValueOf(data)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return false
	}
	paths, countsField := v.Elem().FieldByName("CriticalPaths"), v.Elem().FieldByName("TpValueToMatchNum")
	if !paths.IsValid() || !countsField.IsValid() || paths.Kind() != reflect.Slice || !countsField.CanInterface() {
		return false
	}
	counts, ok := countsField.Interface().([]map[string]int)
	if !ok || len(counts) != paths.Len() {
		return false
	}
	for i, domains := range counts {
		p := paths.Index(i)
		if p.Kind() != reflect.Pointer || p.IsNil() {
			return false
		}
		p = p.Elem()
		if p.Kind() != reflect.Array || p.Len() != 2 {
			return false
		}
		// The plugin starts both paths at MaxInt32 and lowers them domain by domain.
		type path struct {
			value string
			num   int
		}
		best := [2]path{{num: math.MaxInt32}, {num: math.MaxInt32}}
		for value, num := range domains {
			switch {
			case num < best[0].num || (num == best[0].num && value < best[0].value):
				best[1], best[0] = best[0], path{value, num}
			case num < best[1].num || (num == best[1].num && value < best[1].value):
				best[1] = path{value, num}
			}
		}
		for j := range 2 {
			value, num := p.Index(j).FieldByName("TopologyValue"), p.Index(j).FieldByName("MatchNum")
			if !value.CanSet() || !num.CanSet() || value.Kind() != reflect.String || !num.CanInt() {
				return false
			}
			value.SetString(best[j].value)
			num.SetInt(int64(best[j].num))
		}
	}
	return true
}
