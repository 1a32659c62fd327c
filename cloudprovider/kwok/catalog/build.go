package catalog

import (
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

// DefaultEphemeralStorage is the root volume of every node, the size of Karpenter's default EBS
// root volume.
var DefaultEphemeralStorage = resource.MustParse("20Gi")

// Extended resources of the catalog's types, named as their device plugins and the VPC resource
// controller advertise them.
const (
	ResourceNeuron     corev1.ResourceName = "aws.amazon.com/neuron"
	ResourceNeuronCore corev1.ResourceName = "aws.amazon.com/neuroncore"
	ResourcePodENI     corev1.ResourceName = "vpc.amazonaws.com/pod-eni"
)

// BuildOptions say how capacity becomes allocatable.
type BuildOptions struct {
	// VMMemoryOverheadPercent is the fraction of advertised memory a node does not report;
	// cloudprovider.DefaultVMMemoryOverheadPercent if nil.
	VMMemoryOverheadPercent *float64
	// Kubelet holds maxPods, podsPerCore, reserved resources and eviction thresholds.
	Kubelet cloudprovider.KubeletSettings
	// EphemeralStorage is each node's ephemeral-storage capacity; DefaultEphemeralStorage if zero.
	EphemeralStorage resource.Quantity
	// DisableReservedCapacity leaves reserved offerings out, so none is launched or priced:
	// Karpenter's ReservedCapacity feature gate turned off.
	DisableReservedCapacity bool
}

// absentUnlessSet are the well-known instance labels a type without a value for them gets
// DoesNotExist for, so that requiring one (say a GPU count) rules the type out.
var absentUnlessSet = awsv1.InstanceTypeLabels

// Build returns the cloud provider's instance types from the catalog, in catalog order.
// It rejects a catalog with duplicate names or a type it cannot describe.
func (f *File) Build(opts BuildOptions) (cloudprovider.InstanceTypes, error) {
	names := sets.New[string]()
	out := make(cloudprovider.InstanceTypes, 0, len(f.InstanceTypes))
	for i := range f.InstanceTypes {
		spec := &f.InstanceTypes[i]
		if names.Has(spec.Name) {
			return nil, fmt.Errorf("instance type %q: listed twice", spec.Name)
		}
		names.Insert(spec.Name)
		it, err := spec.build(opts)
		if err != nil {
			return nil, fmt.Errorf("instance type %q: %w", spec.Name, err)
		}
		out = append(out, it)
	}
	return out, nil
}

func (s *InstanceType) build(opts BuildOptions) (*cloudprovider.InstanceType, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	offerings, err := s.offerings(opts)
	if err != nil {
		return nil, err
	}
	capacity := s.capacity(opts)
	overhead, err := cloudprovider.NewOverhead(capacity, opts.Kubelet)
	if err != nil {
		return nil, err
	}
	reqs := s.requirements(offerings)
	return &cloudprovider.InstanceType{
		Name:         s.Name,
		Requirements: reqs,
		Offerings:    offerings,
		Capacity:     capacity,
		Overhead:     overhead,
		VolumeLimits: map[string]int32{cloudprovider.EBSCSIDriver: cloudprovider.EBSVolumeLimit(s.ebsFacts())},
		Devices:      cloudprovider.DevicesFromLabels(reqs.Labels(), acceleratorLabels),
	}, nil
}

// acceleratorLabels are the EC2 labels the catalog describes GPUs and Neuron devices with.
var acceleratorLabels = cloudprovider.AcceleratorLabels{
	GPUName:                 awsv1.LabelInstanceGPUName,
	GPUManufacturer:         awsv1.LabelInstanceGPUManufacturer,
	GPUCount:                awsv1.LabelInstanceGPUCount,
	GPUMemory:               awsv1.LabelInstanceGPUMemory,
	AcceleratorName:         awsv1.LabelInstanceAcceleratorName,
	AcceleratorManufacturer: awsv1.LabelInstanceAcceleratorManufacturer,
	AcceleratorCount:        awsv1.LabelInstanceAcceleratorCount,
}

// ebsFacts are the facts the EBS CSI driver's attach limit depends on: the hypervisor label
// (a type without one is Nitro) and the NVMe instance store volumes.
func (s *InstanceType) ebsFacts() cloudprovider.EBSFacts {
	return cloudprovider.EBSFacts{
		Name:              s.Name,
		Xen:               s.Labels[awsv1.LabelInstanceHypervisor] == "xen",
		NVMeInstanceStore: s.NVMeInstanceStore,
	}
}

func (s *InstanceType) validate() error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, errors.New("name is empty"))
	}
	if s.Arch != "amd64" && s.Arch != "arm64" {
		errs = append(errs, fmt.Errorf("arch %q is not amd64 or arm64", s.Arch))
	}
	if len(s.OperatingSystems) == 0 {
		errs = append(errs, errors.New("no operatingSystems"))
	}
	if s.CPU <= 0 || s.MemoryMiB <= 0 || s.Pods <= 0 {
		errs = append(errs, fmt.Errorf("cpu %d, memoryMiB %d and pods %d must be positive", s.CPU, s.MemoryMiB, s.Pods))
	}
	if s.GPU != nil && (s.GPU.Count <= 0 || s.GPU.ResourceName == "") {
		errs = append(errs, errors.New("gpu needs a positive count and a resourceName"))
	}
	if s.Neuron != nil && (s.Neuron.Name == "" || s.Neuron.Count <= 0 || s.Neuron.Cores <= 0) {
		errs = append(errs, errors.New("neuron needs a name, a positive count and positive cores"))
	}
	if s.PodENI < 0 {
		errs = append(errs, fmt.Errorf("podENI %d is negative", s.PodENI))
	}
	if len(s.Offerings) == 0 {
		errs = append(errs, errors.New("no offerings"))
	}
	return errors.Join(errs...)
}

func (s *InstanceType) offerings(opts BuildOptions) (cloudprovider.Offerings, error) {
	out := make(cloudprovider.Offerings, 0, len(s.Offerings))
	for _, o := range s.Offerings {
		if o.Zone == "" || o.Price < 0 {
			return nil, fmt.Errorf("offering %+v: needs a zone and a non-negative price", o)
		}
		switch o.CapacityType {
		case karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand:
			if o.ReservationID != "" {
				return nil, fmt.Errorf("offering %+v: only reserved offerings have a reservationID", o)
			}
			out = append(out, cloudprovider.NewOffering(o.Zone, o.CapacityType, o.Price, !o.Unavailable))
		case karpv1.CapacityTypeReserved:
			if o.ReservationID == "" {
				return nil, fmt.Errorf("offering %+v: a reserved offering needs a reservationID", o)
			}
			if opts.DisableReservedCapacity {
				continue
			}
			offering := cloudprovider.NewReservedOffering(o.Zone, o.ReservationID, o.Price, o.ReservationCapacity)
			offering.Available = offering.Available && !o.Unavailable
			out = append(out, offering)
		default:
			return nil, fmt.Errorf("offering %+v: capacityType must be spot, on-demand or reserved", o)
		}
	}
	return out, nil
}

// requirements are the type's labels plus the zones and capacity types of its offerings.
func (s *InstanceType) requirements(offerings cloudprovider.Offerings) scheduling.Requirements {
	labels := map[string]string{
		corev1.LabelInstanceTypeStable: s.Name,
		corev1.LabelArchStable:         s.Arch,
		awsv1.LabelInstanceCPU:         strconv.FormatInt(s.CPU, 10),
		awsv1.LabelInstanceMemory:      strconv.FormatInt(s.MemoryMiB, 10),
		awsv1.LabelInstancePods:        strconv.FormatInt(s.Pods, 10),
	}
	if g := s.GPU; g != nil {
		labels[awsv1.LabelInstanceGPUName] = g.Name
		labels[awsv1.LabelInstanceGPUManufacturer] = g.Manufacturer
		labels[awsv1.LabelInstanceGPUCount] = strconv.FormatInt(g.Count, 10)
		labels[awsv1.LabelInstanceGPUMemory] = strconv.FormatInt(g.MemoryMiB, 10)
	}
	if n := s.Neuron; n != nil {
		labels[awsv1.LabelInstanceAcceleratorName] = n.Name
		labels[awsv1.LabelInstanceAcceleratorManufacturer] = "aws"
		labels[awsv1.LabelInstanceAcceleratorCount] = strconv.FormatInt(n.Count, 10)
	}
	for k, v := range s.Labels {
		labels[k] = v
	}
	reqs := scheduling.NewRequirements()
	for k, v := range labels {
		reqs.Add(scheduling.NewRequirement(k, corev1.NodeSelectorOpIn, v))
	}
	for _, key := range absentUnlessSet {
		if _, ok := labels[key]; !ok {
			reqs.Add(scheduling.NewRequirement(key, corev1.NodeSelectorOpDoesNotExist))
		}
	}
	reqs.Add(scheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, s.OperatingSystems...))
	zones, capacityTypes := sets.New[string](), sets.New[string]()
	for _, o := range offerings {
		zones.Insert(o.Zone())
		capacityTypes.Insert(o.CapacityType())
	}
	reqs.Add(scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, sets.List(zones)...))
	reqs.Add(scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, sets.List(capacityTypes)...))
	return reqs
}

func (s *InstanceType) capacity(opts BuildOptions) corev1.ResourceList {
	overheadPercent := cloudprovider.DefaultVMMemoryOverheadPercent
	if opts.VMMemoryOverheadPercent != nil {
		overheadPercent = *opts.VMMemoryOverheadPercent
	}
	storage := opts.EphemeralStorage
	if storage.IsZero() {
		storage = DefaultEphemeralStorage
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(s.CPU, resource.DecimalSI),
		corev1.ResourceMemory:           cloudprovider.MemoryCapacity(s.MemoryMiB, overheadPercent),
		corev1.ResourcePods:             *resource.NewQuantity(cloudprovider.Pods(s.Pods, s.CPU, opts.Kubelet), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: storage.DeepCopy(),
	}
	if s.GPU != nil {
		capacity[corev1.ResourceName(s.GPU.ResourceName)] = *resource.NewQuantity(s.GPU.Count, resource.DecimalSI)
	}
	if s.Neuron != nil {
		capacity[ResourceNeuron] = *resource.NewQuantity(s.Neuron.Count, resource.DecimalSI)
		capacity[ResourceNeuronCore] = *resource.NewQuantity(s.Neuron.Count*s.Neuron.Cores, resource.DecimalSI)
	}
	if s.PodENI > 0 {
		capacity[ResourcePodENI] = *resource.NewQuantity(s.PodENI, resource.DecimalSI)
	}
	return capacity
}
