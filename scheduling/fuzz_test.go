package scheduling

import (
	"math"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

var fuzzOperators = []corev1.NodeSelectorOperator{
	corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist,
	corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, NodeSelectorOpGte, NodeSelectorOpLte,
}

// fixedProbes always joins the fuzzer's own values: integers around typical bounds, a
// non-canonical spelling and a non-integer.
var fixedProbes = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "05", "x"}

func splitValues(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// allows reports whether a node with label value v (or, when present is false, without the
// label) meets r.
func allows(r *Requirement, v string, present bool) bool {
	if !present {
		return r.AllowsAbsent()
	}
	return r.Has(v)
}

// kubeMatches asks kube-scheduler's own node affinity matcher whether a node with label value v
// (or without the label) meets all exprs. Gte and Lte, which it does not know, become Gt and Lt;
// ok is false when that is impossible.
func kubeMatches(t *testing.T, exprs []corev1.NodeSelectorRequirement, v string, present bool) (match, ok bool) {
	translated := make([]corev1.NodeSelectorRequirement, len(exprs))
	for i, e := range exprs {
		translated[i] = e
		if e.Operator != NodeSelectorOpGte && e.Operator != NodeSelectorOpLte || len(e.Values) != 1 {
			continue
		}
		n, err := strconv.ParseInt(e.Values[0], 10, 64)
		if err != nil {
			return false, false
		}
		if e.Operator == NodeSelectorOpGte {
			if n == math.MinInt64 {
				return false, false
			}
			translated[i] = corev1.NodeSelectorRequirement{Key: e.Key, Operator: corev1.NodeSelectorOpGt, Values: []string{strconv.FormatInt(n-1, 10)}}
		} else {
			if n == math.MaxInt64 {
				return false, false
			}
			translated[i] = corev1.NodeSelectorRequirement{Key: e.Key, Operator: corev1.NodeSelectorOpLt, Values: []string{strconv.FormatInt(n+1, 10)}}
		}
	}
	selector, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: translated}}})
	if err != nil {
		// Input Kubernetes rejects (NotIn or In without values, Exists with values, ...): the
		// algebra reads NodePool spellings such as NotIn [] its own way, so there is no oracle.
		return false, false
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}}}
	if present {
		node.Labels[key] = v
	}
	return selector.Match(node), true
}

// FuzzIntersection checks, for random requirement pairs and random label values, that
// intersection is commutative, that a∩b allows v exactly when a and b both do, that the
// allocation-free intersects agrees with the built intersection, and that single expressions
// and the exact back-conversion agree with kube-scheduler's node affinity matcher.
func FuzzIntersection(f *testing.F) {
	f.Add(uint8(0), "1,7", uint8(4), "3", "")
	f.Add(uint8(4), "5", uint8(7), "5", "5,05")
	f.Add(uint8(6), "5", uint8(7), "5", "")
	f.Add(uint8(1), "7", uint8(2), "", "a,7")
	f.Add(uint8(3), "", uint8(2), "", "")
	f.Add(uint8(1), "5,6,x", uint8(5), "7", "")
	f.Add(uint8(6), "9223372036854775806", uint8(1), "9223372036854775807", "9223372036854775807")
	f.Fuzz(func(t *testing.T, opA uint8, valuesA string, opB uint8, valuesB string, extraProbes string) {
		exprA := corev1.NodeSelectorRequirement{Key: key, Operator: fuzzOperators[int(opA)%len(fuzzOperators)], Values: splitValues(valuesA)}
		exprB := corev1.NodeSelectorRequirement{Key: key, Operator: fuzzOperators[int(opB)%len(fuzzOperators)], Values: splitValues(valuesB)}
		a := NewRequirement(key, exprA.Operator, exprA.Values...)
		b := NewRequirement(key, exprB.Operator, exprB.Values...)
		ab, ba := a.Intersection(b), b.Intersection(a)

		if ab.describe() != ba.describe() || ab.Len() != ba.Len() {
			t.Fatalf("not commutative: %s ∩ %s = %s (Len %d), reversed %s (Len %d)", a.describe(), b.describe(), ab.describe(), ab.Len(), ba.describe(), ba.Len())
		}
		if a.intersects(b) != ab.Satisfiable() || b.intersects(a) != ab.Satisfiable() {
			t.Fatalf("%s ∩ %s: intersects %v, but the intersection %s has Satisfiable %v", a.describe(), b.describe(), a.intersects(b), ab.describe(), ab.Satisfiable())
		}
		if v := ab.Any(); v != "" && !ab.Has(v) {
			t.Fatalf("%s: Any() = %q, which it does not allow", ab.describe(), v)
		}
		if ab.Len() == 0 && ab.Any() != "" {
			t.Fatalf("%s: Len 0 but Any() = %q", ab.describe(), ab.Any())
		}

		probes := append(append(splitValues(extraProbes), fixedProbes...), exprA.Values...)
		probes = append(probes, exprB.Values...)
		for _, v := range append(probes, "") {
			present := v != ""
			if present && len(validation.IsValidLabelValue(v)) > 0 {
				continue // no node can carry it
			}
			wantAB := allows(a, v, present) && allows(b, v, present)
			if allows(ab, v, present) != wantAB || allows(ba, v, present) != wantAB {
				t.Fatalf("%s ∩ %s = %s: value %q (present %v) allowed %v, want %v", a.describe(), b.describe(), ab.describe(), v, present, allows(ab, v, present), wantAB)
			}
			if !present || ab.Len() > 0 || len(v) > 1 && v[0] == '0' {
				// Len counts canonical values only; a non-canonical spelling may match an empty count.
			} else if allows(ab, v, present) {
				t.Fatalf("%s: Len 0 but allows %q", ab.describe(), v)
			}
			for _, c := range []struct {
				r     *Requirement
				exprs []corev1.NodeSelectorRequirement
			}{{a, []corev1.NodeSelectorRequirement{exprA}}, {ab, ab.NodeSelectorRequirements()}} {
				if len(c.exprs) == 0 {
					if !allows(c.r, v, present) {
						t.Fatalf("%s has no expressions but refuses %q", c.r.describe(), v)
					}
					continue
				}
				if match, ok := kubeMatches(t, c.exprs, v, present); ok && match != allows(c.r, v, present) {
					t.Fatalf("%v: kube-scheduler matches %q (present %v): %v, Requirement %s says %v", c.exprs, v, present, match, c.r.describe(), allows(c.r, v, present))
				}
			}
		}
	})
}
