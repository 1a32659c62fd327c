package v1

// ConditionTypePlacementGroupReady says whether spec.placementGroupSelector resolved to an
// available placement group. It is present only while the class has a selector; then Ready
// depends on it.
const ConditionTypePlacementGroupReady = "PlacementGroupReady"

// Well-known labels of nodes launched into a placement group, Karpenter's.
const (
	// LabelPlacementGroupID is the id of the placement group the node is in.
	LabelPlacementGroupID = Group + "/placement-group-id"
	// LabelPlacementGroupPartition is the node's partition number in a partition group.
	LabelPlacementGroupPartition = Group + "/placement-group-partition"
)

// PlacementGroupStrategy is how EC2 places a group's instances.
type PlacementGroupStrategy string

// Placement strategies, as EC2 names them.
const (
	PlacementGroupStrategyCluster   PlacementGroupStrategy = "cluster"
	PlacementGroupStrategyPartition PlacementGroupStrategy = "partition"
	PlacementGroupStrategySpread    PlacementGroupStrategy = "spread"
)

// PlacementGroup is a resolved placement group.
type PlacementGroup struct {
	// ID of the placement group.
	// +required
	ID string `json:"id"`
	// Name of the placement group.
	// +required
	Name string `json:"name"`
	// Strategy is cluster, partition or spread.
	// +kubebuilder:validation:Enum:={cluster,partition,spread}
	// +required
	Strategy PlacementGroupStrategy `json:"strategy"`
	// PartitionCount is the number of partitions of a partition group.
	// +optional
	PartitionCount int32 `json:"partitionCount,omitempty"`
	// SpreadLevel is host or rack for a spread group.
	// +kubebuilder:validation:Enum:={host,rack}
	// +optional
	SpreadLevel string `json:"spreadLevel,omitempty"`
	// State is the group's state; only available groups resolve.
	// +optional
	State string `json:"state,omitempty"`
}

// PlacementGroup is the class's resolved placement group, nil without one.
func (in *EC2NodeClass) PlacementGroup() *PlacementGroup {
	if len(in.Status.PlacementGroups) == 0 {
		return nil
	}
	return &in.Status.PlacementGroups[0]
}
