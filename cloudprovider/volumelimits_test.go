package cloudprovider

import "testing"

func TestEBSVolumeLimit(t *testing.T) {
	for _, tc := range []struct {
		facts EBSFacts
		want  int32
	}{
		// Nitro, shared: 28 − 1 network interface − 1 root volume.
		{EBSFacts{Name: "c5.large"}, 26},
		{EBSFacts{Name: "m6i.32xlarge"}, 26},
		// Each NVMe instance store volume takes a shared slot.
		{EBSFacts{Name: "c5d.large", NVMeInstanceStore: 1}, 25},
		{EBSFacts{Name: "i3en.24xlarge", NVMeInstanceStore: 8}, 18},
		// Xen: 39 − 1 root volume.
		{EBSFacts{Name: "m4.large", Xen: true}, 38},
		{EBSFacts{Name: "t2.micro", Xen: true}, 38},
		// Dedicated limits by size, less the root volume.
		{EBSFacts{Name: "m7i.large"}, 31},
		{EBSFacts{Name: "c7a.16xlarge"}, 47},
		{EBSFacts{Name: "r7i.48xlarge"}, 127},
		{EBSFacts{Name: "m7i.metal-48xl"}, 78},
		// EC2's own dedicated figure wins over the family list.
		{EBSFacts{Name: "m8i.large", Dedicated: 64}, 63},
		// Bare metal is capped at 31 but only extra network interfaces count.
		{EBSFacts{Name: "c5.metal"}, 27},
		{EBSFacts{Name: "m5d.metal", NVMeInstanceStore: 4}, 23},
		// Per-type caps, and never below one.
		{EBSFacts{Name: "inf1.24xlarge"}, 10},
		{EBSFacts{Name: "d3.8xlarge", NVMeInstanceStore: 24}, 1},
	} {
		if got := EBSVolumeLimit(tc.facts); got != tc.want {
			t.Errorf("EBSVolumeLimit(%+v) = %d, want %d", tc.facts, got, tc.want)
		}
	}
}
