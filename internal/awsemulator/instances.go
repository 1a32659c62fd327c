package awsemulator

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var instanceIDPattern = regexp.MustCompile(`^i-[0-9a-f]{8}([0-9a-f]{9})?$`)

func errInstanceNotFound(ids ...string) *APIError {
	return &APIError{Code: "InvalidInstanceID.NotFound", Message: fmt.Sprintf("The instance IDs '%s' do not exist", strings.Join(ids, ", "))}
}

// checkInstanceIDs answers EC2's errors for malformed or unknown instance ids.
func (l *launchState) checkInstanceIDs(ids []string) error {
	var missing []string
	for _, id := range ids {
		if !instanceIDPattern.MatchString(id) {
			return &APIError{Code: "InvalidInstanceID.Malformed", Message: fmt.Sprintf("Invalid id: %q", id)}
		}
		if _, ok := l.instances[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return errInstanceNotFound(missing...)
	}
	return nil
}

// checkTagKeys refuses keys EC2 reserves for itself.
func checkTagKeys(tags map[string]string) error {
	for k := range tags {
		if k == "" || len(k) > 128 {
			return errInvalidParameter("Tag key %q must be 1 to 128 characters", k)
		}
		if strings.HasPrefix(strings.ToLower(k), "aws:") {
			return errInvalidParameter("Tag keys starting with 'aws:' are reserved for internal use")
		}
	}
	return nil
}

type instanceStateXML struct {
	Code int32  `xml:"code"`
	Name string `xml:"name"`
}

func stateXML(name string) instanceStateXML {
	return instanceStateXML{Code: instanceStateCodes[name], Name: name}
}

type groupXML struct {
	ID   string `xml:"groupId"`
	Name string `xml:"groupName"`
}

type instanceBlockDeviceXML struct {
	DeviceName string `xml:"deviceName"`
	EBS        struct {
		VolumeID            string `xml:"volumeId"`
		Status              string `xml:"status"`
		DeleteOnTermination bool   `xml:"deleteOnTermination"`
	} `xml:"ebs"`
}

type instanceXML struct {
	InstanceID     string           `xml:"instanceId"`
	ImageID        string           `xml:"imageId"`
	State          instanceStateXML `xml:"instanceState"`
	PrivateDNSName string           `xml:"privateDnsName"`
	InstanceType   string           `xml:"instanceType"`
	LaunchTime     string           `xml:"launchTime"`
	Placement      struct {
		AvailabilityZone   string `xml:"availabilityZone"`
		AvailabilityZoneID string `xml:"availabilityZoneId"`
		Tenancy            string `xml:"tenancy"`
		GroupName          string `xml:"groupName,omitempty"`
		GroupID            string `xml:"groupId,omitempty"`
		PartitionNumber    int32  `xml:"partitionNumber,omitempty"`
	} `xml:"placement"`
	Platform   string `xml:"platform,omitempty"`
	Monitoring struct {
		State string `xml:"state"`
	} `xml:"monitoring"`
	SubnetID           string                   `xml:"subnetId"`
	VPCID              string                   `xml:"vpcId"`
	PrivateIP          string                   `xml:"privateIpAddress"`
	PublicIP           string                   `xml:"ipAddress,omitempty"`
	Architecture       string                   `xml:"architecture"`
	RootDeviceType     string                   `xml:"rootDeviceType"`
	BlockDevices       []instanceBlockDeviceXML `xml:"blockDeviceMapping>item"`
	InstanceLifecycle  string                   `xml:"instanceLifecycle,omitempty"`
	VirtualizationType string                   `xml:"virtualizationType"`
	Groups             []groupXML               `xml:"groupSet>item"`
	IAMInstanceProfile *struct {
		ARN string `xml:"arn"`
		ID  string `xml:"id"`
	} `xml:"iamInstanceProfile,omitempty"`
	Tags                  []tagXML `xml:"tagSet>item"`
	CapacityReservationID string   `xml:"capacityReservationId,omitempty"`
	MetadataOptions       struct {
		State                   string `xml:"state"`
		HTTPTokens              string `xml:"httpTokens"`
		HTTPPutResponseHopLimit int32  `xml:"httpPutResponseHopLimit"`
		HTTPEndpoint            string `xml:"httpEndpoint"`
		HTTPProtocolIPv6        string `xml:"httpProtocolIpv6"`
	} `xml:"metadataOptions"`
}

func (s *Server) instanceInfo(inst *Instance) instanceXML {
	out := instanceXML{
		InstanceID: inst.ID, ImageID: inst.ImageID, State: stateXML(inst.State),
		PrivateDNSName: privateDNSName(inst.PrivateIP, s.Region), InstanceType: inst.InstanceType,
		LaunchTime: formatEC2Time(inst.LaunchTime), Platform: inst.Platform, SubnetID: inst.SubnetID, VPCID: inst.VPCID,
		PrivateIP: inst.PrivateIP, PublicIP: inst.PublicIP, Architecture: inst.Architecture, RootDeviceType: "ebs",
		VirtualizationType: "hvm", Tags: tagSet(inst.Tags), CapacityReservationID: inst.CapacityReservationID,
	}
	if inst.State == InstanceStateTerminated || inst.State == InstanceStateShuttingDown {
		out.PrivateDNSName, out.PublicIP = "", ""
	}
	zone, _ := s.zone(inst.Zone)
	out.Placement.AvailabilityZone, out.Placement.AvailabilityZoneID, out.Placement.Tenancy = inst.Zone, zone.ID, "default"
	out.Placement.GroupName, out.Placement.GroupID, out.Placement.PartitionNumber = inst.Placement.GroupName, inst.Placement.GroupID, inst.Placement.PartitionNumber
	out.Monitoring.State = "disabled"
	if inst.Monitoring {
		out.Monitoring.State = "enabled"
	}
	if inst.Lifecycle == CapacityTypeSpot || inst.Lifecycle == CapacityTypeCapacityBlock {
		out.InstanceLifecycle = inst.Lifecycle
	}
	if inst.State != InstanceStateTerminated {
		for i, bdm := range inst.BlockDeviceMappings {
			b := instanceBlockDeviceXML{DeviceName: bdm.DeviceName}
			b.EBS.VolumeID = resourceID("vol", inst.ID+"/"+strconv.Itoa(i))
			b.EBS.Status = "attached"
			b.EBS.DeleteOnTermination = bdm.DeleteOnTermination == nil || *bdm.DeleteOnTermination
			out.BlockDevices = append(out.BlockDevices, b)
		}
	}
	for _, id := range inst.SecurityGroupIDs {
		g := groupXML{ID: id}
		if sg, ok := s.resources.securityGroups[id]; ok {
			g.Name = sg.Name
		}
		out.Groups = append(out.Groups, g)
	}
	if inst.InstanceProfile != "" {
		out.IAMInstanceProfile = &struct {
			ARN string `xml:"arn"`
			ID  string `xml:"id"`
		}{ARN: instanceProfileARN(inst.InstanceProfile)}
		if p, ok := s.resources.instanceProfiles[instanceProfileName(inst.InstanceProfile)]; ok {
			out.IAMInstanceProfile.ID = p.ID
		}
	}
	m := inst.MetadataOptions
	out.MetadataOptions.State = "applied"
	out.MetadataOptions.HTTPTokens = defaultString(m.HTTPTokens, "optional")
	out.MetadataOptions.HTTPEndpoint = defaultString(m.HTTPEndpoint, "enabled")
	out.MetadataOptions.HTTPProtocolIPv6 = defaultString(m.HTTPProtocolIPv6, "disabled")
	out.MetadataOptions.HTTPPutResponseHopLimit = m.HTTPPutResponseHopLimit
	if out.MetadataOptions.HTTPPutResponseHopLimit == 0 {
		out.MetadataOptions.HTTPPutResponseHopLimit = 1
	}
	return out
}

func defaultString(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// privateDNSName is EC2's resource name for a private address, e.g. ip-10-0-0-4.us-west-2.compute.internal.
func privateDNSName(ip, region string) string {
	if ip == "" {
		return ""
	}
	return "ip-" + strings.ReplaceAll(ip, ".", "-") + "." + region + ".compute.internal"
}

type reservationXML struct {
	ReservationID string        `xml:"reservationId"`
	OwnerID       string        `xml:"ownerId"`
	Instances     []instanceXML `xml:"instancesSet>item"`
}

func (s *Server) describeInstances(_ context.Context, q Query) (any, error) {
	l := s.launch
	l.advance(s.resources.now())
	if err := noIDsWithMaxResults(q, "InstanceId"); err != nil {
		return nil, err
	}
	ids := q.List("InstanceId")
	if err := l.checkInstanceIDs(ids); err != nil {
		return nil, err
	}
	selected, err := selectByID(ids, l.instances, func(id string) *APIError { return errInstanceNotFound(id) })
	if err != nil {
		return nil, err
	}
	matched, err := filterIDs(selected, func(id string) (bool, error) {
		inst := l.instances[id]
		return matchFilters(q.Filters(), inst.Tags, true, func(name string) ([]string, bool) {
			switch name {
			case "instance-id":
				return []string{inst.ID}, true
			case "instance-state-name":
				return []string{inst.State}, true
			case "instance-state-code":
				return []string{strconv.Itoa(int(instanceStateCodes[inst.State]))}, true
			case "instance-type":
				return []string{inst.InstanceType}, true
			case "availability-zone":
				return []string{inst.Zone}, true
			case "subnet-id":
				return []string{inst.SubnetID}, true
			case "vpc-id":
				return []string{inst.VPCID}, true
			case "image-id":
				return []string{inst.ImageID}, true
			case "private-ip-address":
				return []string{inst.PrivateIP}, true
			case "instance-lifecycle":
				if inst.Lifecycle == CapacityTypeOnDemand {
					return nil, true
				}
				return []string{inst.Lifecycle}, true
			case "capacity-reservation-id":
				return []string{inst.CapacityReservationID}, true
			case "iam-instance-profile.arn":
				return []string{instanceProfileARN(inst.InstanceProfile)}, true
			}
			return nil, false
		})
	})
	if err != nil {
		return nil, err
	}
	pageIDs, next, err := page(matched, q, 5, 1000)
	if err != nil {
		return nil, err
	}
	// One reservation per launch request, in the order of the page.
	var out []reservationXML
	index := map[string]int{}
	for _, id := range pageIDs {
		inst := l.instances[id]
		i, ok := index[inst.ReservationID]
		if !ok {
			i = len(out)
			index[inst.ReservationID] = i
			out = append(out, reservationXML{ReservationID: inst.ReservationID, OwnerID: AccountID})
		}
		out[i].Instances = append(out[i].Instances, s.instanceInfo(inst))
	}
	return struct {
		Reservations []reservationXML `xml:"reservationSet>item"`
		NextToken    string           `xml:"nextToken,omitempty"`
	}{out, next}, nil
}

type instanceStateChangeXML struct {
	InstanceID    string           `xml:"instanceId"`
	CurrentState  instanceStateXML `xml:"currentState"`
	PreviousState instanceStateXML `xml:"previousState"`
}

func (s *Server) terminateInstances(_ context.Context, q Query) (any, error) {
	l := s.launch
	now := s.resources.now()
	l.advance(now)
	ids := q.List("InstanceId")
	if len(ids) == 0 {
		return nil, errMissingParameter("InstanceId")
	}
	if err := l.checkInstanceIDs(ids); err != nil {
		return nil, err
	}
	var out []instanceStateChangeXML
	for _, id := range dedupe(ids) {
		inst := l.instances[id]
		previous := inst.State
		if previous == InstanceStatePending || previous == InstanceStateRunning {
			inst.State, inst.StateChanged = InstanceStateShuttingDown, now
			s.release(inst)
		}
		out = append(out, instanceStateChangeXML{InstanceID: id, CurrentState: stateXML(inst.State), PreviousState: stateXML(previous)})
	}
	return struct {
		Instances []instanceStateChangeXML `xml:"instancesSet>item"`
	}{out}, nil
}

// release gives a terminating instance's address back to its subnet and its slot back to its
// capacity reservation.
func (s *Server) release(inst *Instance) {
	if sn, ok := s.resources.subnets[inst.SubnetID]; ok {
		sn.AvailableIPs++
	}
	if cr, ok := s.resources.reservations[inst.CapacityReservationID]; ok && cr.AvailableInstances < cr.TotalInstances {
		cr.AvailableInstances++
	}
}

func (s *Server) createTags(_ context.Context, q Query) (any, error) {
	ids := q.List("ResourceId")
	if len(ids) == 0 {
		return nil, errMissingParameter("ResourceId")
	}
	tags := q.Tags("Tag")
	if err := checkTagKeys(tags); err != nil {
		return nil, err
	}
	r, l := s.resources, s.launch
	targets := make([]map[string]string, 0, len(ids))
	for _, id := range ids {
		var target map[string]string
		switch {
		case l.instances[id] != nil:
			target = l.instances[id].Tags
		case l.templates[id] != nil:
			target = l.templates[id].Tags
		case r.subnets[id] != nil:
			target = r.subnets[id].Tags
		case r.securityGroups[id] != nil:
			target = r.securityGroups[id].Tags
		case r.images[id] != nil:
			target = r.images[id].Tags
		case r.reservations[id] != nil:
			target = r.reservations[id].Tags
		case strings.HasPrefix(id, "i-"):
			return nil, errInstanceNotFound(id)
		default:
			return nil, &APIError{Code: "InvalidID", Message: fmt.Sprintf("The ID '%s' is not valid", id)}
		}
		targets = append(targets, target)
	}
	for _, target := range targets {
		for k, v := range tags {
			target[k] = v
		}
	}
	return struct {
		Return bool `xml:"return"`
	}{true}, nil
}
