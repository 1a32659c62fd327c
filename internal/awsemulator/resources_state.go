package awsemulator

import (
	"fmt"
	"hash/fnv"
	"maps"
	"time"
)

// AccountID is the account the emulator's callers are signed in as: what "self" means for image
// owners and the owner of its own subnets, security groups and capacity reservations.
const AccountID = "111122223333"

// OtherAccountID owns resources shared with AccountID (a capacity reservation, a public image).
const OtherAccountID = "444455556666"

// DefaultClusterName is the cluster the seeded subnets, security groups, images and capacity
// reservations are tagged for (karpenter.sh/discovery, kubernetes.io/cluster/<name>).
const DefaultClusterName = "joinery"

// VPC is an emulated VPC.
type VPC struct {
	ID   string
	CIDR string
	Tags map[string]string
}

// Subnet is an emulated subnet. Zone is the zone name; the zone ID comes from the region's zones.
type Subnet struct {
	ID                  string
	VPCID               string
	Zone                string
	CIDR                string
	AvailableIPs        int32
	MapPublicIPOnLaunch bool
	Tags                map[string]string
}

// SecurityGroup is an emulated security group.
type SecurityGroup struct {
	ID          string
	Name        string
	Description string
	VPCID       string
	Tags        map[string]string
}

// Image is an emulated AMI. Architecture is EC2's value (x86_64, arm64); Platform is "windows"
// or empty. Tags are visible only to the owner, as in EC2.
type Image struct {
	ID              string
	Name            string
	Description     string
	OwnerID         string
	OwnerAlias      string // "amazon" for AWS-published images
	Architecture    string
	Platform        string
	Public          bool
	CreationDate    time.Time
	DeprecationTime time.Time // zero: never deprecated
	Tags            map[string]string
	// SSMParameter is the public parameter AWS lists for the image, if any.
	SSMParameter string
}

// Deprecated reports whether the image's deprecation time has passed at now.
func (i Image) Deprecated(now time.Time) bool {
	return !i.DeprecationTime.IsZero() && !now.Before(i.DeprecationTime)
}

// CapacityReservation is an emulated on-demand capacity reservation or capacity block.
type CapacityReservation struct {
	ID                    string
	OwnerID               string
	InstanceType          string
	Zone                  string
	InstancePlatform      string // Linux/UNIX when empty
	Type                  string // default or capacity-block; default when empty
	State                 string // active when empty
	InstanceMatchCriteria string // open or targeted; open when empty
	TotalInstances        int32
	AvailableInstances    int32
	StartDate             time.Time
	EndDate               time.Time // zero: unlimited
	Tags                  map[string]string
}

// Role is an emulated IAM role.
type Role struct {
	Name       string
	ID         string
	Path       string
	CreateDate time.Time
	Tags       map[string]string
}

// InstanceProfile is an emulated IAM instance profile. Roles names at most one role, as IAM
// allows.
type InstanceProfile struct {
	Name       string
	ID         string
	Path       string
	CreateDate time.Time
	Roles      []string
	Tags       map[string]string
}

// Parameter is an emulated SSM parameter.
type Parameter struct {
	Name         string
	Value        string
	Type         string // String when empty
	DataType     string // text or aws:ec2:image
	Version      int64
	LastModified time.Time
}

// resourceState is everything registerResources' actions read and change. The Server's mu
// guards it.
type resourceState struct {
	vpcs             map[string]*VPC
	subnets          map[string]*Subnet
	securityGroups   map[string]*SecurityGroup
	images           map[string]*Image
	reservations     map[string]*CapacityReservation
	parameters       map[string]*Parameter
	roles            map[string]*Role
	instanceProfiles map[string]*InstanceProfile
	placementGroups  map[string]*PlacementGroup // by id; made on first use
	// instanceProfileLimit is the account's quota; CreateInstanceProfile answers LimitExceeded
	// beyond it.
	instanceProfileLimit int
	// now is the time the state is judged at (deprecation, reservation expiry).
	now func() time.Time
	// added counts resources tests added, for their generated ids.
	added int
}

// defaultInstanceProfileQuota is IAM's default quota of instance profiles per account.
const defaultInstanceProfileQuota = 1000

func newResourceState(now func() time.Time) *resourceState {
	return &resourceState{
		vpcs:                 map[string]*VPC{},
		subnets:              map[string]*Subnet{},
		securityGroups:       map[string]*SecurityGroup{},
		images:               map[string]*Image{},
		reservations:         map[string]*CapacityReservation{},
		parameters:           map[string]*Parameter{},
		roles:                map[string]*Role{},
		instanceProfiles:     map[string]*InstanceProfile{},
		instanceProfileLimit: defaultInstanceProfileQuota,
		now:                  now,
	}
}

// resourceID returns a stable EC2-style id (prefix-17 hex digits) derived from seed, so that
// seeded resources have the same ids in every run.
func resourceID(prefix, seed string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(seed))
	return fmt.Sprintf("%s-%017x", prefix, h.Sum64())
}

func cloneTags(tags map[string]string) map[string]string {
	if tags == nil {
		return map[string]string{}
	}
	return maps.Clone(tags)
}
