package instancetype

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

// reservedPriceFraction prices reserved capacity, already paid for, far below on-demand and
// spot so that every price-ordered choice takes it first: on-demand / 10 000 000, as the
// specification's operator notes (seed 002) give it.
const reservedPriceFraction = 1e-7

// builder builds instance types for one EC2NodeClass.
type builder struct {
	region          string
	prices          Prices
	overheadPercent float64
	reservedENIs    int

	class        *awsv1.EC2NodeClass
	family       string
	os           string
	windowsBuild string
	// zones are the zones of the class's subnets, sorted; zoneIDs maps them to zone IDs.
	zones    []string
	zoneIDs  map[string]string
	settings cloudprovider.KubeletSettings
	// amis are the requirements of the class's AMIs; a type must meet one.
	amis         []scheduling.Requirements
	reservations map[string][]awsv1.CapacityReservation // by instance type

	unavailable         map[cloudprovider.OfferingKey]time.Time
	reservationCapacity map[string]int
	zonesAway           sets.Set[string] // zone IDs
}

func (p *Provider) newBuilder(class *awsv1.EC2NodeClass, opts ListOptions) (*builder, error) {
	if class == nil {
		return nil, errors.New("no EC2NodeClass")
	}
	if len(class.Status.Subnets) == 0 {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %s has no resolved subnets", class.Name))
	}
	if len(class.Status.AMIs) == 0 {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %s has no resolved AMIs", class.Name))
	}
	settings, err := KubeletSettings(class.Spec.Kubelet)
	if err != nil {
		return nil, fmt.Errorf("ec2nodeclass %s: %w", class.Name, err)
	}
	b := &builder{
		region:              p.opts.Region,
		prices:              p.prices,
		overheadPercent:     *p.opts.VMMemoryOverheadPercent,
		reservedENIs:        p.opts.ReservedENIs,
		class:               class,
		family:              class.AMIFamily(),
		os:                  string(corev1.Linux),
		zoneIDs:             map[string]string{},
		settings:            settings,
		reservations:        map[string][]awsv1.CapacityReservation{},
		unavailable:         opts.Unavailable,
		reservationCapacity: opts.ReservationCapacity,
		zonesAway:           opts.ZonesAway,
	}
	if build := awsv1.WindowsBuild(b.family); build != "" {
		b.os, b.windowsBuild = string(corev1.Windows), build
	}
	zones := sets.New[string]()
	for _, s := range class.Status.Subnets {
		zones.Insert(s.Zone)
		if s.ZoneID != "" {
			b.zoneIDs[s.Zone] = s.ZoneID
		}
	}
	b.zones = sets.List(zones)
	for _, ami := range class.Status.AMIs {
		reqs := scheduling.NewRequirements()
		for _, r := range ami.Requirements {
			reqs.Add(scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
		}
		b.amis = append(b.amis, reqs)
	}
	for _, cr := range class.Status.CapacityReservations {
		if p.opts.DisableReservedCapacity {
			break // ReservedCapacity=false: no reserved offering
		}
		b.reservations[cr.InstanceType] = append(b.reservations[cr.InstanceType], cr)
	}
	return b, nil
}

// build returns the instance type info describes, or nil when the class cannot launch it (no
// AMI serves it, or it has no offering in the class's zones). static are info's
// staticLabels.
func (b *builder) build(info *ec2types.InstanceTypeInfo, static scheduling.Requirements, offeredIn sets.Set[string]) (*cloudprovider.InstanceType, error) {
	if static == nil {
		return nil, nil
	}
	capacity := b.capacity(info)
	reqs := b.classLabels(static, capacity)
	if !b.servedByAnAMI(reqs) {
		return nil, nil
	}
	offerings := b.offerings(info, offeredIn)
	if len(offerings) == 0 {
		return nil, nil
	}
	addOfferingRequirements(reqs, b.region, offerings)
	overhead, err := cloudprovider.NewOverhead(capacity, b.settings)
	if err != nil {
		return nil, fmt.Errorf("ec2nodeclass %s kubelet: %w", b.class.Name, err)
	}
	return &cloudprovider.InstanceType{
		Name:         string(info.InstanceType),
		Requirements: reqs,
		Offerings:    offerings,
		Capacity:     capacity,
		Overhead:     overhead,
		VolumeLimits: map[string]int32{cloudprovider.EBSCSIDriver: cloudprovider.EBSVolumeLimit(ebsFacts(info))},
		Devices:      cloudprovider.DevicesFromLabels(static.Labels(), AcceleratorLabels),
	}, nil
}

// AcceleratorLabels are EC2's well-known labels for a type's GPUs and accelerators, from which
// the devices its nodes publish through DRA are predicted.
var AcceleratorLabels = cloudprovider.AcceleratorLabels{
	GPUName:                 awsv1.LabelInstanceGPUName,
	GPUManufacturer:         awsv1.LabelInstanceGPUManufacturer,
	GPUCount:                awsv1.LabelInstanceGPUCount,
	GPUMemory:               awsv1.LabelInstanceGPUMemory,
	AcceleratorName:         awsv1.LabelInstanceAcceleratorName,
	AcceleratorManufacturer: awsv1.LabelInstanceAcceleratorManufacturer,
	AcceleratorCount:        awsv1.LabelInstanceAcceleratorCount,
}

func (b *builder) servedByAnAMI(reqs scheduling.Requirements) bool {
	for _, ami := range b.amis {
		if reqs.Intersects(ami) == nil {
			return true
		}
	}
	return false
}

// offerings are the type's ways to be bought in the class's zones: on-demand and spot where
// they are priced, and the class's capacity reservations of the type.
func (b *builder) offerings(info *ec2types.InstanceTypeInfo, offeredIn sets.Set[string]) cloudprovider.Offerings {
	name := string(info.InstanceType)
	onDemand, hasOnDemand := b.prices.OnDemandPrice(name)
	var out cloudprovider.Offerings
	for _, zone := range b.zones {
		if !offeredIn.Has(zone) {
			continue
		}
		if hasOnDemand && slices.Contains(info.SupportedUsageClasses, ec2types.UsageClassTypeOnDemand) {
			out = append(out, b.withZoneID(cloudprovider.NewOffering(zone, karpv1.CapacityTypeOnDemand, onDemand, b.available(karpv1.CapacityTypeOnDemand, name, zone))))
		}
		if spot, ok := b.prices.SpotPrice(name, zone); ok && slices.Contains(info.SupportedUsageClasses, ec2types.UsageClassTypeSpot) {
			out = append(out, b.withZoneID(cloudprovider.NewOffering(zone, karpv1.CapacityTypeSpot, spot, b.available(karpv1.CapacityTypeSpot, name, zone))))
		}
	}
	for _, cr := range b.reservations[name] {
		if !slices.Contains(b.zones, cr.AvailabilityZone) {
			continue
		}
		capacity, known := b.reservationCapacity[cr.ID]
		if !known {
			capacity = 1
		}
		o := cloudprovider.NewReservedOffering(cr.AvailabilityZone, cr.ID, onDemand*reservedPriceFraction, capacity)
		reservationType := cr.ReservationType
		if reservationType == "" {
			reservationType = awsv1.CapacityReservationTypeDefault
		}
		o.Requirements.Add(scheduling.NewRequirement(awsv1.LabelCapacityReservationType, corev1.NodeSelectorOpIn, string(reservationType)))
		o.Available = o.Available && cr.State != awsv1.CapacityReservationStateExpiring &&
			b.available(karpv1.CapacityTypeReserved, name, cr.AvailabilityZone)
		out = append(out, b.withZoneID(o))
	}
	return out
}

// available reports whether an offering may be planned and launched: not recently refused, and
// not in a zone traffic is shifted away from. ARC names zones by ID; a subnet without a zone ID
// is matched by the zone's name.
func (b *builder) available(capacityType, instanceType, zone string) bool {
	if id, ok := b.zoneIDs[zone]; ok && b.zonesAway.Has(id) || !ok && b.zonesAway.Has(zone) {
		return false
	}
	_, unavailable := b.unavailable[cloudprovider.OfferingKey{CapacityType: capacityType, InstanceType: instanceType, Zone: zone}]
	return !unavailable
}

func (b *builder) withZoneID(o *cloudprovider.Offering) *cloudprovider.Offering {
	if id, ok := b.zoneIDs[o.Zone()]; ok {
		o.Requirements.Add(scheduling.NewRequirement(awsv1.LabelTopologyZoneID, corev1.NodeSelectorOpIn, id))
	}
	return o
}

// addOfferingRequirements adds the region and the sets the offerings choose from: zones, zone
// IDs and capacity types.
func addOfferingRequirements(reqs scheduling.Requirements, region string, offerings cloudprovider.Offerings) {
	zones, zoneIDs, capacityTypes := sets.New[string](), sets.New[string](), sets.New[string]()
	for _, o := range offerings {
		zones.Insert(o.Zone())
		capacityTypes.Insert(o.CapacityType())
		if id := o.Requirements.Get(awsv1.LabelTopologyZoneID); id.Operator() == corev1.NodeSelectorOpIn {
			zoneIDs.Insert(id.Values()...)
		}
	}
	reqs.Add(
		scheduling.NewRequirement(corev1.LabelTopologyRegion, corev1.NodeSelectorOpIn, region),
		scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, sets.List(zones)...),
		scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, sets.List(capacityTypes)...),
	)
	if zoneIDs.Len() > 0 {
		reqs.Add(scheduling.NewRequirement(awsv1.LabelTopologyZoneID, corev1.NodeSelectorOpIn, sets.List(zoneIDs)...))
	}
}

// ebsFacts are the facts of info the EBS CSI driver's attach limit depends on.
func ebsFacts(info *ec2types.InstanceTypeInfo) cloudprovider.EBSFacts {
	f := cloudprovider.EBSFacts{
		Name: string(info.InstanceType),
		Xen:  info.Hypervisor == ec2types.InstanceTypeHypervisorXen,
	}
	if s := info.InstanceStorageInfo; s != nil && s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported {
		for _, d := range s.Disks {
			f.NVMeInstanceStore += aws.ToInt32(d.Count)
		}
	}
	if e := info.EbsInfo; e != nil && e.AttachmentLimitType == ec2types.AttachmentLimitTypeDedicated {
		f.Dedicated = aws.ToInt32(e.MaximumEbsAttachments)
	}
	return f
}
