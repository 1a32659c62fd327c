package awsemulator

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joinery-dev/joinery/cloudprovider/aws/catalogdata"
)

// fleetAnswer is a CreateFleet answer kept for its ClientToken, so a retried request gets the
// same answer and launches nothing more.
type fleetAnswer struct {
	result fleetResultXML
	// request is the request's parameters without the token: EC2 refuses a token reused with
	// other parameters.
	request string
}

// fingerprint is the request's parameters, token excluded, in a canonical form.
func fingerprint(q Query) string {
	keys := make([]string, 0, len(q.values))
	for k := range q.values {
		if k != "ClientToken" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q;", k, q.values[k])
	}
	return b.String()
}

type fleetResultXML struct {
	FleetID   string           `xml:"fleetId"`
	Errors    []fleetErrorXML  `xml:"errorSet>item"`
	Instances []fleetLaunchXML `xml:"fleetInstanceSet>item"`
}

type launchTemplateSpecXML struct {
	ID      string `xml:"launchTemplateId,omitempty"`
	Name    string `xml:"launchTemplateName,omitempty"`
	Version string `xml:"version,omitempty"`
}

type overridesXML struct {
	InstanceType     string   `xml:"instanceType,omitempty"`
	SubnetID         string   `xml:"subnetId,omitempty"`
	AvailabilityZone string   `xml:"availabilityZone,omitempty"`
	ImageID          string   `xml:"imageId,omitempty"`
	MaxPrice         string   `xml:"maxPrice,omitempty"`
	Priority         *float64 `xml:"priority,omitempty"`
}

type launchTemplateAndOverridesXML struct {
	Spec      launchTemplateSpecXML `xml:"launchTemplateSpecification"`
	Overrides overridesXML          `xml:"overrides"`
}

type fleetErrorXML struct {
	LaunchTemplateAndOverrides launchTemplateAndOverridesXML `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string                        `xml:"lifecycle"`
	ErrorCode                  string                        `xml:"errorCode"`
	ErrorMessage               string                        `xml:"errorMessage"`
}

type fleetLaunchXML struct {
	LaunchTemplateAndOverrides launchTemplateAndOverridesXML `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string                        `xml:"lifecycle"`
	InstanceIDs                []string                      `xml:"instanceIds>item"`
	InstanceType               string                        `xml:"instanceType"`
	Platform                   string                        `xml:"platform,omitempty"`
}

// fleetRequest is a parsed instant CreateFleet.
type fleetRequest struct {
	capacityType string
	strategy     string
	total        int
	// reservationsFirst is OnDemandOptions.CapacityReservationOptions.UsageStrategy
	// use-capacity-reservations-first.
	reservationsFirst bool
	tags              map[string]map[string]string // resource type → tags
	pools             []*pool
}

// pool is one launch template config override: where and as what an instance may launch.
type pool struct {
	order    int
	spec     launchTemplateSpecXML
	override overridesXML
	template *LaunchTemplate
	// Resolved for a launch; problem is set when the pool cannot launch.
	instanceType    *catalogdata.InstanceType
	subnet          *Subnet
	image           *Image
	reservation     *CapacityReservation
	price           float64
	openReservation *CapacityReservation
	problem         *APIError
	// invalid says problem is in the request itself, reported even for pools not tried.
	invalid bool
}

// Allocation strategies CreateFleet accepts.
var (
	onDemandStrategies = []string{"lowest-price", "prioritized"}
	spotStrategies     = []string{"lowest-price", "diversified", "capacity-optimized", "capacity-optimized-prioritized", "price-capacity-optimized"}
)

func (s *Server) parseFleet(q Query) (*fleetRequest, error) {
	if t := q.Get("Type"); t != "instant" {
		return nil, errInvalidParameter("awsemulator emulates only fleets of type instant, not %q", t)
	}
	total, err := q.Int("TargetCapacitySpecification.TotalTargetCapacity", 0)
	if err != nil {
		return nil, err
	}
	if total < 1 {
		return nil, errInvalidParameter("TotalTargetCapacity must be at least 1")
	}
	req := &fleetRequest{
		capacityType:      q.Get("TargetCapacitySpecification.DefaultTargetCapacityType"),
		total:             total,
		reservationsFirst: q.Get("OnDemandOptions.CapacityReservationOptions.UsageStrategy") == "use-capacity-reservations-first",
		tags:              map[string]map[string]string{},
	}
	switch req.capacityType {
	case CapacityTypeSpot:
		req.strategy = cmp.Or(q.Get("SpotOptions.AllocationStrategy"), "lowest-price")
		if !slices.Contains(spotStrategies, req.strategy) {
			return nil, errInvalidParameter("The spot allocation strategy %q is not valid", req.strategy)
		}
	case CapacityTypeOnDemand, CapacityTypeCapacityBlock:
		req.strategy = cmp.Or(q.Get("OnDemandOptions.AllocationStrategy"), "lowest-price")
		if !slices.Contains(onDemandStrategies, req.strategy) {
			return nil, errInvalidParameter("The on-demand allocation strategy %q is not valid", req.strategy)
		}
	default:
		return nil, errInvalidParameter("The DefaultTargetCapacityType %q is not valid", req.capacityType)
	}
	for _, spec := range q.Members("TagSpecification") {
		rt := spec.Get("ResourceType")
		if rt != "instance" && rt != "volume" && rt != "fleet" && rt != "network-interface" {
			return nil, errInvalidParameter("'%s' is not a valid taggable resource type for this operation.", rt)
		}
		if err := checkTagKeys(spec.Tags("Tag")); err != nil {
			return nil, err
		}
		req.tags[rt] = spec.Tags("Tag")
	}
	configs := q.Members("LaunchTemplateConfigs")
	if len(configs) == 0 {
		return nil, errMissingParameter("LaunchTemplateConfigs")
	}
	for _, cfg := range configs {
		spec := cfg.Member("LaunchTemplateSpecification")
		ltSpec := launchTemplateSpecXML{ID: spec.Get("LaunchTemplateId"), Name: spec.Get("LaunchTemplateName"), Version: spec.Get("Version")}
		template, lookupErr := s.launch.lookupTemplate(ltSpec.ID, ltSpec.Name)
		overrides := cfg.Members("Overrides")
		if len(overrides) == 0 {
			overrides = []Query{{}}
		}
		for _, ov := range overrides {
			p := &pool{order: len(req.pools), spec: ltSpec, template: template, price: math.Inf(1), override: overridesXML{
				InstanceType: ov.Get("InstanceType"), SubnetID: ov.Get("SubnetId"),
				AvailabilityZone: ov.Get("AvailabilityZone"), ImageID: ov.Get("ImageId"), MaxPrice: ov.Get("MaxPrice"),
			}}
			if raw := ov.Get("Priority"); raw != "" {
				priority, err := strconv.ParseFloat(raw, 64)
				if err != nil {
					return nil, errInvalidParameter("Priority %q is not a number", raw)
				}
				p.override.Priority = &priority
			}
			if lookupErr != nil {
				p.problem, p.invalid = lookupErr, true
			}
			req.pools = append(req.pools, p)
		}
	}
	return req, nil
}

func (s *Server) createFleet(_ context.Context, q Query) (any, error) {
	l := s.launch
	now := s.resources.now()
	l.advance(now)
	token := q.Get("ClientToken")
	if answer, ok := l.fleets[token]; ok && token != "" {
		if answer.request != fingerprint(q) {
			return nil, &APIError{Code: "IdempotentParameterMismatch", Message: fmt.Sprintf("The client token %s was already used with different parameters.", token)}
		}
		return answer.result, nil
	}
	req, err := s.parseFleet(q)
	if err != nil {
		return nil, err
	}
	spot := s.latestSpotPrices(now)
	for _, p := range req.pools {
		if p.problem == nil {
			p.problem = s.resolvePool(req, p, spot)
		}
	}
	s.orderPools(req)

	result := fleetResultXML{FleetID: l.newID("fleet")}
	reservationID := l.newID("r")
	remaining := req.total
	lifecycle := CapacityTypeOnDemand
	if req.capacityType == CapacityTypeSpot {
		lifecycle = CapacityTypeSpot
	}
	for _, p := range req.pools {
		if remaining == 0 && (p.problem == nil || !p.invalid) {
			// Pools after the target is met are not tried; invalid ones are still reported.
			continue
		}
		if p.problem != nil {
			result.Errors = append(result.Errors, fleetErrorXML{
				LaunchTemplateAndOverrides: launchTemplateAndOverridesXML{Spec: p.spec, Overrides: p.override},
				Lifecycle:                  lifecycle, ErrorCode: p.problem.Code, ErrorMessage: p.problem.Message,
			})
			continue
		}
		launched := fleetLaunchXML{
			LaunchTemplateAndOverrides: launchTemplateAndOverridesXML{Spec: p.spec, Overrides: p.override},
			Lifecycle:                  lifecycle, InstanceType: p.instanceType.Name, Platform: p.image.Platform,
		}
		for remaining > 0 && s.poolHasRoom(p) {
			inst, err := s.launchInstance(req, p, result.FleetID, reservationID, now)
			if err != nil {
				return nil, err
			}
			launched.InstanceIDs = append(launched.InstanceIDs, inst.ID)
			remaining--
		}
		result.Instances = append(result.Instances, launched)
	}
	if token != "" {
		l.fleets[token] = &fleetAnswer{result: result, request: fingerprint(q)}
	}
	return result, nil
}

// resolvePool checks that p can launch and fills in what it launches with; the returned error
// is the one EC2 reports for the pool in the fleet's error list. Errors in the request itself
// (unknown type, subnet or image, a type the zone does not offer, a mismatched architecture)
// mark the pool invalid: EC2 reports those whether or not it reached the pool.
func (s *Server) resolvePool(req *fleetRequest, p *pool, spot map[offering]float64) *APIError {
	if apiErr := s.validatePool(p); apiErr != nil {
		p.invalid = true
		return apiErr
	}
	// The price is known before the remaining checks so that a pool out of capacity sorts
	// where the strategy would have tried it.
	if apiErr := s.price(req, p, spot); apiErr != nil {
		return apiErr
	}
	typeName, sn := p.instanceType.Name, p.subnet
	if code, ok := s.launch.launchErrors[offering{req.capacityType, typeName, sn.Zone}]; ok {
		return &APIError{Code: code, Message: fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s) (injected %s).", typeName, sn.Zone, code)}
	}
	if sn.AvailableIPs <= 0 {
		return &APIError{Code: "InsufficientFreeAddressesInSubnet", Message: fmt.Sprintf("There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", sn.ID)}
	}
	if apiErr := s.resolveReservation(req, p); apiErr != nil {
		return apiErr
	}
	if p.reservation != nil {
		p.price = 0
	}
	return nil
}

// validatePool resolves p's instance type, subnet and image and checks the request's own
// parameters.
func (s *Server) validatePool(p *pool) *APIError {
	r, lt := s.resources, p.template
	if _, apiErr := s.templatePlacementGroup(lt); apiErr != nil {
		return apiErr
	}
	typeName := cmp.Or(p.override.InstanceType, lt.Data.InstanceType)
	it, ok := s.catalog.byName[typeName]
	if !ok {
		return errInvalidParameter("The instance type '%s' does not exist", typeName)
	}
	p.instanceType = it
	if p.override.InstanceType == "" {
		p.override.InstanceType = typeName
	}
	if p.override.SubnetID == "" {
		return errInvalidParameter("awsemulator needs a SubnetId in each override")
	}
	sn, ok := r.subnets[p.override.SubnetID]
	if !ok {
		return &APIError{Code: "InvalidSubnetID.NotFound", Message: fmt.Sprintf("The subnet ID '%s' does not exist", p.override.SubnetID)}
	}
	p.subnet = sn
	if p.override.AvailabilityZone != "" && p.override.AvailabilityZone != sn.Zone {
		return errInvalidParameter("The subnet %s is in %s, not in the requested Availability Zone %s", sn.ID, sn.Zone, p.override.AvailabilityZone)
	}
	if !s.catalog.offered[sn.Zone][typeName] {
		return &APIError{Code: "Unsupported", Message: fmt.Sprintf("Your requested instance type (%s) is not supported in your requested Availability Zone (%s).", typeName, sn.Zone)}
	}
	imageID := cmp.Or(p.override.ImageID, lt.Data.ImageID)
	img, ok := r.images[imageID]
	if !ok {
		return &APIError{Code: "InvalidAMIID.NotFound", Message: fmt.Sprintf("The image id '[%s]' does not exist", imageID)}
	}
	p.image = img
	if img.Architecture != it.Arch {
		return errInvalidParameter("The architecture '%s' of the specified instance type does not match the architecture '%s' of the specified AMI.", it.Arch, img.Architecture)
	}
	if name := lt.Data.InstanceProfile; name != "" {
		if _, ok := r.instanceProfiles[instanceProfileName(name)]; !ok {
			return errInvalidParameter("Value (%s) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name", name)
		}
	}
	for _, sg := range lt.Data.SecurityGroupIDs {
		if _, ok := r.securityGroups[sg]; !ok {
			return &APIError{Code: "InvalidGroup.NotFound", Message: fmt.Sprintf("The security group '%s' does not exist", sg)}
		}
	}
	return nil
}

// price sets the pool's hourly price: the current spot price, or the on-demand price of the
// image's operating system.
func (s *Server) price(req *fleetRequest, p *pool, spot map[offering]float64) *APIError {
	os := catalogdata.OSLinux
	if p.image.Platform == "windows" {
		os = catalogdata.OSWindows
	}
	if req.capacityType != CapacityTypeSpot {
		p.price = s.onDemandPrice(p.instanceType, os)
		return nil
	}
	typeName, zone := p.instanceType.Name, p.subnet.Zone
	price, ok := spot[offering{CapacityTypeSpot, typeName, zone}]
	if !ok {
		return &APIError{Code: "InsufficientInstanceCapacity", Message: fmt.Sprintf("There is no Spot capacity for instance type %s in availability zone %s.", typeName, zone)}
	}
	p.price = price
	if p.override.MaxPrice != "" {
		maxPrice, err := strconv.ParseFloat(p.override.MaxPrice, 64)
		if err == nil && maxPrice < price {
			return &APIError{Code: "SpotMaxPriceTooLow", Message: fmt.Sprintf("Your Spot request price of %s is lower than the minimum required Spot request fulfillment price of %s.", p.override.MaxPrice, formatPrice(price))}
		}
	}
	return nil
}

// resolveReservation checks a targeted (or capacity-block) launch against its reservation, and
// finds an open reservation an on-demand launch would use.
func (s *Server) resolveReservation(req *fleetRequest, p *pool) *APIError {
	r, lt, now := s.resources, p.template, s.resources.now()
	id := lt.Data.CapacityReservationID
	if id == "" {
		if req.capacityType == CapacityTypeCapacityBlock {
			return errInvalidParameter("A capacity-block launch must target a capacity block reservation")
		}
		if req.capacityType == CapacityTypeOnDemand {
			for _, cr := range sortedCopies(r.reservations, func(v CapacityReservation) CapacityReservation { return v }) {
				live := r.reservations[cr.ID]
				if live.InstanceMatchCriteria == "open" && live.Type == "default" && live.InstanceType == p.instanceType.Name &&
					live.Zone == p.subnet.Zone && live.stateAt(now) == "active" && live.AvailableInstances > 0 {
					p.openReservation = live
					break
				}
			}
		}
		return nil
	}
	cr, ok := r.reservations[id]
	if !ok {
		return &APIError{Code: "InvalidCapacityReservationId.NotFound", Message: fmt.Sprintf("The capacity reservation ID '%s' does not exist", id)}
	}
	if (cr.Type == "capacity-block") != (req.capacityType == CapacityTypeCapacityBlock) {
		return errInvalidParameter("Capacity reservation %s of type %s cannot be used by a %s launch", id, cr.Type, req.capacityType)
	}
	if cr.InstanceType != p.instanceType.Name || cr.Zone != p.subnet.Zone {
		return errInvalidParameter("Capacity reservation %s holds %s in %s, not %s in %s", id, cr.InstanceType, cr.Zone, p.instanceType.Name, p.subnet.Zone)
	}
	if cr.stateAt(now) != "active" || cr.AvailableInstances <= 0 {
		return &APIError{Code: "ReservationCapacityExceeded", Message: fmt.Sprintf("The requested capacity reservation %s has no available capacity.", id)}
	}
	p.reservation = cr
	return nil
}

// orderPools sorts the pools the way the allocation strategy tries them: usable pools by
// price (or priority for prioritized), failing pools where they fall.
func (s *Server) orderPools(req *fleetRequest) {
	priority := func(p *pool) float64 {
		if p.override.Priority == nil {
			return math.Inf(1)
		}
		return *p.override.Priority
	}
	slices.SortStableFunc(req.pools, func(a, b *pool) int {
		if req.reservationsFirst {
			if c := cmp.Compare(boolRank(a.openReservation == nil), boolRank(b.openReservation == nil)); c != 0 {
				return c
			}
		}
		switch req.strategy {
		case "prioritized", "capacity-optimized-prioritized":
			return cmp.Or(cmp.Compare(priority(a), priority(b)), cmp.Compare(a.price, b.price), cmp.Compare(a.order, b.order))
		default:
			return cmp.Or(cmp.Compare(a.price, b.price), cmp.Compare(priority(a), priority(b)), cmp.Compare(a.order, b.order))
		}
	})
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// poolHasRoom reports whether p can launch one more instance now.
func (s *Server) poolHasRoom(p *pool) bool {
	if p.subnet.AvailableIPs <= 0 {
		return false
	}
	return p.reservation == nil || p.reservation.AvailableInstances > 0
}

func (s *Server) onDemandPrice(it *catalogdata.InstanceType, os string) float64 {
	if v, ok := s.catalog.onDemand[priceKey{s.Region, it.Name, os}]; ok {
		return v
	}
	price, _ := it.OnDemandPrice(s.Region, os)
	return price
}

// latestSpotPrices is the current Linux spot price of every offering.
func (s *Server) latestSpotPrices(now time.Time) map[offering]float64 {
	prices := map[offering]float64{}
	at := map[offering]time.Time{}
	for _, rec := range s.catalog.spot {
		if rec.product != productLinux || rec.at.After(now) {
			continue
		}
		key := offering{CapacityTypeSpot, rec.instanceType, rec.zone.Name}
		if t, ok := at[key]; !ok || rec.at.After(t) {
			prices[key], at[key] = rec.price, rec.at
		}
	}
	return prices
}

// launchInstance records one instance launched from p and takes its address and reservation
// slot.
func (s *Server) launchInstance(req *fleetRequest, p *pool, fleetID, reservationID string, now time.Time) (*Instance, error) {
	l, lt, sn := s.launch, p.template, p.subnet
	ip, err := l.allocateIP(sn)
	if err != nil {
		return nil, err
	}
	inst := &Instance{
		ID: l.newID("i"), InstanceType: p.instanceType.Name, Zone: sn.Zone, SubnetID: sn.ID, VPCID: sn.VPCID,
		ImageID: p.image.ID, Architecture: p.image.Architecture, Platform: p.image.Platform, PrivateIP: ip,
		State: InstanceStatePending, Lifecycle: req.capacityType, LaunchTemplateID: lt.ID, FleetID: fleetID,
		ReservationID: reservationID, InstanceProfile: lt.Data.InstanceProfile,
		SecurityGroupIDs: slices.Clone(lt.Data.SecurityGroupIDs), UserData: lt.Data.UserData,
		MetadataOptions: lt.Data.MetadataOptions, Monitoring: lt.Data.Monitoring,
		LaunchTime: now, StateChanged: now, Tags: map[string]string{},
	}
	if len(inst.SecurityGroupIDs) == 0 {
		// EC2 attaches the VPC's default group when none is given.
		for _, sg := range sortedCopies(s.resources.securityGroups, func(v SecurityGroup) SecurityGroup { return v }) {
			if sg.VPCID == sn.VPCID && sg.Name == "default" {
				inst.SecurityGroupIDs = []string{sg.ID}
			}
		}
	}
	if public := lt.Data.AssociatePublicIPAddress; public != nil && *public || public == nil && sn.MapPublicIPOnLaunch {
		inst.PublicIP = fmt.Sprintf("54.%d.%d.%d", 200+l.seq/65536%50, l.seq/256%256, l.seq%256)
	}
	inst.IPv4PrefixCount = lt.Data.IPv4PrefixCount
	s.place(inst, lt)
	inst.BlockDeviceMappings = slices.Clone(lt.Data.BlockDeviceMappings)
	inst.VolumeTags = maps.Clone(lt.Data.TagSpecifications["volume"])
	if inst.VolumeTags == nil {
		inst.VolumeTags = map[string]string{}
	}
	maps.Copy(inst.VolumeTags, req.tags["volume"])
	maps.Copy(inst.Tags, lt.Data.TagSpecifications["instance"])
	maps.Copy(inst.Tags, req.tags["instance"])
	inst.Tags["aws:ec2:fleet-id"] = fleetID
	inst.Tags["aws:ec2launchtemplate:id"] = lt.ID
	inst.Tags["aws:ec2launchtemplate:version"] = "1"
	switch {
	case p.reservation != nil:
		inst.CapacityReservationID = p.reservation.ID
		p.reservation.AvailableInstances--
	case p.openReservation != nil && p.openReservation.AvailableInstances > 0:
		inst.CapacityReservationID = p.openReservation.ID
		p.openReservation.AvailableInstances--
	}
	sn.AvailableIPs--
	l.instances[inst.ID] = inst
	return inst, nil
}
