package integration

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Spec fragments shared by the EC2NodeClass cases, at the indentation of spec's fields.
const (
	ec2ncSelectors = `subnetSelectorTerms:
- tags:
    karpenter.sh/discovery: test
securityGroupSelectorTerms:
- tags:
    karpenter.sh/discovery: test
`
	ec2ncAliasAMI = `amiSelectorTerms:
- alias: al2023@latest
`
	// ec2ncBase is a complete, valid spec; cases append one bad field to it.
	ec2ncBase = "role: KarpenterNodeRole-test\n" + ec2ncSelectors + ec2ncAliasAMI
)

// ec2NodeClass renders an EC2NodeClass manifest whose spec is the given YAML.
func ec2NodeClass(name, spec string) string {
	return fmt.Sprintf("apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata:\n  name: %s\nspec:\n%s", name, indentLines(spec, "  "))
}

// indentLines prefixes every non-empty line of s.
func indentLines(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		if line != "" {
			lines[i] = prefix + line
		}
	}
	return strings.Join(lines, "\n")
}

func TestEC2NodeClassValidation(t *testing.T) {
	manySubnets := "role: KarpenterNodeRole-test\n" + ec2ncAliasAMI + `securityGroupSelectorTerms:
- id: sg-123
subnetSelectorTerms:
`
	for i := range 31 {
		manySubnets += fmt.Sprintf("- id: subnet-%d\n", i)
	}

	cases := []rejection{
		// Node identity.
		{name: "role and instanceProfile", wantFields: []string{"spec", "exactly one of ['role', 'instanceProfile']"},
			manifest: ec2NodeClass("bad-identity-both", ec2ncBase+"instanceProfile: KarpenterNodeInstanceProfile-test\n")},
		{name: "neither role nor instanceProfile", wantFields: []string{"spec", "exactly one of ['role', 'instanceProfile']"},
			manifest: ec2NodeClass("bad-identity-none", ec2ncSelectors+ec2ncAliasAMI)},
		{name: "empty role", wantFields: []string{"spec.role"},
			manifest: ec2NodeClass("bad-role-empty", `role: ""`+"\n"+ec2ncSelectors+ec2ncAliasAMI)},

		// Subnet selector terms.
		{name: "no subnetSelectorTerms", wantFields: []string{"spec.subnetSelectorTerms", "Required"},
			manifest: ec2NodeClass("bad-subnets-missing", "role: r\n"+ec2ncAliasAMI+"securityGroupSelectorTerms:\n- id: sg-123\n")},
		{name: "empty subnetSelectorTerms", wantFields: []string{"spec.subnetSelectorTerms", "at least 1 items"},
			manifest: ec2NodeClass("bad-subnets-empty", "role: r\n"+ec2ncAliasAMI+"securityGroupSelectorTerms:\n- id: sg-123\nsubnetSelectorTerms: []\n")},
		{name: "31 subnetSelectorTerms", wantFields: []string{"spec.subnetSelectorTerms", "at most 30 items"},
			manifest: ec2NodeClass("bad-subnets-too-many", manySubnets)},
		{name: "empty subnet term", wantFields: []string{"spec.subnetSelectorTerms[0]", "expected at least one, got none, ['tags', 'id']"},
			manifest: ec2NodeClass("bad-subnet-term-empty", "role: r\n"+ec2ncAliasAMI+"securityGroupSelectorTerms:\n- id: sg-123\nsubnetSelectorTerms:\n- {}\n")},
		{name: "subnet id with tags", wantFields: []string{"spec.subnetSelectorTerms[0]", "'id' is mutually exclusive"},
			manifest: ec2NodeClass("bad-subnet-id-and-tags", "role: r\n"+ec2ncAliasAMI+"securityGroupSelectorTerms:\n- id: sg-123\nsubnetSelectorTerms:\n- id: subnet-123\n  tags:\n    Name: private\n")},
		{name: "malformed subnet id", wantFields: []string{"spec.subnetSelectorTerms[0].id"},
			manifest: ec2NodeClass("bad-subnet-id", "role: r\n"+ec2ncAliasAMI+"securityGroupSelectorTerms:\n- id: sg-123\nsubnetSelectorTerms:\n- id: sn-123\n")},
		{name: "empty tag key in subnet term", wantFields: []string{"spec.subnetSelectorTerms[0].tags", "empty tag keys"},
			manifest: ec2NodeClass("bad-subnet-tag-key", "role: r\n"+ec2ncAliasAMI+"securityGroupSelectorTerms:\n- id: sg-123\nsubnetSelectorTerms:\n- tags:\n    \"\": value\n")},

		// Security group selector terms.
		{name: "no securityGroupSelectorTerms", wantFields: []string{"spec.securityGroupSelectorTerms", "Required"},
			manifest: ec2NodeClass("bad-sgs-missing", "role: r\n"+ec2ncAliasAMI+"subnetSelectorTerms:\n- id: subnet-123\n")},
		{name: "security group id with name", wantFields: []string{"spec.securityGroupSelectorTerms[0]", "'id' is mutually exclusive"},
			manifest: ec2NodeClass("bad-sg-id-and-name", "role: r\n"+ec2ncAliasAMI+"subnetSelectorTerms:\n- id: subnet-123\nsecurityGroupSelectorTerms:\n- id: sg-123\n  name: default\n")},
		{name: "malformed security group id", wantFields: []string{"spec.securityGroupSelectorTerms[0].id"},
			manifest: ec2NodeClass("bad-sg-id", "role: r\n"+ec2ncAliasAMI+"subnetSelectorTerms:\n- id: subnet-123\nsecurityGroupSelectorTerms:\n- id: group-123\n")},

		// AMI selector terms and family.
		{name: "no amiSelectorTerms", wantFields: []string{"spec.amiSelectorTerms", "Required"},
			manifest: ec2NodeClass("bad-amis-missing", "role: r\namiFamily: AL2023\n"+ec2ncSelectors)},
		{name: "alias with another term", wantFields: []string{"spec.amiSelectorTerms", "'alias' is mutually exclusive"},
			manifest: ec2NodeClass("bad-alias-other-term", "role: r\n"+ec2ncSelectors+"amiSelectorTerms:\n- alias: al2023@latest\n- id: ami-123\n")},
		{name: "alias with owner in one term", wantFields: []string{"spec.amiSelectorTerms[0]", "'alias' is mutually exclusive"},
			manifest: ec2NodeClass("bad-alias-owner", "role: r\n"+ec2ncSelectors+"amiSelectorTerms:\n- alias: al2023@latest\n  owner: self\n")},
		{name: "alias without version", wantFields: []string{"spec.amiSelectorTerms[0].alias", "family@version"},
			manifest: ec2NodeClass("bad-alias-format", "role: r\n"+ec2ncSelectors+"amiSelectorTerms:\n- alias: al2023\n")},
		{name: "alias of unsupported family", wantFields: []string{"spec.amiSelectorTerms[0].alias", "family is not supported"},
			manifest: ec2NodeClass("bad-alias-family", "role: r\n"+ec2ncSelectors+"amiSelectorTerms:\n- alias: ubuntu@latest\n")},
		{name: "alias version not latest nor a release tag", wantFields: []string{"spec.amiSelectorTerms[0].alias", "version must be 'latest'"},
			manifest: ec2NodeClass("bad-alias-version", "role: r\n"+ec2ncSelectors+"amiSelectorTerms:\n- alias: al2023@20240807\n")},
		{name: "pinned windows alias", wantFields: []string{"spec.amiSelectorTerms[0].alias", "windows families may only specify version 'latest'"},
			manifest: ec2NodeClass("bad-alias-windows-pin", "role: r\n"+ec2ncSelectors+"amiSelectorTerms:\n- alias: windows2022@v20240807\n")},
		{name: "ami id with name", wantFields: []string{"spec.amiSelectorTerms[0]", "'id' is mutually exclusive"},
			manifest: ec2NodeClass("bad-ami-id-and-name", "role: r\namiFamily: AL2\n"+ec2ncSelectors+"amiSelectorTerms:\n- id: ami-123\n  name: my-ami\n")},
		{name: "malformed ami id", wantFields: []string{"spec.amiSelectorTerms[0].id"},
			manifest: ec2NodeClass("bad-ami-id", "role: r\namiFamily: AL2\n"+ec2ncSelectors+"amiSelectorTerms:\n- id: image-123\n")},
		{name: "ami term with only an owner", wantFields: []string{"spec.amiSelectorTerms[0]", "expected at least one, got none"},
			manifest: ec2NodeClass("bad-ami-owner-only", "role: r\namiFamily: AL2\n"+ec2ncSelectors+"amiSelectorTerms:\n- owner: self\n")},
		{name: "amiFamily missing without alias", wantFields: []string{"spec.amiFamily", "amiFamily is required"},
			manifest: ec2NodeClass("bad-amifamily-missing", "role: r\n"+ec2ncSelectors+"amiSelectorTerms:\n- name: my-ami\n")},
		{name: "unsupported amiFamily", wantFields: []string{"spec.amiFamily", "Unsupported value"},
			manifest: ec2NodeClass("bad-amifamily", "role: r\namiFamily: Ubuntu\n"+ec2ncSelectors+"amiSelectorTerms:\n- name: my-ami\n")},

		// Capacity reservation selector terms.
		{name: "capacity reservation id with tags", wantFields: []string{"spec.capacityReservationSelectorTerms[0]", "'id' is mutually exclusive"},
			manifest: ec2NodeClass("bad-cr-id-and-tags", ec2ncBase+"capacityReservationSelectorTerms:\n- id: cr-123\n  tags:\n    team: a\n")},
		{name: "malformed capacity reservation id", wantFields: []string{"spec.capacityReservationSelectorTerms[0].id"},
			manifest: ec2NodeClass("bad-cr-id", ec2ncBase+"capacityReservationSelectorTerms:\n- id: res-123\n")},
		{name: "malformed capacity reservation owner", wantFields: []string{"spec.capacityReservationSelectorTerms[0].ownerID"},
			manifest: ec2NodeClass("bad-cr-owner", ec2ncBase+"capacityReservationSelectorTerms:\n- tags:\n    team: a\n  ownerID: \"1234\"\n")},

		// Tags joinery owns.
		{name: "restricted cluster tag", wantFields: []string{"spec.tags", "kubernetes.io/cluster/"},
			manifest: ec2NodeClass("bad-tag-cluster", ec2ncBase+"tags:\n  kubernetes.io/cluster/test: owned\n")},
		{name: "restricted nodepool tag", wantFields: []string{"spec.tags", "karpenter.sh/nodepool"},
			manifest: ec2NodeClass("bad-tag-nodepool", ec2ncBase+"tags:\n  karpenter.sh/nodepool: default\n")},
		{name: "restricted nodeclaim tag", wantFields: []string{"spec.tags", "karpenter.sh/nodeclaim"},
			manifest: ec2NodeClass("bad-tag-nodeclaim", ec2ncBase+"tags:\n  karpenter.sh/nodeclaim: a\n")},
		{name: "restricted ec2nodeclass tag", wantFields: []string{"spec.tags", "karpenter.k8s.aws/ec2nodeclass"},
			manifest: ec2NodeClass("bad-tag-ec2nodeclass", ec2ncBase+"tags:\n  karpenter.k8s.aws/ec2nodeclass: a\n")},
		{name: "restricted eks cluster name tag", wantFields: []string{"spec.tags", "eks:eks-cluster-name"},
			manifest: ec2NodeClass("bad-tag-eks", ec2ncBase+"tags:\n  eks:eks-cluster-name: a\n")},
		{name: "restricted managed-by tag", wantFields: []string{"spec.tags", "karpenter.sh/managed-by"},
			manifest: ec2NodeClass("bad-tag-managed-by", ec2ncBase+"tags:\n  karpenter.sh/managed-by: a\n")},

		// Instance metadata options.
		{name: "httpTokens not an enum value", wantFields: []string{"spec.metadataOptions.httpTokens", "Unsupported value"},
			manifest: ec2NodeClass("bad-imds-tokens", ec2ncBase+"metadataOptions:\n  httpTokens: sometimes\n")},
		{name: "httpEndpoint not an enum value", wantFields: []string{"spec.metadataOptions.httpEndpoint", "Unsupported value"},
			manifest: ec2NodeClass("bad-imds-endpoint", ec2ncBase+"metadataOptions:\n  httpEndpoint: \"on\"\n")},
		{name: "httpProtocolIPv6 not an enum value", wantFields: []string{"spec.metadataOptions.httpProtocolIPv6", "Unsupported value"},
			manifest: ec2NodeClass("bad-imds-ipv6", ec2ncBase+"metadataOptions:\n  httpProtocolIPv6: \"yes\"\n")},
		{name: "hop limit above 64", wantFields: []string{"spec.metadataOptions.httpPutResponseHopLimit"},
			manifest: ec2NodeClass("bad-imds-hops-high", ec2ncBase+"metadataOptions:\n  httpPutResponseHopLimit: 65\n")},
		{name: "hop limit below 1", wantFields: []string{"spec.metadataOptions.httpPutResponseHopLimit"},
			manifest: ec2NodeClass("bad-imds-hops-low", ec2ncBase+"metadataOptions:\n  httpPutResponseHopLimit: 0\n")},

		// Block devices and instance store.
		{name: "two root volumes", wantFields: []string{"spec.blockDeviceMappings", "only one blockDeviceMappings with rootVolume"},
			manifest: ec2NodeClass("bad-bdm-two-roots", ec2ncBase+"blockDeviceMappings:\n- deviceName: /dev/xvda\n  rootVolume: true\n  ebs:\n    volumeSize: 20Gi\n- deviceName: /dev/xvdb\n  rootVolume: true\n  ebs:\n    volumeSize: 20Gi\n")},
		{name: "volume larger than 64Ti", wantFields: []string{"spec.blockDeviceMappings[0].ebs.volumeSize", "at most 64Ti"},
			manifest: ec2NodeClass("bad-bdm-size-large", ec2ncBase+"blockDeviceMappings:\n- deviceName: /dev/xvda\n  ebs:\n    volumeSize: 65Ti\n")},
		{name: "zero volume size", wantFields: []string{"spec.blockDeviceMappings[0].ebs.volumeSize", "greater than 0"},
			manifest: ec2NodeClass("bad-bdm-size-zero", ec2ncBase+"blockDeviceMappings:\n- deviceName: /dev/xvda\n  ebs:\n    volumeSize: 0Gi\n")},
		{name: "unknown volume type", wantFields: []string{"spec.blockDeviceMappings[0].ebs.volumeType", "Unsupported value"},
			manifest: ec2NodeClass("bad-bdm-type", ec2ncBase+"blockDeviceMappings:\n- deviceName: /dev/xvda\n  ebs:\n    volumeSize: 20Gi\n    volumeType: gp4\n")},
		{name: "block device without deviceName", wantFields: []string{"spec.blockDeviceMappings[0].deviceName", "Required"},
			manifest: ec2NodeClass("bad-bdm-device", ec2ncBase+"blockDeviceMappings:\n- ebs:\n    volumeSize: 20Gi\n")},
		{name: "unknown instance store policy", wantFields: []string{"spec.instanceStorePolicy", "Unsupported value"},
			manifest: ec2NodeClass("bad-instance-store", ec2ncBase+"instanceStorePolicy: RAID1\n")},

		// Kubelet.
		{name: "unknown evictionHard signal", wantFields: []string{"spec.kubelet.evictionHard", "valid keys for evictionHard"},
			manifest: ec2NodeClass("bad-kubelet-hard-key", ec2ncBase+"kubelet:\n  evictionHard:\n    memory.free: 5%\n")},
		{name: "evictionHard percentage above 100", wantFields: []string{"spec.kubelet.evictionHard", "percentage between 0% and 100%"},
			manifest: ec2NodeClass("bad-kubelet-hard-value", ec2ncBase+"kubelet:\n  evictionHard:\n    memory.available: 120%\n")},
		{name: "unknown evictionSoft signal", wantFields: []string{"spec.kubelet.evictionSoft", "valid keys for evictionSoft"},
			manifest: ec2NodeClass("bad-kubelet-soft-key", ec2ncBase+"kubelet:\n  evictionSoft:\n    disk.available: 5%\n  evictionSoftGracePeriod:\n    memory.available: 1m\n")},
		{name: "evictionSoft without grace period", wantFields: []string{"spec.kubelet.evictionSoft", "matching evictionSoftGracePeriod"},
			manifest: ec2NodeClass("bad-kubelet-soft-grace", ec2ncBase+"kubelet:\n  evictionSoft:\n    memory.available: 500Mi\n")},
		{name: "grace period without evictionSoft", wantFields: []string{"spec.kubelet.evictionSoftGracePeriod", "matching evictionSoft"},
			manifest: ec2NodeClass("bad-kubelet-grace-only", ec2ncBase+"kubelet:\n  evictionSoftGracePeriod:\n    memory.available: 1m\n")},
		{name: "malformed grace period", wantFields: []string{"spec.kubelet.evictionSoftGracePeriod", "durations"},
			manifest: ec2NodeClass("bad-kubelet-grace-value", ec2ncBase+"kubelet:\n  evictionSoft:\n    memory.available: 500Mi\n  evictionSoftGracePeriod:\n    memory.available: one minute\n")},
		{name: "imageGC high not above low", wantFields: []string{"spec.kubelet.imageGCHighThresholdPercent", "must be greater than imageGCLowThresholdPercent"},
			manifest: ec2NodeClass("bad-kubelet-imagegc", ec2ncBase+"kubelet:\n  imageGCHighThresholdPercent: 50\n  imageGCLowThresholdPercent: 50\n")},
		{name: "imageGC above 100 percent", wantFields: []string{"spec.kubelet.imageGCHighThresholdPercent"},
			manifest: ec2NodeClass("bad-kubelet-imagegc-range", ec2ncBase+"kubelet:\n  imageGCHighThresholdPercent: 101\n")},
		{name: "negative maxPods", wantFields: []string{"spec.kubelet.maxPods"},
			manifest: ec2NodeClass("bad-kubelet-maxpods", ec2ncBase+"kubelet:\n  maxPods: -1\n")},
		{name: "negative podsPerCore", wantFields: []string{"spec.kubelet.podsPerCore"},
			manifest: ec2NodeClass("bad-kubelet-podspercore", ec2ncBase+"kubelet:\n  podsPerCore: -2\n")},
		{name: "unknown systemReserved resource", wantFields: []string{"spec.kubelet.systemReserved", "valid keys for systemReserved"},
			manifest: ec2NodeClass("bad-kubelet-system-reserved", ec2ncBase+"kubelet:\n  systemReserved:\n    nvidia.com/gpu: \"1\"\n")},
		{name: "negative kubeReserved quantity", wantFields: []string{"spec.kubelet.kubeReserved", "non-negative"},
			manifest: ec2NodeClass("bad-kubelet-kube-reserved", ec2ncBase+"kubelet:\n  kubeReserved:\n    cpu: -100m\n")},
	}
	expectRejections(t, cases)
}

func TestEC2NodeClassDefaults(t *testing.T) {
	t.Run("metadataOptions default when omitted", func(t *testing.T) {
		obj := mustApply(t, ec2NodeClass("defaults-imds-omitted", ec2ncBase))
		expectStoredString(t, obj, "enabled", "spec", "metadataOptions", "httpEndpoint")
		expectStoredString(t, obj, "disabled", "spec", "metadataOptions", "httpProtocolIPv6")
		expectStoredString(t, obj, "required", "spec", "metadataOptions", "httpTokens")
		expectStoredInt(t, obj, 1, "spec", "metadataOptions", "httpPutResponseHopLimit")
	})

	t.Run("metadataOptions fields default individually", func(t *testing.T) {
		obj := mustApply(t, ec2NodeClass("defaults-imds-partial", ec2ncBase+"metadataOptions:\n  httpTokens: optional\n  httpPutResponseHopLimit: 2\n"))
		expectStoredString(t, obj, "optional", "spec", "metadataOptions", "httpTokens")
		expectStoredInt(t, obj, 2, "spec", "metadataOptions", "httpPutResponseHopLimit")
		expectStoredString(t, obj, "enabled", "spec", "metadataOptions", "httpEndpoint")
		expectStoredString(t, obj, "disabled", "spec", "metadataOptions", "httpProtocolIPv6")
	})

	accepted := []struct {
		name     string
		manifest string
		check    func(t *testing.T, obj *unstructured.Unstructured)
	}{
		{name: "al2023 latest alias implies the family",
			manifest: ec2NodeClass("edge-alias-al2023-latest", ec2ncBase),
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				expectStoredAbsent(t, obj, "spec", "amiFamily")
			}},
		{name: "pinned bottlerocket alias",
			manifest: ec2NodeClass("edge-alias-bottlerocket", "role: r\n"+ec2ncSelectors+"amiSelectorTerms:\n- alias: bottlerocket@v1.20.0\n")},
		{name: "windows alias at latest",
			manifest: ec2NodeClass("edge-alias-windows", "role: r\n"+ec2ncSelectors+"amiSelectorTerms:\n- alias: windows2022@latest\n")},
		{name: "instanceProfile instead of role",
			manifest: ec2NodeClass("edge-instance-profile", "instanceProfile: KarpenterNodeInstanceProfile-test\n"+ec2ncSelectors+ec2ncAliasAMI),
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				expectStoredString(t, obj, "KarpenterNodeInstanceProfile-test", "spec", "instanceProfile")
				expectStoredAbsent(t, obj, "spec", "role")
			}},
		{name: "wildcard and empty tag values select by key",
			manifest: ec2NodeClass("edge-tag-wildcards", `role: r
subnetSelectorTerms:
- tags:
    karpenter.sh/discovery/test: '*'
    MyTag: ''
securityGroupSelectorTerms:
- name: my-security-group
  tags:
    MyTag: '*'
amiSelectorTerms:
- name: '*EKS*'
  owner: self
- tags:
    Name: my-ami
amiFamily: Custom
`)},
		{name: "ids, ssm parameter and capacity reservations",
			manifest: ec2NodeClass("edge-ids", `role: r
amiFamily: AL2
subnetSelectorTerms:
- id: subnet-09fa4a0a8f233a921
securityGroupSelectorTerms:
- id: sg-063d7acfb4b06c82c
amiSelectorTerms:
- id: ami-123
- ssmParameter: my-custom-parameter
capacityReservationSelectorTerms:
- id: cr-123
- tags:
    key: foo
  ownerID: "012345678901"
`)},
		{name: "custom tags beside the restricted ones",
			manifest: ec2NodeClass("edge-tags", ec2ncBase+"tags:\n  Name: custom-name\n  karpenter.sh/discovery: test\n  dev.corp.net/team: MyTeam\n")},
		{name: "largest volume and one root volume",
			manifest: ec2NodeClass("edge-volumes", ec2ncBase+`blockDeviceMappings:
- deviceName: /dev/xvda
  rootVolume: true
  ebs:
    volumeSize: 64Ti
    volumeType: gp3
    iops: 10000
    throughput: 125
    encrypted: true
    deleteOnTermination: true
    snapshotID: snap-0123456789
    volumeInitializationRate: 100
- deviceName: /dev/xvdb
  ebs:
    volumeSize: 20Gi
instanceStorePolicy: RAID0
`)},
		{name: "every kubelet field",
			manifest: ec2NodeClass("edge-kubelet", ec2ncBase+`kubelet:
  podsPerCore: 2
  maxPods: 20
  systemReserved:
    cpu: 100m
    memory: 100Mi
    ephemeral-storage: 1Gi
    pid: "100"
  kubeReserved:
    cpu: 200m
    memory: 100Mi
    ephemeral-storage: 3Gi
  evictionHard:
    memory.available: 500Mi
    nodefs.available: 10%
    nodefs.inodesFree: 10%
    imagefs.available: 5%
    imagefs.inodesFree: 5%
    pid.available: 7.5%
  evictionSoft:
    memory.available: 1Gi
    nodefs.available: 15%
  evictionSoftGracePeriod:
    memory.available: 1m
    nodefs.available: 1m30s
  evictionMaxPodGracePeriod: 60
  imageGCHighThresholdPercent: 85
  imageGCLowThresholdPercent: 80
  cpuCFSQuota: true
  clusterDNS: ["10.0.1.100"]
userData: |
  echo "Hello world"
detailedMonitoring: true
associatePublicIPAddress: false
`),
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				expectStoredString(t, obj, "1m30s", "spec", "kubelet", "evictionSoftGracePeriod", "nodefs.available")
			}},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			obj := mustApply(t, tc.manifest)
			if tc.check != nil {
				tc.check(t, obj)
			}
		})
	}
}

// expectStoredString fails unless the stored object holds want at path.
func expectStoredString(t *testing.T, obj *unstructured.Unstructured, want string, path ...string) {
	t.Helper()
	got, found, err := unstructured.NestedString(obj.Object, path...)
	if err != nil || !found || got != want {
		t.Errorf("%s = %q (found %v, err %v), want %q", strings.Join(path, "."), got, found, err, want)
	}
}

// expectStoredInt fails unless the stored object holds the integer want at path.
func expectStoredInt(t *testing.T, obj *unstructured.Unstructured, want int64, path ...string) {
	t.Helper()
	got, found, err := unstructured.NestedInt64(obj.Object, path...)
	if err != nil || !found || got != want {
		t.Errorf("%s = %d (found %v, err %v), want %d", strings.Join(path, "."), got, found, err, want)
	}
}

// expectStoredAbsent fails if the stored object has a value at path.
func expectStoredAbsent(t *testing.T, obj *unstructured.Unstructured, path ...string) {
	t.Helper()
	if got, found, _ := unstructured.NestedFieldNoCopy(obj.Object, path...); found {
		t.Errorf("%s = %v, want it absent", strings.Join(path, "."), got)
	}
}
