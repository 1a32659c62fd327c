package amifamily

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

func TestDefaultBlockDeviceMappings(t *testing.T) {
	// The seeds' table of defaults, lines 864-917.
	type device struct{ name, size string }
	tests := map[string][]device{
		awsv1.AMIFamilyAL2:          {{"/dev/xvda", "20Gi"}},
		awsv1.AMIFamilyAL2023:       {{"/dev/xvda", "20Gi"}},
		awsv1.AMIFamilyBottlerocket: {{"/dev/xvda", "4Gi"}, {"/dev/xvdb", "20Gi"}},
		awsv1.AMIFamilyWindows2019:  {{"/dev/sda1", "50Gi"}},
		awsv1.AMIFamilyWindows2022:  {{"/dev/sda1", "50Gi"}},
		awsv1.AMIFamilyCustom:       nil,
	}
	for family, want := range tests {
		got := DefaultBlockDeviceMappings(family)
		if len(got) != len(want) {
			t.Fatalf("%s: %d mappings, want %d", family, len(got), len(want))
		}
		for i, w := range want {
			m := got[i]
			if *m.DeviceName != w.name || m.EBS.VolumeSize.Cmp(resource.MustParse(w.size)) != 0 || *m.EBS.VolumeType != "gp3" || !*m.EBS.Encrypted || m.RootVolume {
				t.Errorf("%s[%d] = %s %v %s encrypted=%v, want %s %s gp3 encrypted", family, i, *m.DeviceName, m.EBS.VolumeSize, *m.EBS.VolumeType, *m.EBS.Encrypted, w.name, w.size)
			}
		}
	}
	// Each call returns fresh values a caller may modify.
	DefaultBlockDeviceMappings(awsv1.AMIFamilyAL2)[0].EBS.VolumeSize.Set(1)
	if got := DefaultBlockDeviceMappings(awsv1.AMIFamilyAL2)[0].EBS.VolumeSize; got.Cmp(resource.MustParse("20Gi")) != 0 {
		t.Errorf("defaults were shared and modified: %v", got)
	}
}

func TestMetadataOptions(t *testing.T) {
	got := MetadataOptions(nil)
	if *got.HTTPEndpoint != "enabled" || *got.HTTPProtocolIPv6 != "disabled" || *got.HTTPPutResponseHopLimit != 1 || *got.HTTPTokens != "required" {
		t.Errorf("MetadataOptions(nil) = %+v, want the seeds' defaults", got)
	}
	partial := &awsv1.MetadataOptions{HTTPPutResponseHopLimit: ptr.To[int64](2), HTTPTokens: ptr.To("optional")}
	got = MetadataOptions(partial)
	if *got.HTTPEndpoint != "enabled" || *got.HTTPProtocolIPv6 != "disabled" || *got.HTTPPutResponseHopLimit != 2 || *got.HTTPTokens != "optional" {
		t.Errorf("MetadataOptions(partial) = %+v, want set fields kept and the rest defaulted", got)
	}
	*got.HTTPTokens = "changed"
	if *partial.HTTPTokens != "optional" {
		t.Error("MetadataOptions aliases the spec's pointers")
	}
}

func TestEphemeralStorage(t *testing.T) {
	gib := func(n string) resource.Quantity { return resource.MustParse(n) }
	mapping := func(name, size string, root bool) awsv1.BlockDeviceMapping {
		return awsv1.BlockDeviceMapping{DeviceName: ptr.To(name), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(gib(size))}, RootVolume: root}
	}
	tests := []struct {
		name          string
		family        string
		spec          []awsv1.BlockDeviceMapping
		policy        *awsv1.InstanceStorePolicy
		instanceStore resource.Quantity
		want          string
	}{
		{name: "AL2023 default root volume", family: awsv1.AMIFamilyAL2023, want: "20Gi"},
		{name: "Bottlerocket default data volume", family: awsv1.AMIFamilyBottlerocket, want: "20Gi"},
		{name: "Windows default", family: awsv1.AMIFamilyWindows2022, want: "50Gi"},
		{name: "Custom without mappings", family: awsv1.AMIFamilyCustom, want: "20Gi"},
		{name: "Custom uses the last mapping", family: awsv1.AMIFamilyCustom, spec: []awsv1.BlockDeviceMapping{mapping("/dev/xvda", "8Gi", false), mapping("/dev/xvdc", "80Gi", false)}, want: "80Gi"},
		{name: "family device among several", family: awsv1.AMIFamilyBottlerocket, spec: []awsv1.BlockDeviceMapping{mapping("/dev/xvda", "8Gi", false), mapping("/dev/xvdb", "200Gi", false), mapping("/dev/xvdc", "1Gi", false)}, want: "200Gi"},
		{name: "rootVolume wins", family: awsv1.AMIFamilyAL2, spec: []awsv1.BlockDeviceMapping{mapping("/dev/xvda", "8Gi", false), mapping("/dev/sda1", "100Gi", true)}, want: "100Gi"},
		{name: "RAID0 with instance store", family: awsv1.AMIFamilyAL2, policy: raid0, instanceStore: gib("1900Gi"), want: "1900Gi"},
		{name: "RAID0 without instance store", family: awsv1.AMIFamilyAL2, policy: raid0, want: "20Gi"},
		{name: "instance store ignored without RAID0", family: awsv1.AMIFamilyAL2, instanceStore: gib("1900Gi"), want: "20Gi"},
		{name: "mapping without size", family: awsv1.AMIFamilyAL2, spec: []awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda")}}, want: "20Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EphemeralStorage(tt.family, tt.spec, tt.policy, tt.instanceStore)
			if got.Cmp(gib(tt.want)) != 0 {
				t.Errorf("EphemeralStorage = %v, want %s", &got, tt.want)
			}
		})
	}
}

func TestDeviceNames(t *testing.T) {
	tests := []struct{ family, root, ephemeral string }{
		{awsv1.AMIFamilyAL2, "/dev/xvda", "/dev/xvda"},
		{awsv1.AMIFamilyAL2023, "/dev/xvda", "/dev/xvda"},
		{awsv1.AMIFamilyBottlerocket, "/dev/xvda", "/dev/xvdb"},
		{awsv1.AMIFamilyWindows2019, "/dev/sda1", "/dev/sda1"},
		{awsv1.AMIFamilyWindows2022, "/dev/sda1", "/dev/sda1"},
		{awsv1.AMIFamilyCustom, "", ""},
	}
	for _, tt := range tests {
		if got := RootDeviceName(tt.family); got != tt.root {
			t.Errorf("RootDeviceName(%s) = %q, want %q", tt.family, got, tt.root)
		}
		if got := EphemeralDeviceName(tt.family); got != tt.ephemeral {
			t.Errorf("EphemeralDeviceName(%s) = %q, want %q", tt.family, got, tt.ephemeral)
		}
	}
}
