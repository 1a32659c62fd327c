package launchtemplate

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

// NamePrefix starts the name of every launch template joinery manages.
const NamePrefix = awsv1.Group + "/"

// Spec is one launch configuration. Equal specs share a template.
type Spec struct {
	// ImageID is the AMI.
	ImageID string `json:"imageID"`
	// InstanceProfile is the instance profile's name.
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// SecurityGroupIDs are attached to the primary network interface.
	SecurityGroupIDs []string `json:"securityGroupIDs"`
	// UserData is the plain user data (the template carries it base64-encoded).
	UserData string `json:"userData"`
	// BlockDeviceMappings are the volumes; callers resolve family defaults first.
	BlockDeviceMappings []awsv1.BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	// MetadataOptions are IMDS settings with defaults applied.
	MetadataOptions awsv1.MetadataOptions `json:"metadataOptions"`
	// DetailedMonitoring enables 1-minute CloudWatch metrics.
	DetailedMonitoring bool `json:"detailedMonitoring,omitempty"`
	// AssociatePublicIPAddress overrides the subnet's setting when set.
	AssociatePublicIPAddress *bool `json:"associatePublicIPAddress,omitempty"`
	// CapacityReservationID targets launches at one reservation; CapacityBlock says it is a
	// capacity block (market type capacity-block).
	CapacityReservationID string `json:"capacityReservationID,omitempty"`
	CapacityBlock         bool   `json:"capacityBlock,omitempty"`
	// PlacementGroupID is the placement group instances launch into (Placement.GroupId).
	PlacementGroupID string `json:"placementGroupID,omitempty"`
	// IPv4PrefixCount is the number of IPv4 prefixes of the primary network interface.
	IPv4PrefixCount *int32 `json:"ipv4PrefixCount,omitempty"`
	// Tags go on the template and, through its tag specifications, on its network interfaces.
	// Per-instance tags (the NodeClaim's) go on the fleet request instead, so that NodeClaims
	// share templates.
	Tags map[string]string `json:"tags,omitempty"`
	// NodeClass is the EC2NodeClass the template was made for, tagged so that deleting the
	// class can delete its templates.
	NodeClass string `json:"nodeClass"`
}

// Name is the template's deterministic name: NamePrefix and a hash of the spec.
func (s Spec) Name() string {
	norm := s
	norm.SecurityGroupIDs = slices.Sorted(slices.Values(s.SecurityGroupIDs))
	norm.Tags = maps.Clone(s.Tags)
	data, err := json.Marshal(norm) // map keys are sorted: equal specs, equal bytes
	if err != nil {
		// A Spec holds only strings, numbers, booleans and quantities: it always encodes.
		panic(fmt.Sprintf("launchtemplate: encoding spec: %v", err))
	}
	h := fnv.New64a()
	_, _ = h.Write(data)
	return NamePrefix + strconv.FormatUint(h.Sum64(), 36)
}

// restrictedTagKeys are tags joinery sets itself; a class may not override them.
var restrictedTagKeys = []string{
	awsv1.TagNodeClaim, awsv1.TagNodePool, awsv1.TagEC2NodeClass, awsv1.TagManagedLaunchTemplate,
	"karpenter.sh/managed-by", "eks:eks-cluster-name",
}

// CheckClassTags refuses an EC2NodeClass's tags that would override joinery's own.
func CheckClassTags(tags map[string]string) error {
	for k := range tags {
		if k == "" {
			return fmt.Errorf("tag keys may not be empty")
		}
		if slices.Contains(restrictedTagKeys, k) || strings.HasPrefix(k, "kubernetes.io/cluster/") {
			return fmt.Errorf("tag %q is restricted: joinery sets it", k)
		}
		if strings.HasPrefix(strings.ToLower(k), "aws:") {
			return fmt.Errorf("tag %q is reserved by AWS", k)
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
