package v1

// Group is the API group of the provider-neutral kinds (NodePool, NodeClaim).
const Group = "karpenter.sh"

// Well-known labels that joinery sets on nodes and understands in requirements.
const (
	NodePoolLabelKey        = Group + "/nodepool"
	CapacityTypeLabelKey    = Group + "/capacity-type"
	NodeInitializedLabelKey = Group + "/initialized"
	NodeRegisteredLabelKey  = Group + "/registered"
)

// Capacity types, the values of CapacityTypeLabelKey.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// Annotations.
const (
	DoNotDisruptAnnotationKey                  = Group + "/do-not-disrupt"
	NodePoolHashAnnotationKey                  = Group + "/nodepool-hash"
	NodePoolHashVersionAnnotationKey           = Group + "/nodepool-hash-version"
	NodeClaimTerminationTimestampAnnotationKey = Group + "/nodeclaim-termination-timestamp"
	NodeClaimMinValuesRelaxedAnnotationKey     = Group + "/nodeclaim-min-values-relaxed"
)

// Taints.
const (
	DisruptedTaintKey    = Group + "/disrupted"
	UnregisteredTaintKey = Group + "/unregistered"
)

// TerminationFinalizer guards Nodes and NodeClaims until their capacity is drained and released.
const TerminationFinalizer = Group + "/termination"

// Disruption reasons, as used in budgets and in the karpenter.sh/disruption-reason label of metrics.
const (
	DisruptionReasonEmpty         = "Empty"
	DisruptionReasonUnderutilized = "Underutilized"
	DisruptionReasonDrifted       = "Drifted"
)
