package plugin

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// Pods the last plan refused ("limits reached", no compatible NodePool, an unbound claim) stay
// in the pending set, but nothing plans a batch for them: kube-scheduler's retries reach
// PostFilter only while the cluster has a node (ARCHITECTURE.md, "No nodes at all → no
// PostFilter"), and a change to a NodePool or a NodeClaim is no event its queue knows for a
// pod other plugins rejected. So the changes that can make a refused pod plannable trigger a
// batch here, each as narrowly as a queueing hint:
//
//   - a NodeClaim of a NodePool is deleted (its capacity stops counting against limits);
//   - a Node of a NodePool is deleted (its pods stop counting in topology domains);
//   - a NodePool is added, its spec changes (limits, requirements, taints, weight) or its
//     Ready condition does;
//   - a NodeOverlay changes (overlays.go); a CapacityBuffer changes (buffers.go triggers a
//     batch on every buffer event already);
//   - the earliest unavailable offering the plan skipped expires (one timer);
//   - the cloud provider announces offerings available again that the unavailable-offerings
//     record never held (AWS: a zonal shift or autoshift of the cluster ended, so pods whose
//     only zones were shifted away from can be placed there again; replanWhenOfferingsAnnounced);
//   - a claim a refused pod mounts appears or binds — bound as VolumeBinding counts it:
//     spec.volumeName set and the PV controller's bind-completed annotation, which a
//     pre-bound claim gets only after its creation;
//   - a PersistentVolume appears or changes phase or claim (volumes.go), for refused pods
//     that mount a claim: the PV of a claim that just bound can reach this informer after
//     the claim, and a new PV can satisfy a claim that waits for one.

// requeueHandlers are the triggers that are informer events; the offering timer is set
// after each batch (replanWhenOfferingsReturn).
func (p *Plugin) requeueHandlers(ctx context.Context) (nodeClaims, nodes, nodePools, claims cache.ResourceEventHandler) {
	nodeClaims = cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if nc, err := toNodeClaim(obj); err == nil && nodeClaimOfPoolGone(nc) {
			p.replanRefused(ctx, "NodeClaim deleted", nil)
		}
	}}
	nodes = cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		if node, ok := obj.(*corev1.Node); ok && node.Labels[karpv1.NodePoolLabelKey] != "" {
			p.replanRefused(ctx, "Node deleted", nil)
		}
	}}
	nodePools = cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, isInInitialList bool) {
			if !isInInitialList {
				p.replanRefused(ctx, "NodePool added", nil)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*karpv1.NodePool)
			updated, ok2 := newObj.(*karpv1.NodePool)
			if ok1 && ok2 && nodePoolMayNowTakePods(old, updated) {
				p.replanRefused(ctx, "NodePool changed", nil)
			}
		},
	}
	claims = cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok && !isInInitialList {
				p.replanRefused(ctx, "PersistentVolumeClaim created", p.mounts(pvc))
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*corev1.PersistentVolumeClaim)
			updated, ok2 := newObj.(*corev1.PersistentVolumeClaim)
			if ok1 && ok2 && !claimBound(old) && claimBound(updated) {
				p.replanRefused(ctx, "PersistentVolumeClaim bound", p.mounts(updated))
			}
		},
	}
	return nodeClaims, nodes, nodePools, claims
}

// nodeClaimOfPoolGone reports whether nc, just deleted, belonged to a NodePool: only those
// count against a NodePool's limits.
func nodeClaimOfPoolGone(nc *karpv1.NodeClaim) bool {
	return nc.Labels[karpv1.NodePoolLabelKey] != ""
}

// nodePoolMayNowTakePods reports whether a NodePool update can change what it offers: a spec
// change (limits, requirements, taints, weight, template) or a change of its Ready condition.
// Status-only writes (resources, other conditions) cannot.
func nodePoolMayNowTakePods(old, updated *karpv1.NodePool) bool {
	if old.Generation != updated.Generation {
		return true
	}
	return nodePoolReady(old) != nodePoolReady(updated)
}

func nodePoolReady(np *karpv1.NodePool) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(np.Status.Conditions, karpv1.ConditionTypeReady); c != nil {
		return c.Status
	}
	return metav1.ConditionUnknown
}

// claimBound reports whether a claim is bound to a volume as kube-scheduler's VolumeBinding
// counts it (isPVCFullyBound): spec.volumeName set and the PV controller's bind-completed
// annotation on it. A claim created with spec.volumeName (pre-bound) is not bound until the PV
// controller adds the annotation; until then VolumeBinding refuses its pods ("unbound
// immediate PersistentVolumeClaims"), and the status phase follows in a later write.
func claimBound(pvc *corev1.PersistentVolumeClaim) bool {
	return pvc.Spec.VolumeName != "" && metav1.HasAnnotation(pvc.ObjectMeta, volume.AnnBindCompleted)
}

// mounts returns whether a pod (by UID) mounts pvc: as a claim, or as the claim of one of its
// generic ephemeral volumes (named <pod>-<volume>).
func (p *Plugin) mounts(pvc *corev1.PersistentVolumeClaim) func(types.UID) bool {
	return func(uid types.UID) bool {
		ref, ok := p.refs[uid]
		if !ok || ref.Namespace != pvc.Namespace || p.pods == nil {
			return false
		}
		pod, err := p.pods.Pods(ref.Namespace).Get(ref.Name)
		if err != nil {
			return false
		}
		for _, v := range pod.Spec.Volumes {
			switch {
			case v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name:
				return true
			case v.Ephemeral != nil && pod.Name+"-"+v.Name == pvc.Name:
				return true
			}
		}
		return false
	}
}

// replanRefused triggers a batch when a pending pod the last plan refused (and that affected
// accepts; nil accepts every one) may be plannable after the change why names. The batch plans
// every pending pod, the refused ones with it.
func (p *Plugin) replanRefused(ctx context.Context, why string, affected func(types.UID) bool) {
	if p.planner == nil {
		return
	}
	p.mu.Lock()
	n := 0
	for uid := range p.unschedulable {
		if _, quarantined := p.quarantined[uid]; quarantined || !p.pending.has(uid) {
			continue
		}
		if affected == nil || affected(uid) {
			n++
		}
	}
	p.mu.Unlock()
	if n == 0 {
		return
	}
	klog.FromContext(ctx).V(2).Info("planning refused pods again", "reason", why, "pods", n)
	p.batcher.Trigger()
}

// OfferingsAnnouncer is a planner whose cloud provider announces offerings it listed
// unavailable becoming available again (cloudprovider.AvailabilityNotifier): no record or
// timer of the plugin's knows when, since only the provider watches the cause.
type OfferingsAnnouncer interface {
	// OnOfferingsReturn registers fn, called with why when offerings return.
	OnOfferingsReturn(fn func(why string))
}

// replanWhenOfferingsAnnounced plans the refused pods again whenever the planner's cloud
// provider announces offerings available again.
func (p *Plugin) replanWhenOfferingsAnnounced() {
	announcer, ok := p.planner.(OfferingsAnnouncer)
	if !ok {
		return
	}
	announcer.OnOfferingsReturn(func(why string) { p.replanRefused(p.ctx, why, nil) })
}

// UnavailableOfferings is a planner that skips offerings recorded unavailable and can say when
// the first one it skipped in its last plan returns.
type UnavailableOfferings interface {
	// SkippedUntil returns when the earliest offering the last plan skipped stops being
	// unavailable, and false when it skipped none.
	SkippedUntil() (time.Time, bool)
}

// offeringTimer is the one timer that plans refused pods again when the earliest skipped
// unavailable offering expires.
type offeringTimer struct {
	mu    sync.Mutex
	timer clock.Timer
	at    time.Time
}

// replanWhenOfferingsReturn arms the offering timer after a batch that refused pods, for the
// earliest unavailable offering that batch skipped; an earlier timer already armed stays.
func (p *Plugin) replanWhenOfferingsReturn(refused int) {
	planner, ok := p.planner.(UnavailableOfferings)
	if !ok || refused == 0 {
		return
	}
	until, skipped := planner.SkippedUntil()
	if !skipped {
		return
	}
	t := &p.offerings
	t.mu.Lock()
	defer t.mu.Unlock()
	now := p.clock.Now()
	if t.timer != nil && t.at.After(now) && !t.at.After(until) {
		return
	}
	if t.timer != nil {
		t.timer.Stop()
	}
	t.at = until
	t.timer = p.clock.AfterFunc(until.Sub(now), func() {
		t.mu.Lock()
		t.timer = nil
		t.mu.Unlock()
		// Not on the clock's goroutine: the batcher reads the clock.
		go p.replanRefused(p.ctx, fmt.Sprintf("unavailable offering expired at %s", until.Format(time.RFC3339)), nil)
	})
}
