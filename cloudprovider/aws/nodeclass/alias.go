package nodeclass

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

// variant is a kind of EKS-optimized image and the instance types it serves.
type variant string

const (
	variantStandard variant = "standard" // no GPUs or accelerators
	variantNvidia   variant = "nvidia"   // NVIDIA GPUs
	variantNeuron   variant = "neuron"   // AWS Inferentia/Trainium accelerators
)

// aliasParameter is one public SSM parameter an alias reads, and the requirement sets the
// image it names serves (one per variant; AL2's GPU image serves both GPUs and accelerators).
type aliasParameter struct {
	path         string
	requirements [][]corev1.NodeSelectorRequirement
}

// aliasParameters lists the parameters AWS publishes for an alias family at a Kubernetes
// version: version "latest" reads the recommended/latest parameters, a release tag the
// versioned ones (vYYYYMMDD for Amazon Linux, vX.Y.Z for Bottlerocket).
func aliasParameters(alias awsv1.AMIAlias, k8sVersion string) ([]aliasParameter, error) {
	latest := alias.Version == "latest"
	switch alias.Family {
	case awsv1.AMIFamilyAL2023:
		var out []aliasParameter
		for _, v := range []struct {
			arch    string
			variant variant
		}{{"x86_64", variantStandard}, {"arm64", variantStandard}, {"x86_64", variantNvidia}, {"arm64", variantNvidia}, {"x86_64", variantNeuron}} {
			leaf := "recommended"
			if !latest {
				leaf = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", v.arch, v.variant, k8sVersion, alias.Version)
			}
			out = append(out, aliasParameter{
				path:         fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id", k8sVersion, v.arch, v.variant, leaf),
				requirements: [][]corev1.NodeSelectorRequirement{variantRequirements(kubeArch(v.arch), v.variant)},
			})
		}
		return out, nil
	case awsv1.AMIFamilyAL2:
		var out []aliasParameter
		for _, v := range []struct {
			dir, prefix, arch string
			variants          []variant
		}{
			{"amazon-linux-2", "amazon-eks-node", "amd64", []variant{variantStandard}},
			{"amazon-linux-2-arm64", "amazon-eks-arm64-node", "arm64", []variant{variantStandard}},
			{"amazon-linux-2-gpu", "amazon-eks-gpu-node", "amd64", []variant{variantNvidia, variantNeuron}},
		} {
			leaf := "recommended"
			if !latest {
				leaf = fmt.Sprintf("%s-%s-%s", v.prefix, k8sVersion, alias.Version)
			}
			p := aliasParameter{path: fmt.Sprintf("/aws/service/eks/optimized-ami/%s/%s/%s/image_id", k8sVersion, v.dir, leaf)}
			for _, vr := range v.variants {
				p.requirements = append(p.requirements, variantRequirements(v.arch, vr))
			}
			out = append(out, p)
		}
		return out, nil
	case awsv1.AMIFamilyBottlerocket:
		// Bottlerocket's parameters name the version without the GitHub tag's leading v.
		version := "latest"
		if !latest {
			version = strings.TrimPrefix(alias.Version, "v")
		}
		var out []aliasParameter
		for _, v := range []struct {
			suffix  string
			variant variant
		}{{"", variantStandard}, {"-nvidia", variantNvidia}} {
			for _, arch := range []string{"x86_64", "arm64"} {
				out = append(out, aliasParameter{
					path:         fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id", k8sVersion, v.suffix, arch, version),
					requirements: [][]corev1.NodeSelectorRequirement{variantRequirements(kubeArch(arch), v.variant)},
				})
			}
		}
		return out, nil
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		if !latest {
			return nil, fmt.Errorf("alias version %q: Windows aliases support only \"latest\"", alias.Version)
		}
		server := strings.TrimPrefix(alias.Family, "Windows")
		return []aliasParameter{{
			path: fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", server, k8sVersion),
			requirements: [][]corev1.NodeSelectorRequirement{{
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
				{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{string(corev1.Windows)}},
				{Key: corev1.LabelWindowsBuild, Operator: corev1.NodeSelectorOpIn, Values: []string{awsv1.WindowsBuild(alias.Family)}},
			}},
		}}, nil
	}
	return nil, fmt.Errorf("alias family %q has no EKS-optimized AMIs", alias.Family)
}

// variantRequirements are the requirements of an EKS-optimized image: its architecture, and
// whether instance types must (nvidia, neuron) or must not (standard) have GPUs or
// accelerators.
func variantRequirements(arch string, v variant) []corev1.NodeSelectorRequirement {
	reqs := []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}
	switch v {
	case variantNvidia:
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists})
	case variantNeuron:
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists})
	default:
		reqs = append(reqs,
			corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
			corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist})
	}
	return reqs
}

// kubeArch maps EC2's architecture names to kubernetes.io/arch values; "" for architectures
// Kubernetes nodes do not run on.
func kubeArch(ec2Arch string) string {
	switch ec2Arch {
	case "x86_64":
		return "amd64"
	case "arm64":
		return "arm64"
	}
	return ""
}
