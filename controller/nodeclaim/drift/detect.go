package drift

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

// Drift reasons decided from the NodePool, Karpenter's names. The cloud provider names its own
// (for AWS: AMIDrift, SubnetDrift, SecurityGroupDrift, CapacityReservationDrift, NodeClassDrift).
const (
	// NodePoolDrifted: the NodePool's template changed since the NodeClaim was made from it.
	NodePoolDrifted cloudprovider.DriftReason = "NodePoolDrifted"
	// RequirementsDrifted: the NodeClaim's labels no longer satisfy the NodePool's requirements.
	RequirementsDrifted cloudprovider.DriftReason = "RequirementsDrifted"
)

// finding is one detected drift: the reason (the condition's reason and the metric's type) and
// a message saying what differs.
type finding struct {
	reason  cloudprovider.DriftReason
	message string
}

// staticDrift compares the NodeClaim's karpenter.sh/nodepool-hash with its NodePool's. Hashes
// are only comparable when both sides carry one of the same hash version; anything else says
// nothing about drift.
func staticDrift(np *karpv1.NodePool, nc *karpv1.NodeClaim) (finding, bool) {
	poolHash, ok1 := np.Annotations[karpv1.NodePoolHashAnnotationKey]
	poolVersion, ok2 := np.Annotations[karpv1.NodePoolHashVersionAnnotationKey]
	claimHash, ok3 := nc.Annotations[karpv1.NodePoolHashAnnotationKey]
	claimVersion, ok4 := nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey]
	if !ok1 || !ok2 || !ok3 || !ok4 || poolVersion != claimVersion || poolHash == claimHash {
		return finding{}, false
	}
	return finding{
		reason: NodePoolDrifted,
		message: fmt.Sprintf("the template of NodePool %s changed: %s is %s, the NodeClaim was made from %s",
			np.Name, karpv1.NodePoolHashAnnotationKey, poolHash, claimHash),
	}, true
}

// requirementsDrift checks the NodeClaim's labels against the NodePool's requirements. The
// check is strict: a key the NodePool constrains must be among the labels unless the
// requirement allows its absence. Widening the requirements therefore never drifts a NodeClaim
// that still satisfies them; narrowing them drifts those that no longer do.
func requirementsDrift(np *karpv1.NodePool, nc *karpv1.NodeClaim) (finding, bool) {
	required := scheduling.FromNodeSelectorRequirementsWithMinValues(np.Spec.Template.Spec.Requirements...)
	if err := scheduling.FromLabels(nc.Labels).Compatible(required, nil); err != nil {
		return finding{
			reason:  RequirementsDrifted,
			message: fmt.Sprintf("the labels no longer satisfy the requirements of NodePool %s: %v", np.Name, err),
		}, true
	}
	return finding{}, false
}

// restampHash carries a new hash version of the NodePool over to the NodeClaim and reports
// whether it changed the annotations. A hash of another version was computed differently, so
// it cannot be compared: the NodeClaim takes the NodePool's current hash as its own, unless it
// is already drifted, in which case its old hash is kept so that it stays drifted.
func restampHash(np *karpv1.NodePool, nc *karpv1.NodeClaim) bool {
	poolHash, ok1 := np.Annotations[karpv1.NodePoolHashAnnotationKey]
	poolVersion, ok2 := np.Annotations[karpv1.NodePoolHashVersionAnnotationKey]
	if !ok1 || !ok2 || nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey] == poolVersion {
		return false
	}
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey] = poolVersion
	if meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrifted) == nil {
		nc.Annotations[karpv1.NodePoolHashAnnotationKey] = poolHash
	}
	return true
}
