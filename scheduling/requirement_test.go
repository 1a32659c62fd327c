package scheduling

import (
	"math"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const key = "example.com/k"

func req(op corev1.NodeSelectorOperator, values ...string) *Requirement {
	return NewRequirement(key, op, values...)
}

// One representative per operator, chosen so that bounds and values interact.
var representatives = map[corev1.NodeSelectorOperator]*Requirement{
	corev1.NodeSelectorOpIn:           req(corev1.NodeSelectorOpIn, "1", "7"),
	corev1.NodeSelectorOpNotIn:        req(corev1.NodeSelectorOpNotIn, "7"),
	corev1.NodeSelectorOpExists:       req(corev1.NodeSelectorOpExists),
	corev1.NodeSelectorOpDoesNotExist: req(corev1.NodeSelectorOpDoesNotExist),
	corev1.NodeSelectorOpGt:           req(corev1.NodeSelectorOpGt, "3"),
	corev1.NodeSelectorOpLt:           req(corev1.NodeSelectorOpLt, "7"),
	NodeSelectorOpGte:                 req(NodeSelectorOpGte, "5"),
	NodeSelectorOpLte:                 req(NodeSelectorOpLte, "5"),
}

// Expected Len of open-ended sets: unbounded for strings, exact counts of integers up to MaxInt64.
const (
	unbounded = math.MaxInt
	above3    = math.MaxInt64 - 3 // 4 .. MaxInt64
	from5     = math.MaxInt64 - 4 // 5 .. MaxInt64
)

// TestIntersectionOperatorPairs covers all 8×8 operator pairs: each unordered pair is listed once
// and checked in both orders, which must agree.
func TestIntersectionOperatorPairs(t *testing.T) {
	const (
		In  = corev1.NodeSelectorOpIn
		Not = corev1.NodeSelectorOpNotIn
		Ex  = corev1.NodeSelectorOpExists
		DNE = corev1.NodeSelectorOpDoesNotExist
		Gt  = corev1.NodeSelectorOpGt
		Lt  = corev1.NodeSelectorOpLt
		Gte = NodeSelectorOpGte
		Lte = NodeSelectorOpLte
	)
	tests := []struct {
		a, b        corev1.NodeSelectorOperator
		want        string // describe() of the intersection
		wantLen     int
		compatible  bool
		wantAllowed []string // among probe values
	}{
		{In, In, "In [1 7]", 2, true, []string{"1", "7"}},
		{In, Not, "In [1]", 1, true, []string{"1"}},
		{In, Ex, "In [1 7]", 2, true, []string{"1", "7"}},
		{In, DNE, "In []", 0, false, nil},
		{In, Gt, "In [7]", 1, true, []string{"7"}},
		{In, Lt, "In [1]", 1, true, []string{"1"}},
		{In, Gte, "In [7]", 1, true, []string{"7"}},
		{In, Lte, "In [1]", 1, true, []string{"1"}},
		{Not, Not, "NotIn [7]", unbounded, true, []string{"1", "4", "5", "6", "x", absent}},
		{Not, Ex, "Exists and NotIn [7]", unbounded, true, []string{"1", "4", "5", "6", "x"}},
		{Not, DNE, "DoesNotExist", 0, true, []string{absent}},
		{Not, Gt, "Gt 3 and NotIn [7]", above3 - 1, true, []string{"4", "5", "6"}},
		{Not, Lt, "Lt 7", 7, true, []string{"1", "4", "5", "6"}},
		{Not, Gte, "Gte 5 and NotIn [7]", from5 - 1, true, []string{"5", "6"}},
		{Not, Lte, "Lte 5", 6, true, []string{"1", "4", "5"}},
		{Ex, Ex, "Exists", unbounded, true, []string{"1", "4", "5", "6", "7", "x"}},
		{Ex, DNE, "In []", 0, false, nil},
		{Ex, Gt, "Gt 3", above3, true, []string{"4", "5", "6", "7"}},
		{Ex, Lt, "Lt 7", 7, true, []string{"1", "4", "5", "6"}},
		{Ex, Gte, "Gte 5", from5, true, []string{"5", "6", "7"}},
		{Ex, Lte, "Lte 5", 6, true, []string{"1", "4", "5"}},
		{DNE, DNE, "DoesNotExist", 0, true, []string{absent}},
		{DNE, Gt, "In []", 0, false, nil},
		{DNE, Lt, "In []", 0, false, nil},
		{DNE, Gte, "In []", 0, false, nil},
		{DNE, Lte, "In []", 0, false, nil},
		{Gt, Gt, "Gt 3", above3, true, []string{"4", "5", "6", "7"}},
		{Gt, Lt, "Gt 3 and Lt 7", 3, true, []string{"4", "5", "6"}},
		{Gt, Gte, "Gte 5", from5, true, []string{"5", "6", "7"}},
		{Gt, Lte, "Gt 3 and Lte 5", 2, true, []string{"4", "5"}},
		{Lt, Lt, "Lt 7", 7, true, []string{"1", "4", "5", "6"}},
		{Lt, Gte, "Gte 5 and Lt 7", 2, true, []string{"5", "6"}},
		{Lt, Lte, "Lte 5", 6, true, []string{"1", "4", "5"}},
		{Gte, Gte, "Gte 5", from5, true, []string{"5", "6", "7"}},
		{Gte, Lte, "Gte 5 and Lte 5", 1, true, []string{"5"}},
		{Lte, Lte, "Lte 5", 6, true, []string{"1", "4", "5"}},
	}
	seen := map[[2]corev1.NodeSelectorOperator]bool{}
	for _, tt := range tests {
		for _, pair := range [][2]*Requirement{
			{representatives[tt.a], representatives[tt.b]},
			{representatives[tt.b], representatives[tt.a]},
		} {
			a, b := pair[0], pair[1]
			seen[[2]corev1.NodeSelectorOperator{a.Operator(), b.Operator()}] = true
			name := a.describe() + " ∩ " + b.describe()
			t.Run(name, func(t *testing.T) {
				got := a.Intersection(b)
				if got.describe() != tt.want {
					t.Errorf("intersection = %q, want %q", got.describe(), tt.want)
				}
				if got.Len() != tt.wantLen {
					t.Errorf("Len() = %d, want %d", got.Len(), tt.wantLen)
				}
				if got.Satisfiable() != tt.compatible || a.intersects(b) != tt.compatible {
					t.Errorf("Satisfiable() = %v, intersects = %v, want %v", got.Satisfiable(), a.intersects(b), tt.compatible)
				}
				if allowed := allowedProbes(got); !slices.Equal(allowed, tt.wantAllowed) {
					t.Errorf("allows %v, want %v", allowed, tt.wantAllowed)
				}
				err := NewRequirements(a).Compatible(NewRequirements(b), WellKnownLabels)
				if (err == nil) != tt.compatible {
					t.Errorf("Compatible() = %v, want compatible %v", err, tt.compatible)
				}
			})
		}
	}
	if len(seen) != 64 {
		t.Errorf("covered %d operator pairs, want 64", len(seen))
	}
}

// absent stands for a node without the label among probe values.
const absent = "<absent>"

var probes = []string{"1", "4", "5", "6", "7", "x", absent}

func allowedProbes(r *Requirement) []string {
	var out []string
	for _, p := range probes {
		if p == absent && r.AllowsAbsent() || p != absent && r.Has(p) {
			out = append(out, p)
		}
	}
	return out
}

func TestIntersectionBounds(t *testing.T) {
	tests := []struct {
		name    string
		reqs    []*Requirement
		want    string
		wantLen int
		wantAny string
	}{
		{"Gt 5 ∩ Lte 5 is empty", []*Requirement{req(corev1.NodeSelectorOpGt, "5"), req(NodeSelectorOpLte, "5")}, "In []", 0, ""},
		{"Gte 5 ∩ Lte 5 is {5}", []*Requirement{req(NodeSelectorOpGte, "5"), req(NodeSelectorOpLte, "5")}, "Gte 5 and Lte 5", 1, "5"},
		{"In [1 7] ∩ Gt 3 is {7}", []*Requirement{req(corev1.NodeSelectorOpIn, "1", "7"), req(corev1.NodeSelectorOpGt, "3")}, "In [7]", 1, "7"},
		{"Gt 3 ∩ Lt 4 is empty", []*Requirement{req(corev1.NodeSelectorOpGt, "3"), req(corev1.NodeSelectorOpLt, "4")}, "In []", 0, ""},
		{"Gte 5 ∩ Lte 5 ∩ NotIn [5] is empty", []*Requirement{req(NodeSelectorOpGte, "5"), req(NodeSelectorOpLte, "5"), req(corev1.NodeSelectorOpNotIn, "5")}, "Gte 5 and Lte 5 and NotIn [5]", 0, ""},
		{"exclusions outside bounds are dropped", []*Requirement{req(corev1.NodeSelectorOpNotIn, "2", "9", "x"), req(NodeSelectorOpGte, "3"), req(NodeSelectorOpLte, "8")}, "Gte 3 and Lte 8", 6, "3"},
		{"Any skips exclusions", []*Requirement{req(NodeSelectorOpGte, "3"), req(corev1.NodeSelectorOpNotIn, "3", "4")}, "Gte 3 and NotIn [3 4]", from5, "5"},
		{"tighter bound wins", []*Requirement{req(corev1.NodeSelectorOpGt, "3"), req(corev1.NodeSelectorOpGt, "8"), req(corev1.NodeSelectorOpLt, "20"), req(NodeSelectorOpLte, "10")}, "Gt 8 and Lte 10", 2, "9"},
		{"inclusive spelling wins a tie", []*Requirement{req(corev1.NodeSelectorOpGt, "4"), req(NodeSelectorOpGte, "5")}, "Gte 5", from5, "5"},
		{"Lt 0 is empty", []*Requirement{req(corev1.NodeSelectorOpLt, "0")}, "In []", 0, ""},
		{"Lt 1 is {0}", []*Requirement{req(corev1.NodeSelectorOpLt, "1")}, "Lt 1", 1, "0"},
		{"Gt max int is empty", []*Requirement{req(corev1.NodeSelectorOpGt, "9223372036854775807")}, "In []", 0, ""},
		{"Gte 0 counts every integer", []*Requirement{req(NodeSelectorOpGte, "0")}, "Gte 0", unbounded, "0"},
		{"non-integer bound matches nothing", []*Requirement{req(corev1.NodeSelectorOpGt, "five")}, "In []", 0, ""},
		{"bound with two values matches nothing", []*Requirement{req(corev1.NodeSelectorOpLt, "1", "2")}, "In []", 0, ""},
		{"unknown operator matches nothing", []*Requirement{req("Near", "1")}, "In []", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.reqs[0]
			for _, r := range tt.reqs[1:] {
				got = got.Intersection(r)
			}
			if got.describe() != tt.want {
				t.Errorf("intersection = %q, want %q", got.describe(), tt.want)
			}
			if got.Len() != tt.wantLen {
				t.Errorf("Len() = %d, want %d", got.Len(), tt.wantLen)
			}
			if got.Any() != tt.wantAny {
				t.Errorf("Any() = %q, want %q", got.Any(), tt.wantAny)
			}
		})
	}
}

func TestHasIntegerSpellings(t *testing.T) {
	gte5 := req(NodeSelectorOpGte, "5")
	for value, want := range map[string]bool{
		"5": true, "05": true, "12": true, "4": false, "-6": false, "+6": false, "5.0": false, "": false,
		"99999999999999999999": false, // overflows int64: kube-scheduler cannot parse it either
	} {
		if got := gte5.Has(value); got != want {
			t.Errorf("Gte 5 Has(%q) = %v, want %v", value, got, want)
		}
	}
}

func TestAny(t *testing.T) {
	if got := req(corev1.NodeSelectorOpIn, "b", "a", "c").Any(); got != "a" {
		t.Errorf("In Any() = %q, want the smallest, a", got)
	}
	notIn := req(corev1.NodeSelectorOpNotIn, "a")
	first, second := notIn.Any(), notIn.Any()
	if first == "" || !notIn.Has(first) || !notIn.Has(second) || first == second {
		t.Errorf("NotIn Any() = %q then %q, want two distinct allowed generated values", first, second)
	}
	if got := req(corev1.NodeSelectorOpDoesNotExist).Any(); got != "" {
		t.Errorf("DoesNotExist Any() = %q, want none", got)
	}
	if got := req(corev1.NodeSelectorOpLt, "9").Intersection(req(corev1.NodeSelectorOpNotIn, "0", "1")).Any(); got != "2" {
		t.Errorf("Lt 9 NotIn [0 1] Any() = %q, want 2", got)
	}
}

func TestOperatorAndNodeSelectorRequirements(t *testing.T) {
	tests := []struct {
		name  string
		r     *Requirement
		op    corev1.NodeSelectorOperator
		exprs []corev1.NodeSelectorRequirement
	}{
		{"In", req(corev1.NodeSelectorOpIn, "b", "a"), corev1.NodeSelectorOpIn,
			[]corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}},
		{"NotIn", req(corev1.NodeSelectorOpNotIn, "a"), corev1.NodeSelectorOpNotIn,
			[]corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a"}}}},
		{"Exists", req(corev1.NodeSelectorOpExists), corev1.NodeSelectorOpExists,
			[]corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpExists}}},
		{"DoesNotExist", req(corev1.NodeSelectorOpDoesNotExist), corev1.NodeSelectorOpDoesNotExist,
			[]corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpDoesNotExist}}},
		{"Gt", req(corev1.NodeSelectorOpGt, "3"), corev1.NodeSelectorOpGt,
			[]corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpGt, Values: []string{"3"}}}},
		{"Lt", req(corev1.NodeSelectorOpLt, "3"), corev1.NodeSelectorOpLt,
			[]corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpLt, Values: []string{"3"}}}},
		{"Gte", req(NodeSelectorOpGte, "3"), NodeSelectorOpGte,
			[]corev1.NodeSelectorRequirement{{Key: key, Operator: NodeSelectorOpGte, Values: []string{"3"}}}},
		{"Lte", req(NodeSelectorOpLte, "3"), NodeSelectorOpLte,
			[]corev1.NodeSelectorRequirement{{Key: key, Operator: NodeSelectorOpLte, Values: []string{"3"}}}},
		{"unsatisfiable", req(corev1.NodeSelectorOpIn), corev1.NodeSelectorOpIn,
			[]corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{}}}},
		{"unconstrained", NewRequirements().Get(key), corev1.NodeSelectorOpExists, nil},
		{"Exists and NotIn", req(corev1.NodeSelectorOpExists).Intersection(req(corev1.NodeSelectorOpNotIn, "a")), corev1.NodeSelectorOpNotIn,
			[]corev1.NodeSelectorRequirement{
				{Key: key, Operator: corev1.NodeSelectorOpExists},
				{Key: key, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a"}},
			}},
		{"bounds and exclusions", req(corev1.NodeSelectorOpGt, "3").Intersection(req(corev1.NodeSelectorOpLt, "9")).Intersection(req(corev1.NodeSelectorOpNotIn, "5")), corev1.NodeSelectorOpGt,
			[]corev1.NodeSelectorRequirement{
				{Key: key, Operator: corev1.NodeSelectorOpGt, Values: []string{"3"}},
				{Key: key, Operator: corev1.NodeSelectorOpLt, Values: []string{"9"}},
				{Key: key, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"5"}},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Operator(); got != tt.op {
				t.Errorf("Operator() = %s, want %s", got, tt.op)
			}
			got := tt.r.NodeSelectorRequirements()
			if !slices.EqualFunc(got, tt.exprs, equalExpr) {
				t.Errorf("NodeSelectorRequirements() = %v, want %v", got, tt.exprs)
			}
			// The expressions round-trip to a requirement allowing the same probes.
			back := FromNodeSelectorRequirements(got...).Get(key)
			if !slices.Equal(allowedProbes(back), allowedProbes(tt.r)) {
				t.Errorf("round trip allows %v, want %v", allowedProbes(back), allowedProbes(tt.r))
			}
		})
	}
}

func equalExpr(a, b corev1.NodeSelectorRequirement) bool {
	return a.Key == b.Key && a.Operator == b.Operator && slices.Equal(a.Values, b.Values)
}

func TestMinValuesIntersection(t *testing.T) {
	two, five := 2, 5
	a := req(corev1.NodeSelectorOpExists)
	a.MinValues = &five
	b := req(corev1.NodeSelectorOpIn, "m5", "c5", "r5")
	b.MinValues = &two
	for _, got := range []*Requirement{a.Intersection(b), b.Intersection(a)} {
		if got.MinValues == nil || *got.MinValues != 5 {
			t.Errorf("MinValues = %v, want the larger, 5", got.MinValues)
		}
	}
}

func TestStringShortensLongLists(t *testing.T) {
	values := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
	got := NewRequirement("node.kubernetes.io/instance-type", corev1.NodeSelectorOpIn, values...).String()
	want := "node.kubernetes.io/instance-type In [a b c d e f g h i j ... and 2 more]"
	if got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestLargeSets crosses smallSet, where lookups switch from scanning to hashing.
func TestLargeSets(t *testing.T) {
	var many, evens []string
	for i := range 30 {
		many = append(many, strconv.Itoa(i))
		if i%2 == 0 {
			evens = append(evens, strconv.Itoa(i))
		}
	}
	in := req(corev1.NodeSelectorOpIn, many...)
	notEvens := req(corev1.NodeSelectorOpNotIn, evens...)
	got := in.Intersection(notEvens)
	if got.Len() != 15 || got.Has("4") || !got.Has("5") || got.Has("31") {
		t.Errorf("In [0..29] ∩ NotIn [evens] = %s", got)
	}
	if got := notEvens.Intersection(req(corev1.NodeSelectorOpLt, "20")); got.Len() != 10 || got.Has("18") || !got.Has("19") {
		t.Errorf("NotIn [evens] ∩ Lt 20 = %s, Len %d", got, got.Len())
	}
	if !in.intersects(req(corev1.NodeSelectorOpIn, "29", "x")) || in.intersects(req(corev1.NodeSelectorOpIn, "30", "x")) {
		t.Errorf("intersects is wrong on a large set")
	}
	if got := req(corev1.NodeSelectorOpIn, "b", "a", "b").Values(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Values() = %v, want sorted and deduplicated", got)
	}
}
