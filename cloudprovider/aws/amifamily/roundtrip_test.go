package amifamily

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// expectedBootstrap is what a node booted from Generate(in) must start with, given what each
// family can express.
func expectedBootstrap(in Input) NodeBootstrap {
	want := NodeBootstrap{
		ClusterName:       in.Cluster.Name,
		APIServerEndpoint: in.Cluster.Endpoint,
		CABundle:          in.Cluster.CABundle,
		ClusterDNS:        in.clusterDNS(),
		Labels:            in.Labels,
		Taints:            slices.Clone(in.Taints),
		MaxPods:           in.MaxPods,
		Kubelet:           in.kubelet(),
	}
	want.Kubelet.MaxPods, want.Kubelet.ClusterDNS = nil, nil
	sortTaints(want.Taints)
	switch in.Family {
	case awsv1.AMIFamilyAL2, awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022:
		// Their bootstrap scripts take a single DNS server.
		if len(want.ClusterDNS) > 1 {
			want.ClusterDNS = want.ClusterDNS[:1]
		}
	case awsv1.AMIFamilyBottlerocket:
		want.Kubelet.PodsPerCore = nil
	}
	if in.Family == awsv1.AMIFamilyAL2 || in.Family == awsv1.AMIFamilyAL2023 {
		want.RAID0 = in.raid0()
	}
	return want
}

// normalize makes empty and nil collections compare equal.
func normalize(b NodeBootstrap) NodeBootstrap {
	if len(b.Labels) == 0 {
		b.Labels = nil
	}
	if len(b.Taints) == 0 {
		b.Taints = nil
	}
	if len(b.ClusterDNS) == 0 {
		b.ClusterDNS = nil
	}
	return b
}

func roundTripInputs(family string) map[string]Input {
	base := Input{Family: family, Cluster: productionCluster, Labels: productionLabels, Taints: productionTaints, MaxPods: 58}
	inputs := map[string]Input{
		"plain":                   base,
		"nothing optional":        {Family: family, Cluster: Cluster{Name: "bare"}},
		"no endpoint dns or cidr": {Family: family, Cluster: Cluster{Name: "c", CABundle: "Y2E="}, Labels: map[string]string{"a": "b"}, Taints: []corev1.Taint{UnregisteredTaint}, MaxPods: 8},
	}
	kubelet := base
	kubelet.Kubelet = seedKubelet
	inputs["kubelet"] = kubelet

	raid := base
	raid.InstanceStorePolicy = raid0
	inputs["raid0"] = raid

	manyDNS := base
	manyDNS.Kubelet = &awsv1.KubeletConfiguration{ClusterDNS: []string{"10.0.0.10", "10.0.0.11"}, CPUCFSQuota: ptr.To(false)}
	inputs["two DNS servers"] = manyDNS

	quoting := base
	quoting.Cluster.Name = "it's-a-cluster"
	quoting.Taints = []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectPreferNoSchedule}, {Key: "k", Effect: corev1.TaintEffectNoExecute}, UnregisteredTaint}
	inputs["quotes and repeated taint keys"] = quoting

	user := base
	user.UserData = map[string]string{
		awsv1.AMIFamilyAL2:          "#!/bin/bash\necho 'hello' \\\n  world\n",
		awsv1.AMIFamilyAL2023:       "#!/bin/bash\necho hello\n",
		awsv1.AMIFamilyBottlerocket: "[settings.kubernetes]\nkube-api-qps = 30\n[settings.host-containers.admin]\nenabled = true\n",
		awsv1.AMIFamilyWindows2019:  "Write-Host 'hello'",
		awsv1.AMIFamilyWindows2022:  "Write-Host 'hello'",
	}[family]
	inputs["user content"] = user
	return inputs
}

func TestParseRoundTrip(t *testing.T) {
	for _, family := range []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022} {
		for name, in := range roundTripInputs(family) {
			t.Run(family+"/"+name, func(t *testing.T) {
				data, err := Generate(in)
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				got, err := Parse(family, data)
				if err != nil {
					t.Fatalf("Parse: %v\n%s", err, data)
				}
				if want := normalize(expectedBootstrap(in)); !reflect.DeepEqual(normalize(got), want) {
					t.Errorf("Parse(Generate(in)) =\n%+v\nwant\n%+v\nuser data:\n%s", normalize(got), want, data)
				}
			})
		}
	}
}

// TestParseGoldenFiles reads every generated golden back, so the files stay bootable.
func TestParseGoldenFiles(t *testing.T) {
	for _, tc := range goldenCases() {
		if tc.in.Family == awsv1.AMIFamilyCustom {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			data, err := Generate(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(tc.in.Family, data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.ClusterName != tc.in.Cluster.Name || got.MaxPods != tc.in.MaxPods || !reflect.DeepEqual(normalize(got).Labels, normalize(NodeBootstrap{Labels: tc.in.Labels}).Labels) {
				t.Errorf("Parse = %+v, want cluster %q, max pods %d, labels %v", got, tc.in.Cluster.Name, tc.in.MaxPods, tc.in.Labels)
			}
		})
	}
}

func TestParseCustom(t *testing.T) {
	if _, err := Parse(awsv1.AMIFamilyCustom, []byte("#!/bin/bash\n")); !errors.Is(err, ErrCustomUserData) {
		t.Fatalf("Parse(Custom) error = %v, want ErrCustomUserData", err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		family, userData, wantErr string
	}{
		{awsv1.AMIFamilyAL2, "#!/bin/bash\necho hi\n", "no /etc/eks/bootstrap.sh call"},
		{awsv1.AMIFamilyAL2, "/etc/eks/bootstrap.sh 'c' --kubelet-extra-args '--max-pods=many'", "--max-pods"},
		{awsv1.AMIFamilyAL2, "/etc/eks/bootstrap.sh 'c", "unterminated single quote"},
		{awsv1.AMIFamilyAL2023, "#!/bin/bash\n", "no NodeConfig"},
		{awsv1.AMIFamilyAL2023, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n--b\nContent-Type: application/node.eks.aws\n\nkind: NodeConfig\nspec: [\n--b--\n", "parsing NodeConfig"},
		{awsv1.AMIFamilyBottlerocket, "[settings.kubernetes]\nmax-pods = [1]\n", "max-pods is []interface {}, want an integer"},
		{awsv1.AMIFamilyBottlerocket, "settings = 1\n", "settings is a int64, not a table"},
		{awsv1.AMIFamilyBottlerocket, "[settings.kubernetes.node-taints]\nk = ['NoSchedule']\n", "has no effect"},
		{awsv1.AMIFamilyWindows2022, "<powershell>\nWrite-Host hi\n</powershell>\n", "no Start-EKSBootstrap.ps1 call"},
		{"Ubuntu", "", `unknown AMI family "Ubuntu"`},
	}
	for _, tt := range tests {
		t.Run(tt.family+"/"+tt.wantErr, func(t *testing.T) {
			_, err := Parse(tt.family, []byte(tt.userData))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse error = %v, want containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      Input
		wantErr string
	}{
		{"unknown family", Input{Family: "Ubuntu", Cluster: productionCluster}, `unknown AMI family "Ubuntu"`},
		{"empty family", Input{Cluster: productionCluster}, `unknown AMI family ""`},
		{"no cluster name", Input{Family: awsv1.AMIFamilyAL2023}, "cluster name is required"},
		{"bad TOML", Input{Family: awsv1.AMIFamilyBottlerocket, Cluster: productionCluster, UserData: "[settings\n"}, "parsing Bottlerocket user data"},
		{"settings not a table", Input{Family: awsv1.AMIFamilyBottlerocket, Cluster: productionCluster, UserData: "settings = 'x'\n"}, "settings is a string, not a table"},
		{"MIME without boundary", Input{Family: awsv1.AMIFamilyAL2, Cluster: productionCluster, UserData: "MIME-Version: 1.0\nContent-Type: multipart/mixed\n\n"}, "has no boundary"},
		{"MIME part without blank line", Input{Family: awsv1.AMIFamilyAL2, Cluster: productionCluster, UserData: "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/x-shellscript\n--b--\n"}, "no blank line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Generate(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Generate error = %v, want containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCustomNeedsNoCluster(t *testing.T) {
	got, err := Generate(Input{Family: awsv1.AMIFamilyCustom})
	if err != nil || len(got) != 0 {
		t.Fatalf("Generate(Custom, no user data) = %q, %v; want empty", got, err)
	}
}

func TestRegistrationTaints(t *testing.T) {
	nc := &karpv1.NodeClaim{Spec: karpv1.NodeClaimSpec{
		Taints: []corev1.Taint{
			{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
			{Key: "dedicated", Value: "other", Effect: corev1.TaintEffectNoSchedule}, // same key and effect: dropped
		},
		StartupTaints: []corev1.Taint{
			{Key: "agent", Effect: corev1.TaintEffectNoExecute},
			{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute},
		},
	}}
	want := []corev1.Taint{
		{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
		{Key: "agent", Effect: corev1.TaintEffectNoExecute},
		UnregisteredTaint,
	}
	if got := RegistrationTaints(nc); !reflect.DeepEqual(got, want) {
		t.Errorf("RegistrationTaints = %v, want %v", got, want)
	}
	if got := RegistrationTaints(&karpv1.NodeClaim{}); !reflect.DeepEqual(got, []corev1.Taint{UnregisteredTaint}) {
		t.Errorf("RegistrationTaints(empty) = %v, want only the unregistered taint", got)
	}
}
