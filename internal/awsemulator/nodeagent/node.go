package nodeagent

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/amifamily"
	"github.com/joinery-dev/joinery/cloudprovider/aws/catalogdata"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instancetype"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// reportedMemoryShare is the share of an instance type's advertised memory its kubelet reports
// as capacity: the firmware and kernel keep the rest. Karpenter's default VM overhead estimate
// (7.5 %) is deliberately a little more, so planned pods still fit.
const reportedMemoryShare = 0.95

// nodeFor builds the Node inst's kubelet would register, nil when the user data bootstraps
// into another cluster, or an error when the instance could not bootstrap at all.
func (a *Agent) nodeFor(inst awsemulator.Instance) (*corev1.Node, error) {
	family, err := a.familyOf(inst)
	if err != nil {
		return nil, err
	}
	boot, err := amifamily.Parse(family, []byte(inst.UserData))
	if err != nil {
		return nil, err
	}
	if a.opts.ClusterName != "" && boot.ClusterName != a.opts.ClusterName {
		return nil, nil
	}
	it, ok := catalogdata.Lookup(inst.InstanceType)
	if !ok {
		return nil, fmt.Errorf("instance type %s is not in the catalog", inst.InstanceType)
	}
	capacity := capacityOf(it, inst, family, boot)
	settings, err := instancetype.KubeletSettings(&boot.Kubelet)
	if err != nil {
		return nil, fmt.Errorf("kubelet settings in the user data: %w", err)
	}
	overhead, err := cloudprovider.NewOverhead(capacity, settings)
	if err != nil {
		return nil, fmt.Errorf("kubelet reservations in the user data: %w", err)
	}
	// The kubelet's allocatable is capacity less its reservations, never negative: exactly
	// what an InstanceType computes.
	allocatable := (&cloudprovider.InstanceType{Capacity: capacity, Overhead: overhead}).Allocatable()

	name := privateDNSName(inst.PrivateIP, a.server.Region)
	labels := map[string]string{
		corev1.LabelHostname:           name,
		corev1.LabelOSStable:           osOf(family),
		corev1.LabelArchStable:         archOf(inst.Architecture),
		corev1.LabelInstanceTypeStable: inst.InstanceType,
		corev1.LabelTopologyZone:       inst.Zone,
		corev1.LabelTopologyRegion:     a.server.Region,
	}
	for k, v := range boot.Labels {
		labels[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: map[string]string{KwokAnnotation: "fake"},
		},
		Spec: corev1.NodeSpec{
			ProviderID: ProviderID(inst),
			Taints:     boot.Taints,
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: inst.PrivateIP},
				{Type: corev1.NodeHostName, Address: name},
				{Type: corev1.NodeInternalDNS, Address: name},
			},
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:    archOf(inst.Architecture),
				OperatingSystem: osOf(family),
				KubeletVersion:  "v1.36.3",
			},
		},
	}, nil
}

// familyOf tells which bootstrap the instance's image runs: AWS's EKS images by name, other
// images by the format of the user data they were given.
func (a *Agent) familyOf(inst awsemulator.Instance) (string, error) {
	for _, img := range a.server.Images("*") {
		if img.ID != inst.ImageID {
			continue
		}
		switch name := img.Name; {
		case strings.HasPrefix(name, "amazon-eks-node-al2023-"):
			return awsv1.AMIFamilyAL2023, nil
		case strings.HasPrefix(name, "amazon-eks-"):
			return awsv1.AMIFamilyAL2, nil
		case strings.HasPrefix(name, "bottlerocket-"):
			return awsv1.AMIFamilyBottlerocket, nil
		case strings.HasPrefix(name, "Windows_Server-2019-"):
			return awsv1.AMIFamilyWindows2019, nil
		case strings.HasPrefix(name, "Windows_Server-2022-"):
			return awsv1.AMIFamilyWindows2022, nil
		case strings.HasPrefix(name, "Windows_Server-2025-"):
			return awsv1.AMIFamilyWindows2025, nil
		}
		break
	}
	switch data := inst.UserData; {
	case strings.Contains(data, "node.eks.aws/v1alpha1"):
		return awsv1.AMIFamilyAL2023, nil
	case strings.Contains(data, "/etc/eks/bootstrap.sh"):
		return awsv1.AMIFamilyAL2, nil
	case strings.Contains(data, "Start-EKSBootstrap.ps1"):
		return awsv1.AMIFamilyWindows2022, nil
	case strings.Contains(data, "[settings.kubernetes]"):
		return awsv1.AMIFamilyBottlerocket, nil
	}
	return "", fmt.Errorf("image %s runs no EKS bootstrap this user data configures", inst.ImageID)
}

// capacityOf is what the kubelet reports: vCPUs, memory less what the machine keeps, the pods
// the bootstrap allows, the root (or RAID0 instance-store) volume, and accelerators.
func capacityOf(it catalogdata.InstanceType, inst awsemulator.Instance, family string, boot amifamily.NodeBootstrap) corev1.ResourceList {
	pods := int64(boot.MaxPods)
	if pods == 0 {
		pods = int64(it.MaxENIs)*int64(it.IPv4PerENI-1) + 2
	}
	out := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(it.VCPUs), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(int64(float64(it.MemoryMiB)*reportedMemoryShare)*1024*1024, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: ephemeralStorage(it, inst, family, boot),
	}
	if it.GPU != nil {
		name := corev1.ResourceName("nvidia.com/gpu")
		if strings.EqualFold(it.GPU.Manufacturer, "AMD") {
			name = "amd.com/gpu"
		}
		out[name] = *resource.NewQuantity(int64(it.GPU.Count), resource.DecimalSI)
	}
	if it.Neuron != nil {
		out["aws.amazon.com/neuron"] = *resource.NewQuantity(int64(it.Neuron.Count), resource.DecimalSI)
	}
	return out
}

func ephemeralStorage(it catalogdata.InstanceType, inst awsemulator.Instance, family string, boot amifamily.NodeBootstrap) resource.Quantity {
	if boot.RAID0 && it.InstanceStoreTotalGB > 0 {
		return *resource.NewQuantity(it.InstanceStoreTotalGB*1000*1000*1000, resource.DecimalSI)
	}
	device := amifamily.EphemeralDeviceName(family)
	for _, bdm := range inst.BlockDeviceMappings {
		if bdm.DeviceName == device {
			return *resource.NewQuantity(int64(bdm.VolumeSizeGiB)*1024*1024*1024, resource.BinarySI)
		}
	}
	return resource.MustParse("20Gi")
}

// privateDNSName is EC2's private DNS name for an address in region.
func privateDNSName(ip, region string) string {
	host := "ip-" + strings.ReplaceAll(ip, ".", "-")
	if region == "us-east-1" {
		return host + ".ec2.internal"
	}
	return host + "." + region + ".compute.internal"
}

func osOf(family string) string {
	if strings.HasPrefix(family, "Windows") {
		return "windows"
	}
	return "linux"
}

// archOf maps EC2's architecture names to Kubernetes'.
func archOf(ec2Arch string) string {
	if ec2Arch == "arm64" {
		return "arm64"
	}
	return "amd64"
}
