package simulation

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// Planner decides which new NodeClaims would host pending pods. The solver implements it.
type Planner interface {
	Plan(ctx context.Context, pods []*corev1.Pod) (*Plan, error)
}

// Plan is the outcome of one batch.
type Plan struct {
	// NewNodeClaims are to create, cheapest-first instance types already in requirements.
	NewNodeClaims []*PlannedNodeClaim
	// InFlight maps a pod UID to the name of an existing (launching) NodeClaim it will land on.
	InFlight map[types.UID]string
	// Unschedulable maps a pod UID to why no NodePool can host it, as the user reads it
	// ("no NodePool fits: ..."); the plugin shows it verbatim.
	Unschedulable map[types.UID]string
}

// PlannedNodeClaim is one NodeClaim to create and the pods it is made for.
type PlannedNodeClaim struct {
	// NodeClaim is unsaved; an empty Name means GenerateName "<nodepool>-".
	NodeClaim *karpv1.NodeClaim
	Pods      []*corev1.Pod
}

// PlannedPodsAnnotationKey lists, on a NodeClaim, the UIDs of the pods it was made for or
// that were planned onto it while it launched (comma-separated, sorted). It is how the plan
// outlives the scheduler process: after a restart, pods listed on a NodeClaim that is still
// launching wait for it instead of causing more capacity. joinery's own domain, since
// Karpenter has no such annotation.
const PlannedPodsAnnotationKey = "joinery.dev/planned-pods"

// PlannedPods returns the pod UIDs nodeClaim's PlannedPodsAnnotationKey lists.
func PlannedPods(nodeClaim *karpv1.NodeClaim) []types.UID {
	value := nodeClaim.Annotations[PlannedPodsAnnotationKey]
	if value == "" {
		return nil
	}
	var uids []types.UID
	for _, part := range strings.Split(value, ",") {
		if part = strings.TrimSpace(part); part != "" {
			uids = append(uids, types.UID(part))
		}
	}
	return uids
}

// AddPlannedPods adds uids to nodeClaim's PlannedPodsAnnotationKey, keeping the list sorted
// and free of duplicates, and reports whether the annotation changed.
func AddPlannedPods(nodeClaim *karpv1.NodeClaim, uids ...types.UID) bool {
	before := nodeClaim.Annotations[PlannedPodsAnnotationKey]
	all := append(PlannedPods(nodeClaim), uids...)
	slices.Sort(all)
	all = slices.Compact(all)
	parts := make([]string, len(all))
	for i, uid := range all {
		parts[i] = string(uid)
	}
	after := strings.Join(parts, ",")
	if after == before {
		return false
	}
	if nodeClaim.Annotations == nil {
		nodeClaim.Annotations = map[string]string{}
	}
	nodeClaim.Annotations[PlannedPodsAnnotationKey] = after
	return true
}
