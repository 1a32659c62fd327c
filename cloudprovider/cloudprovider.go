package cloudprovider

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// CloudProvider launches and terminates the instances behind NodeClaims and describes what can
// be launched. Implementations must be safe for concurrent use.
type CloudProvider interface {
	// Create launches an instance for nodeClaim and returns a copy of it resolved to what was
	// launched: status.providerID, status.imageID, status.capacity and status.allocatable set,
	// and labels for the chosen instance type, zone and capacity type (plus the instance type's
	// other well-known labels) added. The input is not modified. It returns an
	// InsufficientCapacityError when no compatible offering is available, a
	// NodeClassNotReadyError when the NodeClaim's NodeClass cannot be used, and a CreateError for
	// other launch failures that should be recorded on the NodeClaim.
	Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error)
	// Delete terminates the instance of nodeClaim (found by status.providerID). It returns a
	// NodeClaimNotFoundError once the instance is gone, so callers can tell completion from
	// failure.
	Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error
	// Get returns the NodeClaim describing the instance with providerID, or a
	// NodeClaimNotFoundError.
	Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error)
	// List returns a NodeClaim for every instance the provider launched and still runs; garbage
	// collection compares it with the NodeClaims in the cluster.
	List(ctx context.Context) ([]*karpv1.NodeClaim, error)
	InstanceTypeLister
	// IsDrifted reports why nodeClaim's instance no longer matches its NodeClass, or "" when it
	// does. Drift against the NodePool is decided by joinery itself.
	IsDrifted(ctx context.Context, nodeClaim *karpv1.NodeClaim) (DriftReason, error)
	// RepairPolicies lists the node conditions that mark a node unhealthy and how long each may
	// last before the node is replaced.
	RepairPolicies() []RepairPolicy
	// Name identifies the provider in logs and metrics, e.g. "aws" or "kwok".
	Name() string
	// GetSupportedNodeClasses returns the node classes a NodePool's nodeClassRef may name, one
	// empty object of each kind (registered in the manager's scheme); the first is the
	// provider's default. Callers read a class's readiness through NodeClass.GetConditions.
	GetSupportedNodeClasses() []NodeClass
}

// InstanceTypeLister is what the planner, consolidation, the cost metrics, the CLI and the
// NodePool controllers read of a provider: its catalog, per NodePool, with prices. It is the
// provider itself in the controller, a catalog-only source in the scheduler, and a recorded
// snapshot in the CLI.
type InstanceTypeLister interface {
	// GetInstanceTypes returns the instance types nodePool may launch, each with its offerings,
	// capacity and overhead resolved against the NodePool's NodeClass. A nil nodePool asks for
	// the whole catalog, which a source without a NodeClass-free catalog (AWS) refuses.
	GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*InstanceType, error)
}

// Preplanner launches capacity for the pods of a NodeClaim that is about to be removed (an
// interruption, an expiry, a repair) as soon as that is decided, instead of waiting for the
// evicted pods to become pending; called again for the same NodeClaim and method, it returns
// the replacements it created before. joinery-controller's disruption simulation implements
// it (controller/disruption.Preplanner); the neutral forceful methods and a provider's
// interruption controller call it.
type Preplanner interface {
	Preplan(ctx context.Context, method string, nc *karpv1.NodeClaim) ([]string, error)
}

// NodeClass is a provider's node class (EC2NodeClass, KWOKNodeClass): the cluster-scoped object
// a NodePool's nodeClassRef names. Its Ready status condition says whether NodePools may launch
// with it, so neutral controllers judge a class without knowing its kind.
type NodeClass interface {
	client.Object
	// GetConditions returns the class's status conditions.
	GetConditions() []metav1.Condition
}

// DriftReason says why an instance drifted from its NodeClass; it is the reason of the
// NodeClaim's Drifted condition. Empty means not drifted.
type DriftReason string

// RepairPolicy marks a node unhealthy while its condition ConditionType has ConditionStatus; once
// that has lasted TolerationDuration the node is replaced without a graceful drain.
type RepairPolicy struct {
	ConditionType      corev1.NodeConditionType
	ConditionStatus    corev1.ConditionStatus
	TolerationDuration time.Duration
}

// KubeletRepairPolicies are the policies on the conditions the kubelet itself reports, as
// Karpenter's documentation lists them: a node not Ready (False or Unknown) for 30 minutes.
func KubeletRepairPolicies() []RepairPolicy {
	return []RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 30 * time.Minute},
	}
}

// NodeMonitoringAgentRepairPolicies are the policies on the conditions a node monitoring agent
// reports, as Karpenter's documentation lists them for AWS.
func NodeMonitoringAgentRepairPolicies() []RepairPolicy {
	return []RepairPolicy{
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute},
		{ConditionType: "StorageReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "NetworkingReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "KernelReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "ContainerRuntimeReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
	}
}

// AvailabilityNotifier is a cloud provider that learns, outside the unavailable-offerings
// record, that offerings it listed unavailable are available again, and tells subscribers: the
// AWS provider with ENABLE_ZONAL_SHIFT, when a zonal shift or autoshift of the cluster ends.
// The Provisioner plans the pods it refused again then.
type AvailabilityNotifier interface {
	// OnOfferingsReturn registers fn, called with why whenever offerings return.
	OnOfferingsReturn(fn func(why string))
}
