package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestNormalizeLabelKey(t *testing.T) {
	tests := map[string]string{
		"beta.kubernetes.io/arch":                  corev1.LabelArchStable,
		"beta.kubernetes.io/os":                    corev1.LabelOSStable,
		"beta.kubernetes.io/instance-type":         corev1.LabelInstanceTypeStable,
		"failure-domain.beta.kubernetes.io/zone":   corev1.LabelTopologyZone,
		"failure-domain.beta.kubernetes.io/region": corev1.LabelTopologyRegion,
		corev1.LabelTopologyZone:                   corev1.LabelTopologyZone,
		"company.com/team":                         "company.com/team",
	}
	for in, want := range tests {
		if got := NormalizeLabelKey(in); got != want {
			t.Errorf("NormalizeLabelKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWellKnownLabels(t *testing.T) {
	for _, k := range []string{
		corev1.LabelArchStable, corev1.LabelOSStable, corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone,
		corev1.LabelTopologyRegion, corev1.LabelHostname, corev1.LabelWindowsBuild,
		"karpenter.sh/nodepool", "karpenter.sh/capacity-type",
	} {
		if !IsWellKnownLabel(k) {
			t.Errorf("%s is not well-known", k)
		}
	}
	// Karpenter's docs warn that this look-alike of instance-family is a custom label.
	for _, k := range []string{"node.kubernetes.io/instance-family", "karpenter.sh/initialized", "company.com/team"} {
		if IsWellKnownLabel(k) {
			t.Errorf("%s is well-known", k)
		}
	}
}

func TestRegisterWellKnownLabels(t *testing.T) {
	const key = "example.com/instance-family"
	if IsWellKnownLabel(key) {
		t.Fatalf("%s is well-known before a provider registers it", key)
	}
	RegisterWellKnownLabels(key)
	t.Cleanup(func() { WellKnownLabels.Delete(key) })
	if !IsWellKnownLabel(key) {
		t.Errorf("%s is not well-known after RegisterWellKnownLabels", key)
	}
	if err := IsRestrictedLabel(key); err != nil {
		t.Errorf("IsRestrictedLabel(%q) = %v after registration", key, err)
	}
}

// ebsZoneKey is the EBS CSI driver's zone key, which the AWS and kwok providers register as
// an alias of the zone; the package's tests register it as they do.
const ebsZoneKey = "topology.ebs.csi.aws.com/zone"

func init() { RegisterLabelAlias(ebsZoneKey, corev1.LabelTopologyZone) }

func TestRegisterLabelAlias(t *testing.T) {
	const alias = "example.com/zone"
	if got := NormalizeLabelKey(alias); got != alias {
		t.Fatalf("NormalizeLabelKey(%q) = %q before a provider registers it", alias, got)
	}
	if IsLabelAlias(alias) {
		t.Fatalf("%s is an alias before a provider registers it", alias)
	}
	RegisterLabelAlias(alias, corev1.LabelTopologyZone)
	t.Cleanup(func() { delete(labelTranslations, alias) })
	if got := NormalizeLabelKey(alias); got != corev1.LabelTopologyZone {
		t.Errorf("NormalizeLabelKey(%q) = %q, want the zone", alias, got)
	}
	if got := LabelAliases(map[string]string{corev1.LabelTopologyZone: "zone-a"})[alias]; got != "zone-a" {
		t.Errorf("LabelAliases sets %s = %q, want zone-a", alias, got)
	}
}

func TestIsRestrictedLabel(t *testing.T) {
	tests := []struct {
		key        string
		restricted bool
	}{
		{"company.com/team", false},
		{"team", false},
		{corev1.LabelTopologyZone, false},
		{corev1.LabelArchStable, false},
		{"beta.kubernetes.io/arch", false}, // translates to a well-known label
		{"karpenter.sh/capacity-type", false},
		{"karpenter.sh/nodepool", false},
		{"karpenter.k8s.aws/instance-family", false},
		{"node.kubernetes.io/exclude-from-external-load-balancers", false},
		{"node-restriction.kubernetes.io/pci", false},
		{corev1.LabelHostname, true},
		{"kubernetes.io/role", true},
		{"example.kubernetes.io/role", true},
		{"k8s.io/thing", true},
		{"sub.k8s.io/thing", true},
		{"karpenter.sh/initialized", true},
		{"karpenter.sh/custom", true},
		{"notkubernetes.io/role", false},
		{"mykarpenter.sh/role", false},
	}
	for _, tt := range tests {
		err := IsRestrictedLabel(tt.key)
		if (err != nil) != tt.restricted {
			t.Errorf("IsRestrictedLabel(%q) = %v, want restricted %v", tt.key, err, tt.restricted)
		}
	}
}
