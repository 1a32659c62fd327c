package scheduling

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

const (
	zone = corev1.LabelTopologyZone
	team = "company.com/team"
)

func TestCompatible(t *testing.T) {
	in := corev1.NodeSelectorOpIn
	tests := []struct {
		name           string
		nodePool, pod  Requirements
		allowUndefined sets.Set[string]
		wantErr        string // "" for compatible
	}{
		{
			name:     "shared key with overlapping values",
			nodePool: NewRequirements(NewRequirement(zone, in, "us-west-2a", "us-west-2b")),
			pod:      NewRequirements(NewRequirement(zone, in, "us-west-2b")),
		},
		{
			name:     "shared key without overlap names both sides",
			nodePool: NewRequirements(NewRequirement(zone, in, "us-west-2c", "us-west-2b")),
			pod:      NewRequirements(NewRequirement(zone, in, "us-west-2a")),
			wantErr:  "key topology.kubernetes.io/zone: requires In [us-west-2a], but only In [us-west-2b us-west-2c] is allowed",
		},
		{
			name:           "well-known key the NodePool leaves open",
			nodePool:       NewRequirements(),
			pod:            NewRequirements(NewRequirement(zone, in, "us-west-2a")),
			allowUndefined: WellKnownLabels,
		},
		{
			name:           "well-known key the pod cannot satisfy itself",
			nodePool:       NewRequirements(),
			pod:            NewRequirements(NewRequirement(corev1.LabelInstanceTypeStable, in)),
			allowUndefined: WellKnownLabels,
			wantErr:        "key node.kubernetes.io/instance-type: requires In [], which no value satisfies",
		},
		{
			name:     "well-known key on an existing node's labels must be defined",
			nodePool: FromLabels(map[string]string{corev1.LabelArchStable: "amd64"}),
			pod:      NewRequirements(NewRequirement(zone, in, "us-west-2a")),
			wantErr:  "key topology.kubernetes.io/zone: requires In [us-west-2a], but the label is undefined",
		},
		{
			name:           "custom key the NodePool does not define",
			nodePool:       NewRequirements(),
			pod:            NewRequirements(NewRequirement(team, in, "a")),
			allowUndefined: WellKnownLabels,
			wantErr:        "key company.com/team: requires In [a], but the label is undefined and not well-known",
		},
		{
			name:           "custom key the pod requires to exist",
			nodePool:       NewRequirements(),
			pod:            NewRequirements(NewRequirement(team, corev1.NodeSelectorOpExists)),
			allowUndefined: WellKnownLabels,
			wantErr:        "key company.com/team: requires Exists, but the label is undefined",
		},
		{
			name:           "custom key the pod requires absent with NotIn",
			nodePool:       NewRequirements(),
			pod:            NewRequirements(NewRequirement(team, corev1.NodeSelectorOpNotIn, "a")),
			allowUndefined: WellKnownLabels,
		},
		{
			name:           "custom key the pod requires absent with DoesNotExist",
			nodePool:       NewRequirements(),
			pod:            NewRequirements(NewRequirement(team, corev1.NodeSelectorOpDoesNotExist)),
			allowUndefined: WellKnownLabels,
		},
		{
			name:           "custom key the NodePool declares with Exists",
			nodePool:       NewRequirements(NewRequirement(team, corev1.NodeSelectorOpExists)),
			pod:            NewRequirements(NewRequirement(team, in, "team-a")),
			allowUndefined: WellKnownLabels,
		},
		{
			name:           "custom key in the NodePool's labels",
			nodePool:       FromLabels(map[string]string{team: "team-b"}),
			pod:            NewRequirements(NewRequirement(team, in, "team-a")),
			allowUndefined: WellKnownLabels,
			wantErr:        "key company.com/team: requires In [team-a], but only In [team-b] is allowed",
		},
		{
			name:           "NodePool forbids a custom key the pod does not mention",
			nodePool:       NewRequirements(NewRequirement(team, corev1.NodeSelectorOpDoesNotExist)),
			pod:            NewRequirements(NewRequirement(zone, in, "us-west-2a")),
			allowUndefined: WellKnownLabels,
		},
		{
			name:     "pod NotIn meets NodePool DoesNotExist: a node without the label",
			nodePool: NewRequirements(NewRequirement(team, corev1.NodeSelectorOpDoesNotExist)),
			pod:      NewRequirements(NewRequirement(team, corev1.NodeSelectorOpNotIn, "a")),
		},
		{
			name: "every offending key is reported, sorted",
			nodePool: NewRequirements(
				NewRequirement(zone, in, "us-west-2b"),
				NewRequirement(corev1.LabelArchStable, in, "arm64"),
			),
			pod: NewRequirements(
				NewRequirement(zone, in, "us-west-2a"),
				NewRequirement(corev1.LabelArchStable, in, "amd64"),
			),
			allowUndefined: WellKnownLabels,
			wantErr: "key kubernetes.io/arch: requires In [amd64], but only In [arm64] is allowed\n" +
				"key topology.kubernetes.io/zone: requires In [us-west-2a], but only In [us-west-2b] is allowed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.nodePool.Compatible(tt.pod, tt.allowUndefined)
			checkErr(t, err, tt.wantErr)
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("error = %v, want none", err)
	case want != "" && err == nil:
		t.Errorf("no error, want %q", want)
	case want != "" && !startsWith(err.Error(), want):
		t.Errorf("error = %q, want it to start with %q", err, want)
	}
}

func startsWith(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

func TestIntersectsOnlyChecksSharedKeys(t *testing.T) {
	a := NewRequirements(NewRequirement(team, corev1.NodeSelectorOpIn, "a"), NewRequirement(zone, corev1.NodeSelectorOpIn, "z1"))
	b := NewRequirements(NewRequirement(zone, corev1.NodeSelectorOpIn, "z1", "z2"), NewRequirement("other", corev1.NodeSelectorOpExists))
	if err := a.Intersects(b); err != nil {
		t.Errorf("Intersects() = %v, want nil", err)
	}
	c := NewRequirements(NewRequirement(zone, corev1.NodeSelectorOpNotIn, "z1"))
	checkErr(t, a.Intersects(c), "key topology.kubernetes.io/zone: requires NotIn [z1], but only In [z1] is allowed")
}

func TestAddIntersectsSameKey(t *testing.T) {
	r := NewRequirements(NewRequirement(zone, corev1.NodeSelectorOpIn, "a", "b"))
	shared := r[zone]
	r.Add(NewRequirement(zone, corev1.NodeSelectorOpNotIn, "a"))
	if got := r.Get(zone).describe(); got != "In [b]" {
		t.Errorf("after Add, zone = %q, want In [b]", got)
	}
	if got := shared.describe(); got != "In [a b]" {
		t.Errorf("Add changed the requirement it replaced: %q", got)
	}
	if !r.Has(zone) || r.Has(team) {
		t.Errorf("Has: zone %v, team %v; want true, false", r.Has(zone), r.Has(team))
	}
	if got := r.Get(team); !got.AllowsAbsent() || !got.Has("anything") || got.Key != team {
		t.Errorf("Get on an absent key = %v, want an unconstrained requirement", got)
	}
}

func TestCloneIsIndependent(t *testing.T) {
	r := NewRequirements(NewRequirement(zone, corev1.NodeSelectorOpIn, "a", "b"))
	c := r.Clone()
	c.Add(NewRequirement(zone, corev1.NodeSelectorOpIn, "a"), NewRequirement(team, corev1.NodeSelectorOpExists))
	if got := r.String(); got != "topology.kubernetes.io/zone In [a b]" {
		t.Errorf("original changed to %q", got)
	}
	if got := c.String(); got != "company.com/team Exists, topology.kubernetes.io/zone In [a]" {
		t.Errorf("clone = %q", got)
	}
	if got := c.Keys(); !slices.Equal(got, []string{team, zone}) {
		t.Errorf("Keys() = %v", got)
	}
}

func TestLabels(t *testing.T) {
	r := NewRequirements(
		NewRequirement(zone, corev1.NodeSelectorOpIn, "us-west-2a"),
		NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64", "arm64"),
		NewRequirement(team, corev1.NodeSelectorOpExists),
		NewRequirement("gen", NodeSelectorOpGte, "5"),
		NewRequirement("gen", NodeSelectorOpLte, "5"),
		NewRequirement("no-label", corev1.NodeSelectorOpDoesNotExist),
		NewRequirement("not-in", corev1.NodeSelectorOpNotIn, "x"),
	)
	want := map[string]string{zone: "us-west-2a", "gen": "5"}
	if got := r.Labels(); !maps.Equal(got, want) {
		t.Errorf("Labels() = %v, want %v", got, want)
	}
}

func TestValidateMinValues(t *testing.T) {
	withMin := func(n int, r *Requirement) *Requirement { r.MinValues = &n; return r }
	family := awsInstanceFamily
	tests := []struct {
		name    string
		reqs    Requirements
		wantErr string
	}{
		{"enough values", NewRequirements(withMin(2, NewRequirement(family, corev1.NodeSelectorOpIn, "m5", "c5"))), ""},
		{"Exists is unbounded", NewRequirements(withMin(50, NewRequirement(family, corev1.NodeSelectorOpExists))), ""},
		{"too few values", NewRequirements(withMin(3, NewRequirement(family, corev1.NodeSelectorOpIn, "m5", "c5"))),
			"key karpenter.k8s.aws/instance-family: minValues 3, but In [c5 m5] allows 2"},
		{"narrowed by a pod below the NodePool's minimum", NewRequirements(
			withMin(2, NewRequirement(family, corev1.NodeSelectorOpIn, "m5", "c5", "r5")),
			NewRequirement(family, corev1.NodeSelectorOpIn, "m5"),
		), "key karpenter.k8s.aws/instance-family: minValues 2, but In [m5] allows 1"},
		{"largest minValues of a repeated key wins", NewRequirements(
			withMin(7, NewRequirement(family, corev1.NodeSelectorOpExists)),
			withMin(3, NewRequirement(family, corev1.NodeSelectorOpIn, "m5", "m5d", "c5", "c5d", "c4", "r4")),
		), "key karpenter.k8s.aws/instance-family: minValues 7, but In [c4 c5 c5d m5 m5d r4] allows 6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, tt.reqs.ValidateMinValues(), tt.wantErr)
		})
	}
}

const awsInstanceFamily = "karpenter.k8s.aws/instance-family"
