package awsemulator

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"
)

// LaunchTemplate is an emulated launch template (one version: joinery never adds versions).
type LaunchTemplate struct {
	ID         string
	Name       string
	CreateTime time.Time
	Tags       map[string]string
	Data       LaunchTemplateData
}

// LaunchTemplateData is what a launch template holds, decoded (UserData is the plain text the
// instance receives, not base64).
type LaunchTemplateData struct {
	ImageID      string
	InstanceType string
	// InstanceProfile is the instance profile's name, or its ARN when the template gave one.
	InstanceProfile     string
	SecurityGroupIDs    []string
	UserData            string
	BlockDeviceMappings []BlockDeviceMapping
	MetadataOptions     MetadataOptions
	Monitoring          bool
	// AssociatePublicIPAddress is the primary interface's setting; nil follows the subnet.
	AssociatePublicIPAddress *bool
	// TagSpecifications are the tags per resource type (instance, volume, ...).
	TagSpecifications map[string]map[string]string
	// CapacityReservationID is the reservation launches are targeted at, if any.
	CapacityReservationID string
	// MarketType is InstanceMarketOptions.MarketType (spot, capacity-block) or empty.
	MarketType string
	// PlacementGroupID or PlacementGroupName is the placement group launches go into, and
	// PartitionNumber the partition, if the template names one.
	PlacementGroupID   string
	PlacementGroupName string
	PartitionNumber    int32
	// IPv4PrefixCount is the primary interface's Ipv4PrefixCount.
	IPv4PrefixCount int32
}

// BlockDeviceMapping is one EBS volume of a launch template.
type BlockDeviceMapping struct {
	DeviceName          string
	VolumeSizeGiB       int32
	VolumeType          string
	IOPS                int32
	Throughput          int32
	Encrypted           *bool
	DeleteOnTermination *bool
	KMSKeyID            string
	SnapshotID          string
}

// MetadataOptions are an instance's IMDS settings as the template set them ("" when unset).
type MetadataOptions struct {
	HTTPEndpoint            string
	HTTPProtocolIPv6        string
	HTTPTokens              string
	HTTPPutResponseHopLimit int32
}

// Instance states, as EC2 names them, with their codes.
const (
	InstanceStatePending      = "pending"
	InstanceStateRunning      = "running"
	InstanceStateShuttingDown = "shutting-down"
	InstanceStateTerminated   = "terminated"
)

var instanceStateCodes = map[string]int32{
	InstanceStatePending: 0, InstanceStateRunning: 16, InstanceStateShuttingDown: 32, InstanceStateTerminated: 48,
}

// Capacity types of a fleet launch (TargetCapacitySpecification.DefaultTargetCapacityType).
const (
	CapacityTypeOnDemand      = "on-demand"
	CapacityTypeSpot          = "spot"
	CapacityTypeCapacityBlock = "capacity-block"
)

// Instance is an emulated EC2 instance.
type Instance struct {
	ID           string
	InstanceType string
	Zone         string
	SubnetID     string
	VPCID        string
	ImageID      string
	Architecture string
	Platform     string // windows or empty
	PrivateIP    string
	PublicIP     string
	State        string
	// Lifecycle is the capacity type it was bought as (on-demand, spot, capacity-block).
	Lifecycle             string
	CapacityReservationID string
	LaunchTemplateID      string
	FleetID               string
	ReservationID         string
	InstanceProfile       string
	SecurityGroupIDs      []string
	UserData              string
	MetadataOptions       MetadataOptions
	Monitoring            bool
	BlockDeviceMappings   []BlockDeviceMapping
	Tags                  map[string]string
	// VolumeTags are the tags its EBS volumes were created with.
	VolumeTags map[string]string
	// Placement is the instance's placement group and partition, if any.
	Placement Placement
	// IPv4PrefixCount is the number of IPv4 prefixes on its primary interface.
	IPv4PrefixCount int32
	LaunchTime      time.Time
	// StateChanged is when the instance entered State.
	StateChanged time.Time
}

// launchState holds launch templates, fleets' idempotency answers and instances. The Server's
// mu guards it.
type launchState struct {
	templates      map[string]*LaunchTemplate // by id
	templateNames  map[string]string          // name → id
	templateTokens map[string]string          // CreateLaunchTemplate ClientToken → id
	fleets         map[string]*fleetAnswer    // CreateFleet ClientToken → answer
	instances      map[string]*Instance
	// launchErrors are injected per-offering failures: offering → EC2 error code.
	launchErrors map[offering]string
	// nextHost is the next host number handed out per subnet.
	nextHost map[string]uint32
	// health is what status checks report per instance (instance_status.go); made on first use.
	health map[string]*instanceHealth
	// pendingFor and shuttingDownFor are how long instances stay in the transitional states.
	pendingFor, shuttingDownFor time.Duration
	seq                         int
}

// offering is a capacity type, instance type and zone, the unit EC2 runs out of.
type offering struct{ capacityType, instanceType, zone string }

func newLaunchState() *launchState {
	return &launchState{
		templates:      map[string]*LaunchTemplate{},
		templateNames:  map[string]string{},
		templateTokens: map[string]string{},
		fleets:         map[string]*fleetAnswer{},
		instances:      map[string]*Instance{},
		launchErrors:   map[offering]string{},
		nextHost:       map[string]uint32{},
	}
}

// registerLaunch registers launch templates, CreateFleet and the instance actions.
func (s *Server) registerLaunch() {
	s.launch = newLaunchState()
	s.handleQuery(ServiceEC2, "CreateLaunchTemplate", s.createLaunchTemplate)
	s.handleQuery(ServiceEC2, "DescribeLaunchTemplates", s.describeLaunchTemplates)
	s.handleQuery(ServiceEC2, "DeleteLaunchTemplate", s.deleteLaunchTemplate)
	s.handleQuery(ServiceEC2, "CreateFleet", s.createFleet)
	s.handleQuery(ServiceEC2, "DescribeInstances", s.describeInstances)
	s.handleQuery(ServiceEC2, "DescribeInstanceStatus", s.describeInstanceStatus)
	s.handleQuery(ServiceEC2, "TerminateInstances", s.terminateInstances)
	s.handleQuery(ServiceEC2, "CreateTags", s.createTags)
	s.handleQuery(ServiceEC2, "RunInstances", s.runInstances)
}

// newID is a unique EC2-style id of kind prefix (i, lt, fleet, r).
func (l *launchState) newID(prefix string) string {
	l.seq++
	return resourceID(prefix, fmt.Sprintf("launch/%s/%d", prefix, l.seq))
}

// advance moves instances through pending → running and shutting-down → terminated once
// they have spent the configured time in the transitional state.
func (l *launchState) advance(now time.Time) {
	for _, inst := range l.instances {
		switch {
		case inst.State == InstanceStatePending && !now.Before(inst.StateChanged.Add(l.pendingFor)):
			inst.State, inst.StateChanged = InstanceStateRunning, now
		case inst.State == InstanceStateShuttingDown && !now.Before(inst.StateChanged.Add(l.shuttingDownFor)):
			inst.State, inst.StateChanged = InstanceStateTerminated, now
		}
	}
}

// allocateIP hands out the next free host address of subnet's CIDR (network address and
// AWS's first three reserved addresses skipped).
func (l *launchState) allocateIP(sn *Subnet) (string, error) {
	prefix, err := netip.ParsePrefix(sn.CIDR)
	if err != nil {
		return "", fmt.Errorf("subnet %s has CIDR %q: %w", sn.ID, sn.CIDR, err)
	}
	host := l.nextHost[sn.ID]
	if host == 0 {
		host = 4
	}
	l.nextHost[sn.ID] = host + 1
	base := prefix.Masked().Addr().As4()
	n := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	n += host
	addr := netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	if !prefix.Contains(addr) {
		return "", fmt.Errorf("subnet %s has no free address", sn.ID)
	}
	return addr.String(), nil
}

func copyInstance(in *Instance) Instance {
	out := *in
	out.Tags = maps.Clone(in.Tags)
	out.VolumeTags = maps.Clone(in.VolumeTags)
	out.SecurityGroupIDs = slices.Clone(in.SecurityGroupIDs)
	out.BlockDeviceMappings = slices.Clone(in.BlockDeviceMappings)
	return out
}

func copyLaunchTemplate(in *LaunchTemplate) LaunchTemplate {
	out := *in
	out.Tags = maps.Clone(in.Tags)
	out.Data.SecurityGroupIDs = slices.Clone(in.Data.SecurityGroupIDs)
	out.Data.BlockDeviceMappings = slices.Clone(in.Data.BlockDeviceMappings)
	out.Data.TagSpecifications = map[string]map[string]string{}
	for k, v := range in.Data.TagSpecifications {
		out.Data.TagSpecifications[k] = maps.Clone(v)
	}
	return out
}

// Test helpers.

// SetLaunchError makes CreateFleet fail the offering (capacityType, instanceType, zone) with
// code (e.g. InsufficientInstanceCapacity, MaxSpotInstanceCountExceeded, VcpuLimitExceeded);
// an empty code clears it.
func (s *Server) SetLaunchError(capacityType, instanceType, zone, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := offering{capacityType, instanceType, zone}
	if code == "" {
		delete(s.launch.launchErrors, key)
		return
	}
	s.launch.launchErrors[key] = code
}

// SetInsufficientCapacity makes EC2 answer InsufficientInstanceCapacity for the offering.
func (s *Server) SetInsufficientCapacity(capacityType, instanceType, zone string) {
	s.SetLaunchError(capacityType, instanceType, zone, "InsufficientInstanceCapacity")
}

// ClearInsufficientCapacity makes the offering launch again.
func (s *Server) ClearInsufficientCapacity(capacityType, instanceType, zone string) {
	s.SetLaunchError(capacityType, instanceType, zone, "")
}

// SetInstanceTransitions sets how long instances stay pending and shutting-down (both zero by
// default: the next look at the instance finds it running, or terminated).
func (s *Server) SetInstanceTransitions(pending, shuttingDown time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.launch.pendingFor, s.launch.shuttingDownFor = pending, shuttingDown
}

// Instances returns every instance, terminated ones included, sorted by id.
func (s *Server) Instances() []Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.launch.advance(s.resources.now())
	return sortedCopies(s.launch.instances, func(v Instance) Instance { return copyInstance(&v) })
}

// Instance returns one instance.
func (s *Server) Instance(id string) (Instance, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.launch.advance(s.resources.now())
	inst, ok := s.launch.instances[id]
	if !ok {
		return Instance{}, false
	}
	return copyInstance(inst), true
}

// LaunchTemplates returns every launch template, sorted by id.
func (s *Server) LaunchTemplates() []LaunchTemplate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedCopies(s.launch.templates, func(v LaunchTemplate) LaunchTemplate { return copyLaunchTemplate(&v) })
}
