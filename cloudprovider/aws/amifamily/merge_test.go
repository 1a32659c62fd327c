package amifamily

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

// TestMergePrecedence checks, per family, that what joinery sets wins over the same setting in
// spec.userData, and that what joinery leaves alone comes through from the user.
func TestMergePrecedence(t *testing.T) {
	joinery := Input{
		Cluster: Cluster{Name: "joinery", Endpoint: "https://joinery", CABundle: "am9pbmVyeQ==", DNSIP: "10.0.0.10", ServiceCIDR: "10.0.0.0/16"},
		Labels:  map[string]string{"karpenter.sh/nodepool": "default"},
		Taints:  []corev1.Taint{UnregisteredTaint},
		MaxPods: 110,
		Kubelet: &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"cpu": "70m"}},
	}
	tests := []struct {
		name     string
		family   string
		userData string
		// check inspects what the node starts with.
		check func(t *testing.T, got NodeBootstrap)
		// absent lists text the generated user data must not contain.
		absent []string
	}{
		{
			name:   "AL2023: joinery's NodeConfig overrides the user's cluster, kubelet config and flags",
			family: awsv1.AMIFamilyAL2023,
			userData: `apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: user
    apiServerEndpoint: https://user
    cidr: 192.168.0.0/16
  kubelet:
    config:
      maxPods: 42
      clusterDNS: [192.168.0.10]
      kubeReserved: {cpu: 1}
      registerWithTaints: [{key: user, effect: NoSchedule}]
      evictionHard: {memory.available: 7%}
    flags:
    - --node-labels=user=label
`,
			check: func(t *testing.T, got NodeBootstrap) {
				assertJoineryWins(t, got, joinery)
				if !reflect.DeepEqual(got.Kubelet.EvictionHard, map[string]string{"memory.available": "7%"}) {
					t.Errorf("evictionHard = %v, want the user's (joinery sets none)", got.Kubelet.EvictionHard)
				}
			},
		},
		{
			name:   "AL2023: a user's registerWithTaints is overridden even with no other flags",
			family: awsv1.AMIFamilyAL2023,
			userData: "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"x\"\n\n--x\nContent-Type: application/node.eks.aws\n\n" +
				"apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      registerWithTaints: [{key: user, effect: NoSchedule}]\n--x--\n",
			check: func(t *testing.T, got NodeBootstrap) { assertJoineryWins(t, got, joinery) },
		},
		{
			name:   "Bottlerocket: joinery's settings.kubernetes override the user's; unknown keys dropped; others kept",
			family: awsv1.AMIFamilyBottlerocket,
			userData: `[settings.kubernetes]
cluster-name = "user"
api-server = "https://user"
cluster-certificate = "dXNlcg=="
cluster-dns-ip = ["192.168.0.10"]
max-pods = 42
unknown-setting = "unknown"
[settings.kubernetes.node-labels]
user = "label"
[settings.kubernetes.node-taints]
user = ["x:NoSchedule"]
[settings.kubernetes.kube-reserved]
cpu = "1"
memory = "1Gi"
[settings.kubernetes.eviction-hard]
"memory.available" = "7%"
[metadata]
dropped = true
`,
			check: func(t *testing.T, got NodeBootstrap) {
				assertJoineryWins(t, got, joinery)
				if !reflect.DeepEqual(got.Kubelet.EvictionHard, map[string]string{"memory.available": "7%"}) {
					t.Errorf("eviction-hard = %v, want the user's (joinery sets none)", got.Kubelet.EvictionHard)
				}
			},
			absent: []string{"unknown-setting", "[metadata]", "dropped", "user", "1Gi"},
		},
		{
			name:     "AL2: joinery's bootstrap.sh call runs last",
			family:   awsv1.AMIFamilyAL2,
			userData: "#!/bin/bash\n/etc/eks/bootstrap.sh 'user' --apiserver-endpoint 'https://user' --kubelet-extra-args '--max-pods=42 --node-labels=user=label --register-with-taints=user:NoSchedule --kube-reserved=cpu=1'\n",
			check:    func(t *testing.T, got NodeBootstrap) { assertJoineryWins(t, got, joinery) },
		},
		{
			name:     "Windows: joinery's Start-EKSBootstrap.ps1 call runs last",
			family:   awsv1.AMIFamilyWindows2022,
			userData: "& $EKSBootstrapScriptFile -EKSClusterName 'user' -APIServerEndpoint 'https://user' -KubeletExtraArgs '--max-pods=42 --node-labels=user=label --register-with-taints=user:NoSchedule --kube-reserved=cpu=1' -DNSClusterIP '192.168.0.10'\n",
			check:    func(t *testing.T, got NodeBootstrap) { assertJoineryWins(t, got, joinery) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := joinery
			in.Family, in.UserData = tt.family, tt.userData
			data, err := Generate(in)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			got, err := Parse(tt.family, data)
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, data)
			}
			tt.check(t, got)
			for _, s := range tt.absent {
				if strings.Contains(string(data), s) {
					t.Errorf("generated user data contains %q:\n%s", s, data)
				}
			}
		})
	}
}

func assertJoineryWins(t *testing.T, got NodeBootstrap, joinery Input) {
	t.Helper()
	if got.ClusterName != joinery.Cluster.Name || got.APIServerEndpoint != joinery.Cluster.Endpoint || got.CABundle != joinery.Cluster.CABundle {
		t.Errorf("cluster = %q %q %q, want joinery's", got.ClusterName, got.APIServerEndpoint, got.CABundle)
	}
	if got.MaxPods != joinery.MaxPods {
		t.Errorf("max pods = %d, want %d", got.MaxPods, joinery.MaxPods)
	}
	if !reflect.DeepEqual(got.ClusterDNS, []string{joinery.Cluster.DNSIP}) {
		t.Errorf("cluster DNS = %v, want [%s]", got.ClusterDNS, joinery.Cluster.DNSIP)
	}
	if !reflect.DeepEqual(got.Labels, joinery.Labels) {
		t.Errorf("labels = %v, want %v", got.Labels, joinery.Labels)
	}
	if !reflect.DeepEqual(got.Taints, joinery.Taints) {
		t.Errorf("taints = %v, want %v", got.Taints, joinery.Taints)
	}
	if !reflect.DeepEqual(got.Kubelet.KubeReserved, joinery.Kubelet.KubeReserved) {
		t.Errorf("kube reserved = %v, want %v", got.Kubelet.KubeReserved, joinery.Kubelet.KubeReserved)
	}
}

// TestKubeletMaxPodsComesFromInput checks that spec.kubelet.maxPods never bypasses the pod
// capacity decided for the instance type.
func TestKubeletMaxPodsComesFromInput(t *testing.T) {
	for _, family := range []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyWindows2022} {
		in := Input{Family: family, Cluster: Cluster{Name: "c"}, MaxPods: 17, Kubelet: &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](99)}}
		data, err := Generate(in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(family, data)
		if err != nil {
			t.Fatal(err)
		}
		if got.MaxPods != 17 || strings.Contains(string(data), "99") {
			t.Errorf("%s: max pods = %d, user data:\n%s\nwant 17 and no 99", family, got.MaxPods, data)
		}
	}
}
