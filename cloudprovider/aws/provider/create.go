package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/amifamily"
	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instance"
	"github.com/joinery-dev/joinery/cloudprovider/aws/launchtemplate"
	"github.com/joinery-dev/joinery/scheduling"
)

// candidate is one offering a NodeClaim may launch as, with where and from what image.
type candidate struct {
	it       *cloudprovider.InstanceType
	offering *cloudprovider.Offering
	subnetID string
	ami      awsv1.AMI
}

// Create launches an instance for nodeClaim; see cloudprovider.CloudProvider.
func (p *Provider) Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	class, err := p.readyNodeClass(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		return nil, fmt.Errorf("nodeclaim %s: %w", nodeClaim.Name, err)
	}
	if err := launchtemplate.CheckClassTags(class.Spec.Tags); err != nil {
		return nil, cloudprovider.NewCreateError(err, "InvalidTags", fmt.Sprintf("ec2nodeclass %s: %s", class.Name, err))
	}
	its, err := p.listInstanceTypes(ctx, class, nodeClaim.Labels[karpv1.NodePoolLabelKey])
	if err != nil {
		return nil, err
	}
	reqs := scheduling.FromNodeSelectorRequirementsWithMinValues(nodeClaim.Spec.Requirements...)
	candidates := p.candidates(class, its, reqs, nodeClaim.Spec.Resources.Requests)
	if len(candidates) == 0 {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("nodeclaim %s: no available offering of ec2nodeclass %s meets its requirements and requests", nodeClaim.Name, class.Name))
	}
	capacityType := candidates[0].offering.CapacityType()
	candidates = slices.DeleteFunc(candidates, func(c candidate) bool { return c.offering.CapacityType() != capacityType })
	candidates = cheapestTypes(candidates, p.opts.MaxInstanceTypes)

	req, byTemplate, err := p.launchRequest(ctx, nodeClaim, class, reqs, capacityType, candidates)
	if err != nil {
		return nil, err
	}
	launched, err := p.instances.Launch(ctx, req)
	var none *instance.NoInstanceError
	switch {
	case errors.As(err, &none):
		if !none.ErrorsShared {
			p.recordFleetErrors(ctx, none.Errors)
		}
		return nil, p.noInstanceError(nodeClaim, none)
	case awserr.IsUnauthorized(err):
		code := awserr.Code(err)
		return nil, cloudprovider.NewCreateError(err, code, fmt.Sprintf("EC2 refused to launch: %s (check the controller's IAM permissions)", code))
	case err != nil:
		return nil, fmt.Errorf("launching nodeclaim %s: %w", nodeClaim.Name, err)
	}
	if !launched.ErrorsShared {
		// A batch's fleet errors are recorded by one of its launches.
		p.recordFleetErrors(ctx, launched.Errors)
	}

	chosen, ok := findCandidate(candidates, launched.Instance.InstanceType, launched.Instance.Zone, byTemplate[launched.TemplateName])
	if !ok {
		return nil, fmt.Errorf("nodeclaim %s: EC2 launched %s (%s in %s), which was not asked for", nodeClaim.Name, launched.Instance.ID, launched.Instance.InstanceType, launched.Instance.Zone)
	}
	p.log.V(1).Info("launched instance", "nodeclaim", nodeClaim.Name, "instance", launched.Instance.ID, "instance-type", chosen.it.Name,
		"zone", launched.Instance.Zone, "capacity-type", capacityType, "refused-offerings", len(launched.Errors))
	out := p.resolved(nodeClaim, class, reqs, chosen, launched.Instance)
	p.labelPartition(ctx, class, out, launched.Instance.ID)
	return out, nil
}

// candidates lists the offerings nodeClaim may launch as, best first: the launch order
// (cloudprovider.CompareLaunches, which the cost prediction assumes too) of those with an
// image, a subnet and a capacity type EC2 has not recently refused.
func (p *Provider) candidates(class *awsv1.EC2NodeClass, its cloudprovider.InstanceTypes, reqs scheduling.Requirements, requests corev1.ResourceList) []candidate {
	var out []candidate
	amis := map[*cloudprovider.InstanceType]*awsv1.AMI{} // nil: the type has none
	for _, l := range its.Launches(reqs, requests) {
		if p.unavailable.capacityTypeBlocked(l.Offering.CapacityType()) {
			continue
		}
		ami, seen := amis[l.InstanceType]
		if !seen {
			if found, ok := amiFor(class, l.InstanceType); ok {
				ami = &found
			}
			amis[l.InstanceType] = ami
		}
		if ami == nil {
			continue
		}
		subnet := p.subnetFor(class, l.Offering.Zone())
		if subnet == "" {
			continue
		}
		out = append(out, candidate{it: l.InstanceType, offering: l.Offering, subnetID: subnet, ami: *ami})
	}
	return out
}

// amiFor is the first of the class's AMIs (newest first) that it can boot.
func amiFor(class *awsv1.EC2NodeClass, it *cloudprovider.InstanceType) (awsv1.AMI, bool) {
	for _, ami := range class.Status.AMIs {
		if it.Requirements.Intersects(scheduling.FromNodeSelectorRequirements(ami.Requirements...)) == nil {
			return ami, true
		}
	}
	return awsv1.AMI{}, false
}

// subnetFor is the class's subnet in zone with the most free addresses (status lists them in
// that order) that EC2 has not recently found full.
func (p *Provider) subnetFor(class *awsv1.EC2NodeClass, zone string) string {
	for _, sn := range class.Status.Subnets {
		if sn.Zone == zone && !p.unavailable.subnetFull(sn.ID) {
			return sn.ID
		}
	}
	return ""
}

// cheapestTypes keeps the candidates of the max cheapest instance types (candidates are sorted
// by price).
func cheapestTypes(candidates []candidate, max int) []candidate {
	kept := map[string]bool{}
	return slices.DeleteFunc(candidates, func(c candidate) bool {
		if kept[c.it.Name] {
			return false
		}
		if len(kept) >= max {
			return true
		}
		kept[c.it.Name] = true
		return false
	})
}

// templateKey is what makes candidates need different launch templates: the image, the pod
// capacity in the user data, and the capacity reservation targeted.
type templateKey struct {
	ami           string
	maxPods       int64
	reservationID string
	capacityBlock bool
}

// launchRequest ensures a launch template per templateKey and lists the candidates as fleet
// overrides. byTemplate maps template names back to their image.
func (p *Provider) launchRequest(ctx context.Context, nodeClaim *karpv1.NodeClaim, class *awsv1.EC2NodeClass, reqs scheduling.Requirements,
	capacityType string, candidates []candidate) (instance.LaunchRequest, map[string]string, error) {
	req := instance.LaunchRequest{
		ClientToken:  clientToken(nodeClaim),
		CapacityType: capacityType,
		// Overlays change prices EC2 does not know: launch in joinery's price order.
		Prioritized: p.opts.Overlay != nil,
		Tags:        instance.Tags(p.opts.Cluster.Name, nodeClaim.Name, nodeClaim.Labels[karpv1.NodePoolLabelKey], class.Name, class.Spec.Tags),
	}
	byTemplate := map[string]string{}
	configs := map[templateKey]int{}
	for _, c := range candidates {
		key := templateKey{ami: c.ami.ID, maxPods: c.it.Capacity.Pods().Value(), reservationID: c.offering.ReservationID()}
		if r := c.offering.Requirements.Get(awsv1.LabelCapacityReservationType); r.Len() == 1 && r.Any() == string(awsv1.CapacityReservationTypeCapacityBlock) {
			key.capacityBlock = true
			req.CapacityBlock = true
		}
		i, ok := configs[key]
		if !ok {
			spec, err := p.templateSpec(nodeClaim, class, reqs, capacityType, key)
			if err != nil {
				return req, nil, err
			}
			tmpl, err := p.templates.Ensure(ctx, spec)
			if err != nil {
				if awserr.IsUnauthorized(err) {
					code := awserr.Code(err)
					return req, nil, cloudprovider.NewCreateError(err, code, "EC2 refused to create the launch template: "+code)
				}
				return req, nil, fmt.Errorf("nodeclaim %s: %w", nodeClaim.Name, err)
			}
			i = len(req.Templates)
			configs[key] = i
			req.Templates = append(req.Templates, instance.TemplateConfig{TemplateName: tmpl.Name})
			byTemplate[tmpl.Name] = key.ami
		}
		req.Templates[i].Overrides = append(req.Templates[i].Overrides, instance.Override{
			InstanceType: c.it.Name, Zone: c.offering.Zone(), SubnetID: c.subnetID, Price: c.offering.Price,
		})
	}
	return req, byTemplate, nil
}

// clientToken makes a retried launch of the same NodeClaim idempotent. EC2 allows 64 ASCII
// characters; a UID is 36.
func clientToken(nodeClaim *karpv1.NodeClaim) string {
	id := string(nodeClaim.UID)
	if id == "" {
		id = nodeClaim.Name
	}
	token := "joinery-" + id
	if len(token) > 64 {
		token = token[:64]
	}
	return token
}

func (p *Provider) templateSpec(nodeClaim *karpv1.NodeClaim, class *awsv1.EC2NodeClass, reqs scheduling.Requirements, capacityType string, key templateKey) (launchtemplate.Spec, error) {
	family := class.AMIFamily()
	labels := map[string]string{}
	maps.Copy(labels, nodeClaim.Labels)
	maps.Copy(labels, reqs.Labels())
	labels[karpv1.CapacityTypeLabelKey] = capacityType
	if key.reservationID != "" {
		labels[awsv1.LabelCapacityReservationID] = key.reservationID
	}
	userData := ""
	if class.Spec.UserData != nil {
		userData = *class.Spec.UserData
	}
	generated, err := amifamily.Generate(amifamily.Input{
		Family: family, Cluster: p.opts.Cluster, UserData: userData, Kubelet: class.Spec.Kubelet,
		Labels: kubeletLabels(labels), Taints: amifamily.RegistrationTaints(nodeClaim),
		MaxPods: int32(key.maxPods), InstanceStorePolicy: class.Spec.InstanceStorePolicy,
	})
	if err != nil {
		return launchtemplate.Spec{}, cloudprovider.NewCreateError(err, "UserDataInvalid", fmt.Sprintf("ec2nodeclass %s: %s", class.Name, err))
	}
	spec := launchtemplate.Spec{
		ImageID:                  key.ami,
		InstanceProfile:          class.Status.InstanceProfile,
		UserData:                 string(generated),
		BlockDeviceMappings:      amifamily.BlockDeviceMappings(family, class.Spec.BlockDeviceMappings),
		MetadataOptions:          amifamily.MetadataOptions(class.Spec.MetadataOptions),
		DetailedMonitoring:       class.Spec.DetailedMonitoring != nil && *class.Spec.DetailedMonitoring,
		AssociatePublicIPAddress: class.Spec.AssociatePublicIPAddress,
		CapacityReservationID:    key.reservationID,
		CapacityBlock:            key.capacityBlock,
		IPv4PrefixCount:          class.Spec.IPPrefixCount,
		Tags:                     class.Spec.Tags,
		NodeClass:                class.Name,
	}
	for _, sg := range class.Status.SecurityGroups {
		spec.SecurityGroupIDs = append(spec.SecurityGroupIDs, sg.ID)
	}
	if pg := class.PlacementGroup(); pg != nil {
		spec.PlacementGroupID = pg.ID
	}
	return spec, nil
}

// kubeletLabels drops the labels a kubelet may not set on its own node: kubelet refuses
// --node-labels in the kubernetes.io and k8s.io domains other than its own, node.kubernetes.io
// and a few well-known keys.
func kubeletLabels(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if kubeletMaySet(k) {
			out[k] = v
		}
	}
	return out
}

var kubeletAllowedLabels = map[string]bool{
	corev1.LabelHostname: true, corev1.LabelInstanceType: true, corev1.LabelInstanceTypeStable: true,
	corev1.LabelOSStable: true, corev1.LabelArchStable: true, corev1.LabelTopologyRegion: true, corev1.LabelTopologyZone: true,
	corev1.LabelFailureDomainBetaRegion: true, corev1.LabelFailureDomainBetaZone: true,
	"beta.kubernetes.io/os": true, "beta.kubernetes.io/arch": true,
}

func kubeletMaySet(key string) bool {
	domain, _, found := strings.Cut(key, "/")
	if !found {
		return true
	}
	restricted := false
	for _, d := range []string{"kubernetes.io", "k8s.io"} {
		if domain == d || strings.HasSuffix(domain, "."+d) {
			restricted = true
		}
	}
	if !restricted || kubeletAllowedLabels[key] {
		return true
	}
	for _, d := range []string{"kubelet.kubernetes.io", "node.kubernetes.io"} {
		if domain == d || strings.HasSuffix(domain, "."+d) {
			return true
		}
	}
	return false
}

// recordFleetErrors remembers what each refused override means for the next launches.
func (p *Provider) recordFleetErrors(ctx context.Context, errs []instance.FleetError) {
	var offerings []cloudprovider.OfferingKey
	for _, e := range errs {
		switch e.Kind() {
		case instance.KindCapacity:
			offerings = append(offerings, cloudprovider.OfferingKey{CapacityType: e.CapacityType, InstanceType: e.InstanceType, Zone: e.Zone})
		case instance.KindSubnetFull:
			p.unavailable.markSubnet(e.SubnetID)
		case instance.KindSpotUnavailable:
			p.unavailable.markSpot()
		case instance.KindTemplateNotFound:
			p.templates.Invalidate(e.TemplateName)
		}
	}
	if len(offerings) > 0 {
		p.log.Info("offerings refused for capacity", "offerings", len(offerings), "first", offerings[0].String(), "code", firstCode(errs, instance.KindCapacity))
	}
	p.unavailable.markOfferings(ctx, offerings...)
}

func firstCode(errs []instance.FleetError, k instance.Kind) string {
	for _, e := range errs {
		if e.Kind() == k {
			return e.Code
		}
	}
	return ""
}

// noInstanceError is Create's answer to a fleet that launched nothing: insufficient capacity
// when every refusal was about capacity (the NodeClaim is replaced at another offering), a
// retryable error when a template vanished, and otherwise a CreateError with EC2's code.
func (p *Provider) noInstanceError(nodeClaim *karpv1.NodeClaim, none *instance.NoInstanceError) error {
	capacityOnly := len(none.Errors) > 0
	for _, e := range none.Errors {
		switch e.Kind() {
		case instance.KindCapacity, instance.KindSubnetFull, instance.KindSpotUnavailable:
		default:
			capacityOnly = false
		}
	}
	switch {
	case capacityOnly:
		var refused []cloudprovider.OfferingKey
		for _, e := range none.Errors {
			if e.Kind() == instance.KindCapacity {
				refused = append(refused, cloudprovider.OfferingKey{CapacityType: e.CapacityType, InstanceType: e.InstanceType, Zone: e.Zone})
			}
		}
		return cloudprovider.NewInsufficientCapacityError(fmt.Errorf("nodeclaim %s: %w", nodeClaim.Name, none), refused...)
	case none.Has(instance.KindTemplateNotFound):
		return fmt.Errorf("nodeclaim %s: a launch template vanished; it is recreated on the next attempt: %w", nodeClaim.Name, none)
	}
	for _, e := range none.Errors {
		if e.Kind() == instance.KindOther {
			return cloudprovider.NewCreateError(none, e.Code, fmt.Sprintf("EC2 refused %s in %s: %s", e.InstanceType, e.Zone, e.Message))
		}
	}
	return cloudprovider.NewCreateError(none, "LaunchFailed", none.Error())
}

func findCandidate(candidates []candidate, instanceType, zone, ami string) (candidate, bool) {
	for _, c := range candidates {
		if c.it.Name == instanceType && c.offering.Zone() == zone && (ami == "" || c.ami.ID == ami) {
			return c, true
		}
	}
	return candidate{}, false
}

// resolved is nodeClaim as launched: the instance type's and offering's labels, the provider
// ID, image, capacity and allocatable, and the class hash drift is judged against.
func (p *Provider) resolved(nodeClaim *karpv1.NodeClaim, class *awsv1.EC2NodeClass, reqs scheduling.Requirements, c candidate, inst instance.Instance) *karpv1.NodeClaim {
	out := nodeClaim.DeepCopy()
	labels := map[string]string{}
	maps.Copy(labels, c.it.Requirements.Labels())
	maps.Copy(labels, c.offering.Requirements.Labels())
	labels[corev1.LabelInstanceTypeStable] = c.it.Name
	labels[corev1.LabelTopologyZone] = inst.Zone
	labels[karpv1.CapacityTypeLabelKey] = c.offering.CapacityType()
	if os := chooseOS(c, reqs); os != "" {
		labels[corev1.LabelOSStable] = os
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	maps.Copy(out.Labels, labels)
	if hash, ok := class.Annotations[awsv1.AnnotationEC2NodeClassHash]; ok {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[awsv1.AnnotationEC2NodeClassHash] = hash
		out.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = class.Annotations[awsv1.AnnotationEC2NodeClassHashVersion]
	}
	out.Status.ProviderID = instance.ProviderID(inst.Zone, inst.ID)
	out.Status.ImageID = c.ami.ID
	out.Status.Capacity = c.it.Capacity.DeepCopy()
	out.Status.Allocatable = c.it.Allocatable().DeepCopy()
	return out
}

// chooseOS is the node's operating system: among those the type, the image and the NodeClaim
// allow, linux when possible.
func chooseOS(c candidate, reqs scheduling.Requirements) string {
	allowed := c.it.Requirements.Get(corev1.LabelOSStable).Intersection(reqs.Get(corev1.LabelOSStable))
	amiReqs := scheduling.FromNodeSelectorRequirements(c.ami.Requirements...)
	if amiReqs.Has(corev1.LabelOSStable) {
		allowed = allowed.Intersection(amiReqs.Get(corev1.LabelOSStable))
	}
	if allowed.Has(string(corev1.Linux)) {
		return string(corev1.Linux)
	}
	return allowed.Any()
}
