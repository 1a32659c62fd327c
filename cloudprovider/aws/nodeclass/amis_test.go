package nodeclass

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// amiString renders a resolved AMI as "name [requirements] (deprecated)", with short keys.
func amiString(a awsv1.AMI) string {
	var reqs []string
	for _, r := range a.Requirements {
		key := strings.TrimPrefix(strings.TrimPrefix(r.Key, "karpenter.k8s.aws/"), "kubernetes.io/")
		s := key + " " + string(r.Operator)
		if len(r.Values) > 0 {
			s += " " + strings.Join(r.Values, ",")
		}
		reqs = append(reqs, s)
	}
	out := fmt.Sprintf("%s [%s]", a.Name, strings.Join(reqs, "; "))
	if a.Deprecated {
		out += " (deprecated)"
	}
	return out
}

func TestAMIsFromSeedSelectors(t *testing.T) {
	const (
		amd64 = "[arch In amd64]"
		arm64 = "[arch In arm64]"
	)
	addImage := func(img awsv1.AMI, arch string, owner string, created time.Time) func(*testing.T, *env) {
		return func(t *testing.T, e *env) {
			e.srv.AddImage(awsemulator.Image{ID: img.ID, Name: img.Name, Architecture: arch, OwnerID: owner, Public: owner != "", CreationDate: created})
		}
	}
	tests := []struct {
		name       string
		k8sVersion string
		terms      string
		setup      []func(*testing.T, *env)
		want       []string
	}{
		{
			name: "line 95: tags, a name, an id and an SSM parameter ORed",
			terms: `
- tags:
    karpenter.sh/discovery: "${CLUSTER_NAME}"
    environment: test
- name: my-ami
- id: ami-123
- ssmParameter: my-custom-parameter # ssm parameter name or ARN`,
			setup: []func(*testing.T, *env){addImage(awsv1.AMI{ID: "ami-123", Name: "image-123"}, "arm64", "", time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC))},
			// Newest per architecture: the id's arm64 image beats custom-ami-arm64.
			want: []string{"custom-ami-amd64 " + amd64, "image-123 " + arm64},
		},
		{
			name:       "line 713: a pinned AL2023 alias",
			k8sVersion: "1.30",
			terms: `
- alias: al2023@v20240807`,
			want: []string{
				"amazon-eks-node-al2023-arm64-nvidia-1.30-v20240807 [arch In arm64; instance-gpu-count Exists] (deprecated)",
				"amazon-eks-node-al2023-arm64-standard-1.30-v20240807 [arch In arm64; instance-gpu-count DoesNotExist; instance-accelerator-count DoesNotExist] (deprecated)",
				"amazon-eks-node-al2023-x86_64-neuron-1.30-v20240807 [arch In amd64; instance-accelerator-count Exists] (deprecated)",
				"amazon-eks-node-al2023-x86_64-nvidia-1.30-v20240807 [arch In amd64; instance-gpu-count Exists] (deprecated)",
				"amazon-eks-node-al2023-x86_64-standard-1.30-v20240807 [arch In amd64; instance-gpu-count DoesNotExist; instance-accelerator-count DoesNotExist] (deprecated)",
			},
		},
		{
			name: "line 718: any value of a tag key",
			terms: `
- tags:
    karpenter.sh/discovery/MyClusterName: '*'`,
			setup: []func(*testing.T, *env){func(t *testing.T, e *env) {
				e.srv.AddImage(awsemulator.Image{Name: "mycluster-node", Architecture: "x86_64", Tags: map[string]string{"karpenter.sh/discovery/MyClusterName": "v2"}})
			}},
			want: []string{"mycluster-node " + amd64},
		},
		{
			name: "line 724: a name defaults to the owners self and amazon",
			terms: `
- name: my-ami`,
			// Another account's public arm64 image named my-ami is not picked up.
			want: []string{"my-ami " + amd64},
		},
		{
			name: "line 729: the Name tag",
			terms: `
- tags:
    Name: my-ami`,
			want: []string{"my-ami " + amd64},
		},
		{
			name: "line 735: a name under two owners",
			terms: `
- name: my-ami
  owner: self
- name: my-ami
  owner: "0123456789"`,
			setup: []func(*testing.T, *env){addImage(awsv1.AMI{Name: "my-ami"}, "arm64", "0123456789", time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))},
			want:  []string{"my-ami " + amd64, "my-ami " + arm64},
		},
		{
			name: "line 750: everything the account owns",
			terms: `
- name: "*"
  owner: self`,
			want: []string{"custom-ami-amd64 " + amd64, "custom-ami-arm64 " + arm64},
		},
		{
			name: "line 756: ids",
			terms: `
- id: "ami-123"
- id: "ami-456"`,
			setup: []func(*testing.T, *env){
				addImage(awsv1.AMI{ID: "ami-123", Name: "image-123"}, "x86_64", "", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
				addImage(awsv1.AMI{ID: "ami-456", Name: "image-456"}, "arm64", "", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
			},
			want: []string{"image-123 " + amd64, "image-456 " + arm64},
		},
		{
			name: "line 762: an SSM parameter",
			terms: `
- ssmParameter: "my-custom-parameter"`,
			want: []string{"custom-ami-amd64 " + amd64},
		},
		{
			name:       "line 1397: a pinned AL2 alias, GPU image serving GPUs and accelerators",
			k8sVersion: "1.30",
			terms: `
- alias: al2@v20240807`,
			want: []string{
				"amazon-eks-arm64-node-1.30-v20240807 [arch In arm64; instance-gpu-count DoesNotExist; instance-accelerator-count DoesNotExist] (deprecated)",
				"amazon-eks-gpu-node-1.30-v20240807 [arch In amd64; instance-accelerator-count Exists] (deprecated)",
				"amazon-eks-gpu-node-1.30-v20240807 [arch In amd64; instance-gpu-count Exists] (deprecated)",
				"amazon-eks-node-1.30-v20240807 [arch In amd64; instance-gpu-count DoesNotExist; instance-accelerator-count DoesNotExist] (deprecated)",
			},
		},
		{
			name: "line 1445: the discovery tag, newest per architecture",
			terms: `
- tags:
    karpenter.sh/discovery: "${CLUSTER_NAME}"`,
			want: []string{"custom-ami-amd64 " + amd64, "custom-ami-arm64 " + arm64},
		},
		{
			name:  "al2023@latest follows the recommended parameters",
			terms: `[{alias: al2023@latest}]`,
			want: []string{
				"amazon-eks-node-al2023-arm64-nvidia-1.33-v20261112 [arch In arm64; instance-gpu-count Exists]",
				"amazon-eks-node-al2023-arm64-standard-1.33-v20261112 [arch In arm64; instance-gpu-count DoesNotExist; instance-accelerator-count DoesNotExist]",
				"amazon-eks-node-al2023-x86_64-neuron-1.33-v20261112 [arch In amd64; instance-accelerator-count Exists]",
				"amazon-eks-node-al2023-x86_64-nvidia-1.33-v20261112 [arch In amd64; instance-gpu-count Exists]",
				"amazon-eks-node-al2023-x86_64-standard-1.33-v20261112 [arch In amd64; instance-gpu-count DoesNotExist; instance-accelerator-count DoesNotExist]",
			},
		},
		{
			name:       "a pinned Bottlerocket alias (seed line 673: bottlerocket@v1.20.4)",
			k8sVersion: "1.30",
			terms:      `[{alias: bottlerocket@v1.20.4}]`,
			want: []string{
				"bottlerocket-aws-k8s-1.30-arm64-v1.20.4-7c3e9198 [arch In arm64; instance-gpu-count DoesNotExist; instance-accelerator-count DoesNotExist] (deprecated)",
				"bottlerocket-aws-k8s-1.30-nvidia-arm64-v1.20.4-7c3e9198 [arch In arm64; instance-gpu-count Exists] (deprecated)",
				"bottlerocket-aws-k8s-1.30-nvidia-x86_64-v1.20.4-7c3e9198 [arch In amd64; instance-gpu-count Exists] (deprecated)",
				"bottlerocket-aws-k8s-1.30-x86_64-v1.20.4-7c3e9198 [arch In amd64; instance-gpu-count DoesNotExist; instance-accelerator-count DoesNotExist] (deprecated)",
			},
		},
		{
			name:  "windows2022@latest",
			terms: `[{alias: windows2022@latest}]`,
			want:  []string{"Windows_Server-2022-English-Core-EKS_Optimized-1.33-2026.11.12 [arch In amd64; os In windows; node.kubernetes.io/windows-build In 10.0.20348]"},
		},
		{
			name:  "windows2025@latest",
			terms: `[{alias: windows2025@latest}]`,
			want:  []string{"Windows_Server-2025-English-Core-EKS_Optimized-1.33-2026.11.12 [arch In amd64; os In windows; node.kubernetes.io/windows-build In 10.0.26100]"},
		},
		{
			name:  "a deprecated image is used, and flagged, when nothing else matches",
			terms: `[{name: legacy-ami}]`,
			want:  []string{"legacy-ami " + amd64 + " (deprecated)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			version := tt.k8sVersion
			if version == "" {
				version = "1.33"
			}
			e := newEnv(t, version)
			for _, setup := range tt.setup {
				setup(t, e)
			}
			nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: terms[awsv1.AMISelectorTerm](t, tt.terms)}}
			got, err := e.resolver.AMIs(context.Background(), nc)
			if err != nil {
				t.Fatal(err)
			}
			var rendered []string
			for _, a := range got {
				rendered = append(rendered, amiString(a))
			}
			if strings.Join(sortStrings(rendered), "\n") != strings.Join(sortStrings(tt.want), "\n") {
				t.Errorf("AMIs:\n  %s\nwant:\n  %s", strings.Join(sortStrings(rendered), "\n  "), strings.Join(sortStrings(tt.want), "\n  "))
			}
		})
	}
}

func TestAMIWildcardNameTakesTheNewestWindowsImage(t *testing.T) {
	// Seed line 744: name "*EKS*". Only the Windows images spell EKS in capitals, and every
	// one of them is amd64, so one image serves the single requirement set: the newest.
	e := newEnv(t, "1.33")
	got, err := e.resolver.AMIs(context.Background(), &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
		AMISelectorTerms: terms[awsv1.AMISelectorTerm](t, `
- name: "*EKS*"`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0].Name, "Windows_Server-") || !strings.HasSuffix(got[0].Name, "-2026.11.12") ||
		got[0].Requirements[0].Key != corev1.LabelArchStable || got[0].Requirements[0].Values[0] != "amd64" {
		t.Errorf("AMIs = %+v", got)
	}
}

func TestAMIFailures(t *testing.T) {
	tests := []struct {
		name       string
		k8sVersion string
		terms      string
		wantClass  Class
		wantText   string
	}{
		{"AWS publishes no AL2 AMIs for 1.33", "1.33", `[{alias: al2@latest}]`, ClassNoMatch, "/aws/service/eks/optimized-ami/1.33/amazon-linux-2/recommended/image_id"},
		{"unknown release", "1.33", `[{alias: al2023@v20990101}]`, ClassNoMatch, "alias al2023@v20990101 has no images for Kubernetes 1.33"},
		{"unknown Kubernetes version", "1.20", `[{alias: bottlerocket@latest}]`, ClassNoMatch, "Kubernetes 1.20"},
		{"missing SSM parameter", "1.33", `[{ssmParameter: /my/missing/parameter}]`, ClassNotFound, "ParameterNotFound"},
		{"name matches nothing", "1.33", `[{name: nothing-like-this}]`, ClassNoMatch, "no AMIs matched"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.k8sVersion)
			_, err := e.resolver.AMIs(context.Background(), &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: terms[awsv1.AMISelectorTerm](t, tt.terms)}})
			if err == nil {
				t.Fatal("resolved; want an error")
			}
			if c := Classify(err); c.Class != tt.wantClass {
				t.Errorf("class = %s, want %s (%v)", c.Class, tt.wantClass, err)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not mention %q", err, tt.wantText)
			}
		})
	}
}

func TestAMIsFollowARemovedParameter(t *testing.T) {
	e := newEnv(t, "1.33")
	nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}}}
	e.srv.DeleteParameter("/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/neuron/recommended/image_id")
	got, err := e.resolver.AMIs(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range got {
		if strings.Contains(a.Name, "neuron") {
			t.Errorf("neuron AMI %s resolved after its parameter was removed", a.Name)
		}
	}
	if len(got) != 4 {
		t.Errorf("AMIs = %d, want the 4 variants whose parameters remain", len(got))
	}
}
