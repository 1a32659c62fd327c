package catalogdata

import (
	"testing"
)

func TestCatalogCoversTheFamiliesAndArchitectures(t *testing.T) {
	types := All()
	if len(types) < 300 {
		t.Fatalf("catalog has %d types, want at least 300", len(types))
	}
	categories := map[string]bool{}
	arches := map[string]int{}
	for _, it := range types {
		categories[familyName.FindStringSubmatch(it.Family)[1]] = true
		arches[it.Arch]++
		if it.VCPUs <= 0 || it.MemoryMiB <= 0 || it.MaxENIs <= 0 || it.IPv4PerENI <= 0 || it.OnDemandUSD <= 0 {
			t.Errorf("%s: incomplete facts %+v", it.Name, it)
		}
		if it.BareMetal != (it.Hypervisor == "") {
			t.Errorf("%s: bare metal %v with hypervisor %q", it.Name, it.BareMetal, it.Hypervisor)
		}
	}
	for _, c := range []string{"c", "m", "r", "t", "x", "i", "d", "g", "p", "inf", "trn"} {
		if !categories[c] {
			t.Errorf("no family of category %s", c)
		}
	}
	if arches["arm64"] < 50 || arches["x86_64"] < 100 {
		t.Errorf("architectures %v: want both well represented", arches)
	}
}

func TestPublishedFacts(t *testing.T) {
	tests := []struct {
		name            string
		vcpus           int32
		memMiB          int64
		enis, ipv4      int32
		nvmeGB          int64
		price           float64
		hypervisor      string
		gpus            int32
		networkBaseline float64
	}{
		{name: "m5.large", vcpus: 2, memMiB: 8192, enis: 3, ipv4: 10, price: 0.096, hypervisor: "nitro", networkBaseline: 0.75},
		{name: "c5.18xlarge", vcpus: 72, memMiB: 147456, enis: 15, ipv4: 50, price: 3.06, hypervisor: "nitro", networkBaseline: 25},
		{name: "t3.micro", vcpus: 2, memMiB: 1024, enis: 2, ipv4: 2, price: 0.0104, hypervisor: "nitro", networkBaseline: 0.064},
		{name: "i3.large", vcpus: 2, memMiB: 15616, enis: 3, ipv4: 10, nvmeGB: 475, price: 0.156, hypervisor: "xen", networkBaseline: 0.75},
		{name: "i3.metal", vcpus: 72, memMiB: 524288, enis: 15, ipv4: 50, nvmeGB: 15200, price: 4.992, networkBaseline: 25},
		{name: "g5.48xlarge", vcpus: 192, memMiB: 786432, enis: 7, ipv4: 50, nvmeGB: 7600, price: 16.288, hypervisor: "nitro", gpus: 8, networkBaseline: 100},
		{name: "c7g.medium", vcpus: 1, memMiB: 2048, enis: 2, ipv4: 4, price: 0.03625, hypervisor: "nitro", networkBaseline: 0.469},
		{name: "m6i.large", vcpus: 2, memMiB: 8192, enis: 3, ipv4: 10, price: 0.096, hypervisor: "nitro", networkBaseline: 0.781},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, ok := Lookup(tt.name)
			if !ok {
				t.Fatalf("%s not in the catalog", tt.name)
			}
			if it.VCPUs != tt.vcpus || it.MemoryMiB != tt.memMiB || it.MaxENIs != tt.enis || it.IPv4PerENI != tt.ipv4 ||
				it.InstanceStoreTotalGB != tt.nvmeGB || it.OnDemandUSD != tt.price || it.Hypervisor != tt.hypervisor || it.BaselineGbps != tt.networkBaseline {
				t.Errorf("got vcpus %d mem %d enis %d/%d store %d price %v hypervisor %q net %v",
					it.VCPUs, it.MemoryMiB, it.MaxENIs, it.IPv4PerENI, it.InstanceStoreTotalGB, it.OnDemandUSD, it.Hypervisor, it.BaselineGbps)
			}
			if (it.GPU == nil && tt.gpus != 0) || (it.GPU != nil && it.GPU.Count != tt.gpus) {
				t.Errorf("gpus = %+v, want %d", it.GPU, tt.gpus)
			}
		})
	}
}

func TestOfferedIn(t *testing.T) {
	tests := []struct {
		name, zone string
		want       bool
	}{
		{"m5.large", "us-east-1e", true},
		{"m6i.large", "us-east-1e", false},
		{"g5.xlarge", "us-west-2d", false},
		{"g5.xlarge", "us-west-2a", true},
		{"p4d.24xlarge", "us-west-2c", false},
		{"p4d.24xlarge", "us-east-1b", true},
		{"m8g.large", "us-west-2c", false},
	}
	for _, tt := range tests {
		it, _ := Lookup(tt.name)
		if got := it.OfferedIn(tt.zone); got != tt.want {
			t.Errorf("%s in %s = %v, want %v", tt.name, tt.zone, got, tt.want)
		}
	}
}
