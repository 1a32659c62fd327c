package plugin

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation"
)

// reasonPlannedPodsRestored is the event reason on a NodeClaim whose planned-pods annotation
// was lost or corrupt and was written again.
const reasonPlannedPodsRestored = "PlannedPodsRestored"

// plannedPodsRestored counts NodeClaims whose planned-pods annotation the plugin wrote again.
var plannedPodsRestored = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace:      "joinery",
	Subsystem:      "provisioner",
	Name:           "planned_pods_restored_total",
	Help:           "Launching NodeClaims whose joinery.dev/planned-pods annotation had lost pods that wait for them (removed, or corrupt) and was written again from the scheduler's record. Labelled by scheduler profile and why: missing or corrupt.",
	StabilityLevel: metrics.ALPHA,
}, []string{"profile", "cause"})

// The planned-pods annotation is the cluster's record of a plan; the wait book is this
// process's, built from the annotations it saw and the plans it published, and kept when an
// annotation loses entries (someone patched it, a client wrote a stale copy). The solver reads
// only the annotation: a pod missing from it is invisible, its capacity handed to other pods,
// and the pod planned again once its node rejects it — a second NodeClaim for one pod. So a
// launching NodeClaim whose annotation misses pods waiting for it, or holds entries that are
// no pod UID, has the annotation written again from the wait book (by the leader), with a
// Warning event and a count. A scheduler that starts without a record (every replica
// restarted) has only the annotation; its solver then plans the pods onto the NodeClaim's
// capacity first, as in-flight capacity, before it buys any.

// annotationLoss returns the pods waiting for nc that its planned-pods annotation lacks, and
// whether it holds entries that are no UID. Callers hold p.mu.
func (p *Plugin) annotationLoss(nc *karpv1.NodeClaim, planned []types.UID) (missing []types.UID, corrupt bool) {
	if p.launches.writeUnobserved(nc.Name) {
		return nil, false // our own write is on its way: the informer's copy is older
	}
	listed := sets.New(planned...)
	for _, uid := range p.waits.podsWaitingFor(nc.Name) {
		if !listed.Has(uid) {
			missing = append(missing, uid)
		}
	}
	return missing, slices.ContainsFunc(planned, func(uid types.UID) bool { return !validUID(uid) })
}

// validUID reports whether uid has the form the API server assigns: a UUID,
// xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx in hex digits.
func validUID(uid types.UID) bool {
	if len(uid) != 36 {
		return false
	}
	for i, c := range []byte(uid) {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F'):
			return false
		}
	}
	return true
}

// leading reports whether this process provisions now.
func (p *Plugin) leading() bool {
	if p.leader == nil {
		return true
	}
	select {
	case <-p.leader.Leading():
		return true
	default:
		return false
	}
}

// restorePlannedPods writes the planned-pods annotation of the launching NodeClaim name again:
// its entries that are UIDs and the pods in missing, which wait for it.
func (p *Plugin) restorePlannedPods(ctx context.Context, name string, missing []types.UID, corrupt bool) {
	if p.client == nil || !p.leading() {
		return
	}
	cause := "missing"
	if corrupt {
		cause = "corrupt"
	}
	logger := klog.FromContext(ctx)
	var restored *karpv1.NodeClaim
	err := p.patchNodeClaim(ctx, name, false, func(nc *karpv1.NodeClaim) (bool, error) {
		restored = nil
		if !launching(nc) {
			return false, nil
		}
		before := nc.Annotations[simulation.PlannedPodsAnnotationKey]
		valid := slices.DeleteFunc(simulation.PlannedPods(nc), func(uid types.UID) bool { return !validUID(uid) })
		delete(nc.Annotations, simulation.PlannedPodsAnnotationKey)
		simulation.AddPlannedPods(nc, append(valid, missing...)...)
		if nc.Annotations[simulation.PlannedPodsAnnotationKey] == before {
			return false, nil
		}
		restored = nc
		return true, nil
	})
	if err != nil {
		logger.Error(err, "restoring a NodeClaim's planned-pods annotation failed", "NodeClaim", klog.KRef("", name))
		return
	}
	if restored == nil {
		return
	}
	p.launches.expectWritten(name, missing)
	plannedPodsRestored.WithLabelValues(p.profile, cause).Inc()
	logger.Info("restored a nodeclaim's planned-pods annotation from the scheduler's record", "NodeClaim", klog.KRef("", name), "cause", cause, "restored", len(missing))
	if p.recorder != nil {
		ref := restored.DeepCopy()
		ref.APIVersion, ref.Kind = karpv1.SchemeGroupVersion.String(), "NodeClaim"
		p.recorder.Eventf(ref, nil, corev1.EventTypeWarning, reasonPlannedPodsRestored, "Provision",
			"Annotation %s was %s: restored %d pod(s) waiting for this NodeClaim", simulation.PlannedPodsAnnotationKey, cause, len(missing))
	}
}
