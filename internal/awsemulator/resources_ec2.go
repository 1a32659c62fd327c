package awsemulator

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ec2Time is EC2's timestamp format in XML answers.
const ec2Time = "2006-01-02T15:04:05.000Z"

func formatEC2Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(ec2Time)
}

func boolString(b bool) []string { return []string{strconv.FormatBool(b)} }

// selectByID resolves the ids a request names explicitly: every one must exist, as in EC2,
// which answers notFound (e.g. InvalidSubnetID.NotFound) for the first that does not.
func selectByID[T any](ids []string, all map[string]*T, notFound func(id string) *APIError) ([]string, error) {
	if len(ids) == 0 {
		out := make([]string, 0, len(all))
		for id := range all {
			out = append(out, id)
		}
		return out, nil
	}
	for _, id := range ids {
		if _, ok := all[id]; !ok {
			return nil, notFound(id)
		}
	}
	return dedupe(ids), nil
}

func dedupe(ids []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// noIDsWithMaxResults is EC2's rule for actions whose ids and MaxResults exclude each other.
func noIDsWithMaxResults(q Query, idParam string) error {
	if q.Has("MaxResults") && len(q.List(idParam)) > 0 {
		return errInvalidParameter("The parameter %ss cannot be used with the parameter maxResults", idParam)
	}
	return nil
}

type vpcXML struct {
	VPCID     string   `xml:"vpcId"`
	CIDRBlock string   `xml:"cidrBlock"`
	State     string   `xml:"state"`
	OwnerID   string   `xml:"ownerId"`
	IsDefault bool     `xml:"isDefault"`
	Tags      []tagXML `xml:"tagSet>item"`
}

func (s *Server) describeVpcs(_ context.Context, q Query) (any, error) {
	r := s.resources
	ids, err := selectByID(q.List("VpcId"), r.vpcs, func(id string) *APIError {
		return &APIError{Code: "InvalidVpcID.NotFound", Message: fmt.Sprintf("The vpc ID '%s' does not exist", id)}
	})
	if err != nil {
		return nil, err
	}
	var out []vpcXML
	for _, id := range ids {
		v := r.vpcs[id]
		isDefault := r.isDefaultVPC(id)
		ok, err := matchFilters(q.Filters(), v.Tags, true, func(name string) ([]string, bool) {
			switch name {
			case "vpc-id":
				return []string{v.ID}, true
			case "cidr", "cidr-block-association.cidr-block":
				return []string{v.CIDR}, true
			case "is-default":
				return boolString(isDefault), true
			case "state":
				return []string{"available"}, true
			case "owner-id":
				return []string{AccountID}, true
			}
			return nil, false
		})
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, vpcXML{VPCID: v.ID, CIDRBlock: v.CIDR, State: "available", OwnerID: AccountID, IsDefault: isDefault, Tags: tagSet(v.Tags)})
		}
	}
	return struct {
		VPCs []vpcXML `xml:"vpcSet>item"`
	}{out}, nil
}

// isDefaultVPC reports whether id is the region's default VPC, which AWS creates with
// 172.31.0.0/16.
func (r *resourceState) isDefaultVPC(id string) bool {
	v, ok := r.vpcs[id]
	return ok && v.CIDR == "172.31.0.0/16"
}

type subnetXML struct {
	SubnetID                string   `xml:"subnetId"`
	SubnetArn               string   `xml:"subnetArn"`
	VPCID                   string   `xml:"vpcId"`
	CIDRBlock               string   `xml:"cidrBlock"`
	AvailabilityZone        string   `xml:"availabilityZone"`
	AvailabilityZoneID      string   `xml:"availabilityZoneId"`
	AvailableIPAddressCount int32    `xml:"availableIpAddressCount"`
	State                   string   `xml:"state"`
	OwnerID                 string   `xml:"ownerId"`
	MapPublicIPOnLaunch     bool     `xml:"mapPublicIpOnLaunch"`
	DefaultForAz            bool     `xml:"defaultForAz"`
	Tags                    []tagXML `xml:"tagSet>item"`
}

func (s *Server) describeSubnets(_ context.Context, q Query) (any, error) {
	r := s.resources
	if err := noIDsWithMaxResults(q, "SubnetId"); err != nil {
		return nil, err
	}
	ids, err := selectByID(q.List("SubnetId"), r.subnets, func(id string) *APIError {
		return &APIError{Code: "InvalidSubnetID.NotFound", Message: fmt.Sprintf("The subnet ID '%s' does not exist", id)}
	})
	if err != nil {
		return nil, err
	}
	matched, err := filterIDs(ids, func(id string) (bool, error) {
		sn := r.subnets[id]
		zone, _ := s.zone(sn.Zone)
		isDefault := r.isDefaultVPC(sn.VPCID)
		return matchFilters(q.Filters(), sn.Tags, true, func(name string) ([]string, bool) {
			switch name {
			case "subnet-id":
				return []string{sn.ID}, true
			case "vpc-id":
				return []string{sn.VPCID}, true
			case "availability-zone":
				return []string{sn.Zone}, true
			case "availability-zone-id":
				return []string{zone.ID}, true
			case "cidr-block", "cidr":
				return []string{sn.CIDR}, true
			case "state":
				return []string{"available"}, true
			case "owner-id":
				return []string{AccountID}, true
			case "default-for-az", "defaultForAz":
				return boolString(isDefault), true
			case "map-public-ip-on-launch":
				return boolString(sn.MapPublicIPOnLaunch), true
			case "available-ip-address-count":
				return []string{strconv.Itoa(int(sn.AvailableIPs))}, true
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
	out := make([]subnetXML, 0, len(pageIDs))
	for _, id := range pageIDs {
		sn := r.subnets[id]
		zone, _ := s.zone(sn.Zone)
		out = append(out, subnetXML{
			SubnetID: sn.ID, SubnetArn: fmt.Sprintf("arn:aws:ec2:%s:%s:subnet/%s", s.Region, AccountID, sn.ID),
			VPCID: sn.VPCID, CIDRBlock: sn.CIDR, AvailabilityZone: sn.Zone, AvailabilityZoneID: zone.ID,
			AvailableIPAddressCount: sn.AvailableIPs, State: "available", OwnerID: AccountID,
			MapPublicIPOnLaunch: sn.MapPublicIPOnLaunch, DefaultForAz: r.isDefaultVPC(sn.VPCID),
			Tags: tagSet(sn.Tags),
		})
	}
	return struct {
		Subnets   []subnetXML `xml:"subnetSet>item"`
		NextToken string      `xml:"nextToken,omitempty"`
	}{out, next}, nil
}

type securityGroupXML struct {
	GroupID     string   `xml:"groupId"`
	GroupName   string   `xml:"groupName"`
	Description string   `xml:"groupDescription"`
	VPCID       string   `xml:"vpcId"`
	OwnerID     string   `xml:"ownerId"`
	Arn         string   `xml:"securityGroupArn"`
	Tags        []tagXML `xml:"tagSet>item"`
}

func (s *Server) describeSecurityGroups(_ context.Context, q Query) (any, error) {
	r := s.resources
	if err := noIDsWithMaxResults(q, "GroupId"); err != nil {
		return nil, err
	}
	ids, err := selectByID(q.List("GroupId"), r.securityGroups, func(id string) *APIError {
		return &APIError{Code: "InvalidGroup.NotFound", Message: fmt.Sprintf("The security group '%s' does not exist", id)}
	})
	if err != nil {
		return nil, err
	}
	names := q.List("GroupName")
	matched, err := filterIDs(ids, func(id string) (bool, error) {
		sg := r.securityGroups[id]
		if len(names) > 0 && !contains(names, sg.Name) {
			return false, nil
		}
		return matchFilters(q.Filters(), sg.Tags, true, func(name string) ([]string, bool) {
			switch name {
			case "group-id":
				return []string{sg.ID}, true
			case "group-name":
				return []string{sg.Name}, true
			case "vpc-id":
				return []string{sg.VPCID}, true
			case "description":
				return []string{sg.Description}, true
			case "owner-id":
				return []string{AccountID}, true
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
	out := make([]securityGroupXML, 0, len(pageIDs))
	for _, id := range pageIDs {
		sg := r.securityGroups[id]
		out = append(out, securityGroupXML{
			GroupID: sg.ID, GroupName: sg.Name, Description: sg.Description, VPCID: sg.VPCID, OwnerID: AccountID,
			Arn: fmt.Sprintf("arn:aws:ec2:%s:%s:security-group/%s", s.Region, AccountID, sg.ID), Tags: tagSet(sg.Tags),
		})
	}
	return struct {
		SecurityGroups []securityGroupXML `xml:"securityGroupInfo>item"`
		NextToken      string             `xml:"nextToken,omitempty"`
	}{out, next}, nil
}

type blockDeviceXML struct {
	DeviceName string `xml:"deviceName"`
	EBS        struct {
		DeleteOnTermination bool   `xml:"deleteOnTermination"`
		SnapshotID          string `xml:"snapshotId"`
		VolumeSize          int32  `xml:"volumeSize"`
		VolumeType          string `xml:"volumeType"`
		Encrypted           bool   `xml:"encrypted"`
	} `xml:"ebs"`
}

type imageXML struct {
	ImageID            string           `xml:"imageId"`
	ImageLocation      string           `xml:"imageLocation"`
	ImageState         string           `xml:"imageState"`
	ImageOwnerID       string           `xml:"imageOwnerId"`
	ImageOwnerAlias    string           `xml:"imageOwnerAlias,omitempty"`
	CreationDate       string           `xml:"creationDate"`
	DeprecationTime    string           `xml:"deprecationTime,omitempty"`
	IsPublic           bool             `xml:"isPublic"`
	Architecture       string           `xml:"architecture"`
	ImageType          string           `xml:"imageType"`
	Platform           string           `xml:"platform,omitempty"`
	PlatformDetails    string           `xml:"platformDetails"`
	Name               string           `xml:"name"`
	Description        string           `xml:"description,omitempty"`
	RootDeviceType     string           `xml:"rootDeviceType"`
	RootDeviceName     string           `xml:"rootDeviceName"`
	BlockDevices       []blockDeviceXML `xml:"blockDeviceMapping>item"`
	VirtualizationType string           `xml:"virtualizationType"`
	Hypervisor         string           `xml:"hypervisor"`
	EnaSupport         bool             `xml:"enaSupport"`
	BootMode           string           `xml:"bootMode,omitempty"`
	Tags               []tagXML         `xml:"tagSet>item,omitempty"`
}

// imageOwnerMatches applies DescribeImages' Owner.N values: self, amazon, aws-marketplace or
// account ids.
func imageOwnerMatches(img *Image, owners []string) bool {
	if len(owners) == 0 {
		return true
	}
	for _, o := range owners {
		switch o {
		case "self":
			if img.OwnerID == AccountID {
				return true
			}
		case "amazon", "aws-marketplace":
			if img.OwnerAlias == o {
				return true
			}
		default:
			if img.OwnerID == o {
				return true
			}
		}
	}
	return false
}

func (s *Server) describeImages(_ context.Context, q Query) (any, error) {
	r := s.resources
	now := r.now()
	requested := q.List("ImageId")
	for _, id := range requested {
		if !strings.HasPrefix(id, "ami-") {
			return nil, &APIError{Code: "InvalidAMIID.Malformed", Message: fmt.Sprintf("Invalid id: \"%s\" (expecting \"ami-...\")", id)}
		}
	}
	ids, err := selectByID(requested, r.images, func(id string) *APIError {
		return &APIError{Code: "InvalidAMIID.NotFound", Message: fmt.Sprintf("The image id '[%s]' does not exist", id)}
	})
	if err != nil {
		return nil, err
	}
	owners := q.List("Owner")
	// Deprecated images are listed only when asked for, or when named by id.
	includeDeprecated := q.Bool("IncludeDeprecated") || len(requested) > 0
	matched, err := filterIDs(ids, func(id string) (bool, error) {
		img := r.images[id]
		own := img.OwnerID == AccountID
		if !img.Public && !own {
			if len(requested) > 0 {
				return false, &APIError{Code: "InvalidAMIID.NotFound", Message: fmt.Sprintf("The image id '[%s]' does not exist", id)}
			}
			return false, nil
		}
		if !imageOwnerMatches(img, owners) || (!includeDeprecated && img.Deprecated(now)) {
			return false, nil
		}
		return matchFilters(q.Filters(), img.Tags, own, func(name string) ([]string, bool) {
			switch name {
			case "image-id":
				return []string{img.ID}, true
			case "name":
				return []string{img.Name}, true
			case "description":
				return []string{img.Description}, true
			case "owner-id":
				return []string{img.OwnerID}, true
			case "owner-alias":
				if img.OwnerAlias == "" {
					return nil, true
				}
				return []string{img.OwnerAlias}, true
			case "architecture":
				return []string{img.Architecture}, true
			case "state":
				return []string{"available"}, true
			case "is-public":
				return boolString(img.Public), true
			case "platform":
				if img.Platform == "" {
					return nil, true
				}
				return []string{img.Platform}, true
			case "image-type":
				return []string{"machine"}, true
			case "root-device-type":
				return []string{"ebs"}, true
			case "virtualization-type":
				return []string{"hvm"}, true
			}
			return nil, false
		})
	})
	if err != nil {
		return nil, err
	}
	pageIDs, next, err := page(matched, q, 6, 1000)
	if err != nil {
		return nil, err
	}
	out := make([]imageXML, 0, len(pageIDs))
	for _, id := range pageIDs {
		out = append(out, r.imageXML(r.images[id]))
	}
	return struct {
		Images    []imageXML `xml:"imagesSet>item"`
		NextToken string     `xml:"nextToken,omitempty"`
	}{out, next}, nil
}

func (r *resourceState) imageXML(img *Image) imageXML {
	rootDevice, size, details := "/dev/xvda", int32(20), "Linux/UNIX"
	if img.Platform == "windows" {
		rootDevice, size, details = "/dev/sda1", 50, "Windows"
	} else if strings.HasPrefix(img.Name, "bottlerocket-") {
		size = 2
	}
	bd := blockDeviceXML{DeviceName: rootDevice}
	bd.EBS.DeleteOnTermination, bd.EBS.SnapshotID, bd.EBS.VolumeSize, bd.EBS.VolumeType = true, resourceID("snap", img.ID), size, "gp3"
	devices := []blockDeviceXML{bd}
	if strings.HasPrefix(img.Name, "bottlerocket-") {
		data := blockDeviceXML{DeviceName: "/dev/xvdb"}
		data.EBS.DeleteOnTermination, data.EBS.SnapshotID, data.EBS.VolumeSize, data.EBS.VolumeType = true, resourceID("snap", img.ID+"/data"), 20, "gp3"
		devices = append(devices, data)
	}
	x := imageXML{
		ImageID: img.ID, ImageLocation: img.OwnerID + "/" + img.Name, ImageState: "available",
		ImageOwnerID: img.OwnerID, ImageOwnerAlias: img.OwnerAlias,
		CreationDate: formatEC2Time(img.CreationDate), DeprecationTime: formatEC2Time(img.DeprecationTime),
		IsPublic: img.Public, Architecture: img.Architecture, ImageType: "machine", Platform: img.Platform,
		PlatformDetails: details, Name: img.Name, Description: img.Description,
		RootDeviceType: "ebs", RootDeviceName: rootDevice, BlockDevices: devices,
		VirtualizationType: "hvm", Hypervisor: "xen", EnaSupport: true, BootMode: "uefi-preferred",
	}
	if img.OwnerID == AccountID {
		x.Tags = tagSet(img.Tags)
	}
	return x
}

type capacityReservationXML struct {
	ID                     string   `xml:"capacityReservationId"`
	OwnerID                string   `xml:"ownerId"`
	Arn                    string   `xml:"capacityReservationArn"`
	AvailabilityZoneID     string   `xml:"availabilityZoneId"`
	InstanceType           string   `xml:"instanceType"`
	InstancePlatform       string   `xml:"instancePlatform"`
	AvailabilityZone       string   `xml:"availabilityZone"`
	Tenancy                string   `xml:"tenancy"`
	TotalInstanceCount     int32    `xml:"totalInstanceCount"`
	AvailableInstanceCount int32    `xml:"availableInstanceCount"`
	EBSOptimized           bool     `xml:"ebsOptimized"`
	State                  string   `xml:"state"`
	StartDate              string   `xml:"startDate"`
	EndDate                string   `xml:"endDate,omitempty"`
	EndDateType            string   `xml:"endDateType"`
	InstanceMatchCriteria  string   `xml:"instanceMatchCriteria"`
	CreateDate             string   `xml:"createDate"`
	ReservationType        string   `xml:"reservationType"`
	Tags                   []tagXML `xml:"tagSet>item"`
}

// state is the reservation's state at now: one whose end date has passed has expired.
func (cr *CapacityReservation) stateAt(now time.Time) string {
	if cr.State == "active" && !cr.EndDate.IsZero() && !now.Before(cr.EndDate) {
		return "expired"
	}
	return cr.State
}

func (s *Server) describeCapacityReservations(_ context.Context, q Query) (any, error) {
	r := s.resources
	now := r.now()
	ids, err := selectByID(q.List("CapacityReservationId"), r.reservations, func(id string) *APIError {
		return &APIError{Code: "InvalidCapacityReservationId.NotFound", Message: fmt.Sprintf("The capacity reservation ID '%s' does not exist", id)}
	})
	if err != nil {
		return nil, err
	}
	matched, err := filterIDs(ids, func(id string) (bool, error) {
		cr := r.reservations[id]
		zone, _ := s.zone(cr.Zone)
		return matchFilters(q.Filters(), cr.Tags, true, func(name string) ([]string, bool) {
			switch name {
			case "instance-type":
				return []string{cr.InstanceType}, true
			case "availability-zone":
				return []string{cr.Zone}, true
			case "availability-zone-id":
				return []string{zone.ID}, true
			case "owner-id":
				return []string{cr.OwnerID}, true
			case "state":
				return []string{cr.stateAt(now)}, true
			case "instance-match-criteria":
				return []string{cr.InstanceMatchCriteria}, true
			case "reservation-type":
				return []string{cr.Type}, true
			case "instance-platform":
				return []string{cr.InstancePlatform}, true
			case "tenancy":
				return []string{"default"}, true
			}
			return nil, false
		})
	})
	if err != nil {
		return nil, err
	}
	pageIDs, next, err := page(matched, q, 1, 1000)
	if err != nil {
		return nil, err
	}
	out := make([]capacityReservationXML, 0, len(pageIDs))
	for _, id := range pageIDs {
		cr := r.reservations[id]
		zone, _ := s.zone(cr.Zone)
		endType := "unlimited"
		if !cr.EndDate.IsZero() {
			endType = "limited"
		}
		out = append(out, capacityReservationXML{
			ID: cr.ID, OwnerID: cr.OwnerID, Arn: fmt.Sprintf("arn:aws:ec2:%s:%s:capacity-reservation/%s", s.Region, cr.OwnerID, cr.ID),
			AvailabilityZoneID: zone.ID, InstanceType: cr.InstanceType, InstancePlatform: cr.InstancePlatform, AvailabilityZone: cr.Zone,
			Tenancy: "default", TotalInstanceCount: cr.TotalInstances, AvailableInstanceCount: cr.AvailableInstances, EBSOptimized: true,
			State: cr.stateAt(now), StartDate: formatEC2Time(cr.StartDate), EndDate: formatEC2Time(cr.EndDate), EndDateType: endType,
			InstanceMatchCriteria: cr.InstanceMatchCriteria, CreateDate: formatEC2Time(cr.StartDate), ReservationType: cr.Type,
			Tags: tagSet(cr.Tags),
		})
	}
	return struct {
		Reservations []capacityReservationXML `xml:"capacityReservationSet>item"`
		NextToken    string                   `xml:"nextToken,omitempty"`
	}{out, next}, nil
}
