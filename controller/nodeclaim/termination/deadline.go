package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// drainDeadline returns when nc's terminationGracePeriod ends, recording it on the NodeClaim
// the first time drain starts so a restarted controller keeps the same deadline. A deadline
// already recorded is honoured even without a terminationGracePeriod: node repair records
// "now" to terminate an unhealthy node forcefully. It reports false when nc is nil or has
// neither: the drain may then take forever.
func drainDeadline(ctx context.Context, c client.Client, nc *karpv1.NodeClaim, now time.Time) (time.Time, bool, error) {
	if nc == nil {
		return time.Time{}, false, nil
	}
	if recorded, ok := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		deadline, err := time.Parse(time.RFC3339, recorded)
		if err == nil {
			return deadline, true, nil
		}
		// A malformed value is replaced rather than blocking termination forever.
	}
	if nc.Spec.TerminationGracePeriod == nil {
		return time.Time{}, false, nil
	}
	deadline := now.Add(nc.Spec.TerminationGracePeriod.Duration).UTC().Truncate(time.Second)
	stored := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = deadline.Format(time.RFC3339)
	if err := c.Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		return time.Time{}, false, fmt.Errorf("recording termination deadline on nodeclaim %s: %w", nc.Name, err)
	}
	return deadline, true, nil
}

// forceDeleteAt is when pod must be deleted, bypassing PDBs and do-not-disrupt, so that it
// still gets its full terminationGracePeriodSeconds before the node's deadline.
func forceDeleteAt(pod *corev1.Pod, deadline time.Time) time.Time {
	return deadline.Add(-time.Duration(podTerminationGracePeriodSeconds(pod)) * time.Second)
}
