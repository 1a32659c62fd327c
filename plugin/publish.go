package plugin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// Event reasons on pods, as Karpenter emits them.
const (
	reasonNominated        = "Nominated"
	reasonFailedScheduling = "FailedScheduling"
)

// errNoLongerLaunching: a NodeClaim the plan put pods on initialized or is being deleted.
var errNoLongerLaunching = errors.New("no longer launching")

// publish makes plan real: it creates the new NodeClaims, records pods planned onto
// launching ones on those NodeClaims, and tells each pod (events) and the operator (logs).
// Every assignment is written to the NodeClaim's planned-pods annotation before the pod is
// taken out of the pending set, so a restart finds the same plan in the cluster.
func (p *Plugin) publish(ctx context.Context, batch []*corev1.Pod, plan *simulation.Plan) {
	logger := klog.FromContext(ctx)
	planned := 0
	for _, nc := range plan.NewNodeClaims {
		planned += len(nc.Pods)
	}
	logger.Info("computed new nodeclaim(s) to fit pod(s)", "nodeclaims", len(plan.NewNodeClaims), "pods", planned)
	p.mu.Lock()
	arriving := sets.New[types.UID]()
	for uid := range p.waits.nodeClaimOf {
		arriving.Insert(uid)
	}
	planID := p.holds.beginPlan(arriving)
	for _, claim := range plan.NewNodeClaims {
		for _, pod := range claim.Pods {
			p.unpublished.Insert(pod.UID)
		}
	}
	for uid := range plan.InFlight {
		p.unpublished.Insert(uid)
	}
	p.mu.Unlock()
	defer p.endPublishing(ctx)
	p.slotsComing(plan)

	// The NodeClaims are created a few at a time: one by one, a batch of 150 took 11 s of API
	// round trips while its pods waited for theirs.
	var creating errgroup.Group
	creating.SetLimit(publishWorkers)
	for _, claim := range plan.NewNodeClaims {
		creating.Go(func() error {
			p.publishNodeClaim(ctx, planID, claim)
			return nil
		})
	}
	_ = creating.Wait() // publishNodeClaim logs its own failures

	byUID := make(map[types.UID]*corev1.Pod, len(batch))
	for _, pod := range batch {
		byUID[pod.UID] = pod
	}
	inFlight := map[string][]*corev1.Pod{}
	for uid, name := range plan.InFlight {
		if pod, ok := byUID[uid]; ok {
			inFlight[name] = append(inFlight[name], pod)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(inFlight)) {
		pods := p.stillPending(inFlight[name])
		if len(pods) == 0 {
			continue
		}
		if err := p.addPlannedPods(ctx, name, pods, plan.InFlightRequests[name]); err != nil {
			if errors.Is(err, errNoLongerLaunching) {
				// Its node initialized while the batch was planned: the pods may fit on it now.
				// Retry them at once; left in the unschedulable queue they would wait for an
				// unrelated event, and a later batch would buy them capacity of their own.
				logger.V(1).Info("in-flight nodeclaim initialized while its batch was planned; retrying its pods", "NodeClaim", klog.KRef("", name), "pods", len(pods))
				p.mu.Lock()
				for _, pod := range pods {
					p.unpublished.Delete(pod.UID)
				}
				p.mu.Unlock()
				p.activateUIDs(ctx, uids(pods)...)
				continue
			}
			logger.Error(err, "recording pods on an in-flight nodeclaim failed; they stay pending", "NodeClaim", klog.KRef("", name), "pods", len(pods))
			continue
		}
		p.launches.expectWritten(name, uids(pods))
		p.times.decided(uids(pods), p.clock.Now())
		logger.V(1).Info("planned pod(s) onto in-flight nodeclaim", "NodeClaim", klog.KRef("", name), "pods", len(pods))
		p.nominate(planID, name, pods)
	}

	p.retryOnNodes(ctx, plan.Retry, byUID)
	p.recordUnschedulable(plan.Unschedulable, byUID)
}

// publishWorkers bounds the NodeClaims a batch creates at once.
const publishWorkers = 8

// publishNodeClaim creates the NodeClaim of claim for those of its pods still pending and
// its CapacityBuffers' virtual pods, and pins the pods to it; a failure leaves them pending.
func (p *Plugin) publishNodeClaim(ctx context.Context, planID uint64, claim *simulation.PlannedNodeClaim) {
	logger := klog.FromContext(ctx)
	pods := p.stillPending(claim.Pods)
	// A CapacityBuffer's virtual pods are listed like pods, but nobody waits for them.
	virtual := virtualIn(claim.Pods)
	if len(pods) == 0 && len(virtual) == 0 {
		return // every pod found a node while the batch was planned
	}
	all := append(slices.Clone(pods), virtual...)
	created, err := p.createNodeClaim(ctx, claim.NodeClaim, all)
	if err != nil {
		logger.Error(err, "creating nodeclaim failed; its pods stay pending", "NodePool", klog.KRef("", claim.NodeClaim.Labels[karpv1.NodePoolLabelKey]), "pods", len(pods), "bufferPods", len(virtual))
		return
	}
	p.launches.expectWritten(created.Name, uids(all))
	_, relaxed := created.Annotations[karpv1.NodeClaimMinValuesRelaxedAnnotationKey]
	nodeClaimsCreated.WithLabelValues("provisioned", created.Labels[karpv1.NodePoolLabelKey], strconv.FormatBool(relaxed)).Inc()
	p.times.decided(uids(pods), p.clock.Now())
	logger.Info("created nodeclaim",
		"NodePool", klog.KRef("", created.Labels[karpv1.NodePoolLabelKey]),
		"NodeClaim", klog.KRef("", created.Name),
		"requests", created.Spec.Resources.Requests,
		"instance-types", formatInstanceTypes(instanceTypes(created)))
	p.nominate(planID, created.Name, pods)
	p.recordSlots(created, planID, virtual)
}

// retryOnNodes sends the pods that fit a registered node as it is now back to kube-scheduler:
// its last attempt saw the node before it could take them. Left in the unschedulable queue,
// they would wait for an unrelated event, and a later batch would buy them capacity.
func (p *Plugin) retryOnNodes(ctx context.Context, retry map[types.UID]string, byUID map[types.UID]*corev1.Pod) {
	var pods []*corev1.Pod
	for uid := range retry {
		if pod, ok := byUID[uid]; ok {
			pods = append(pods, pod)
		}
	}
	if pods = p.stillPending(pods); len(pods) == 0 {
		return
	}
	podsRetried.WithLabelValues(p.profile).Add(float64(len(pods)))
	klog.FromContext(ctx).V(1).Info("pending pod(s) fit registered nodes now; retrying them there", "pods", len(pods))
	p.activateUIDs(ctx, uids(pods)...)
}

// stillPending keeps the pods that are pending and not waiting: a pod may have been
// scheduled or deleted while its batch was planned.
func (p *Plugin) stillPending(pods []*corev1.Pod) []*corev1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*corev1.Pod
	for _, pod := range pods {
		if _, waiting := p.waits.nodeClaimFor(pod.UID); p.pending.has(pod.UID) && !waiting {
			out = append(out, pod)
		}
	}
	return out
}

// createNodeClaim creates planned for pods: named "<nodepool>-<suffix>" unless the planner
// named it, owned by its NodePool, listing the pods in its planned-pods annotation.
func (p *Plugin) createNodeClaim(ctx context.Context, planned *karpv1.NodeClaim, pods []*corev1.Pod) (*karpv1.NodeClaim, error) {
	nc := planned.DeepCopy()
	pool := nc.Labels[karpv1.NodePoolLabelKey]
	if pool == "" {
		return nil, errors.New("the planned NodeClaim has no " + karpv1.NodePoolLabelKey + " label")
	}
	if nc.Name == "" && nc.GenerateName == "" {
		nc.GenerateName = pool + "-"
	}
	if !ownedByNodePool(nc, pool) {
		np := &karpv1.NodePool{}
		if err := p.client.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
			return nil, fmt.Errorf("reading NodePool %s: %w", pool, err)
		}
		nc.OwnerReferences = append(nc.OwnerReferences, metav1.OwnerReference{
			APIVersion: karpv1.SchemeGroupVersion.String(),
			Kind:       "NodePool",
			Name:       np.Name,
			UID:        np.UID,
		})
	}
	simulation.AddPlannedPods(nc, uids(pods)...)
	if err := p.client.Create(ctx, nc); err != nil {
		return nil, fmt.Errorf("creating NodeClaim for NodePool %s: %w", pool, err)
	}
	return nc, nil
}

func ownedByNodePool(nc *karpv1.NodeClaim, pool string) bool {
	return slices.ContainsFunc(nc.OwnerReferences, func(o metav1.OwnerReference) bool {
		return o.Kind == "NodePool" && o.Name == pool && o.UID != ""
	})
}

// addPlannedPods adds pods to the planned-pods annotation of the existing NodeClaim name and
// raises its planned requests to requests (what it must hold now, nil when the planner did
// not say: it launched already), re-reading it on conflict so concurrent writers (another
// profile) do not lose pods. Its spec is immutable; its launch takes the planned requests.
func (p *Plugin) addPlannedPods(ctx context.Context, name string, pods []*corev1.Pod, requests corev1.ResourceList) error {
	return p.patchNodeClaim(ctx, name, false, func(nc *karpv1.NodeClaim) (bool, error) {
		if !launching(nc) {
			return false, fmt.Errorf("NodeClaim %s: %w", name, errNoLongerLaunching)
		}
		// It launched after the planner read it: its type is chosen, and may be too small.
		if len(requests) > 0 && len(nc.Status.Allocatable) > 0 {
			if err := scheduling.Fits(requests, nc.Status.Allocatable); err != nil {
				return false, fmt.Errorf("NodeClaim %s launched too small for its planned pods: %w", name, err)
			}
		}
		added := simulation.AddPlannedPods(nc, uids(pods)...)
		raised := len(requests) > 0 && simulation.RaisePlannedRequests(nc, requests)
		return added || raised, nil
	})
}

// nominate records that pods, planned together in plan, wait for nodeClaim and tells them so.
func (p *Plugin) nominate(plan uint64, nodeClaim string, pods []*corev1.Pod) {
	p.mu.Lock()
	for _, pod := range pods {
		p.unpublished.Delete(pod.UID)
		p.waits.assign(nodeClaim, pod.UID)
		p.holds.addToPlan(plan, pod.UID)
		p.pending.remove(pod.UID)
		delete(p.unschedulable, pod.UID)
	}
	p.mu.Unlock()
	for _, pod := range pods {
		p.event(pod, corev1.EventTypeNormal, reasonNominated, "Nominate", "Pod should schedule on: nodeclaim/%s", nodeClaim)
	}
}

// endPublishing lifts the hold on the batch's pods whose NodeClaims were not created, and
// retries every pod PreFilter held meanwhile: the pinned ones whose node registered before
// they were pinned would otherwise wait for an unrelated event.
func (p *Plugin) endPublishing(ctx context.Context) {
	p.mu.Lock()
	held := p.heldUnpublished.UnsortedList()
	p.unpublished.Clear()
	p.heldUnpublished.Clear()
	p.mu.Unlock()
	p.activateUIDs(ctx, held...)
}

// recordUnschedulable remembers why no NodePool fits each pod, for its PostFilter message,
// and tells the pod. The pods stay pending: the next batch tries them again.
func (p *Plugin) recordUnschedulable(reasons map[types.UID]string, byUID map[types.UID]*corev1.Pod) {
	for _, uid := range slices.Sorted(maps.Keys(reasons)) {
		pod, ok := byUID[uid]
		if !ok {
			continue
		}
		p.mu.Lock()
		p.unschedulable[uid] = reasons[uid]
		p.mu.Unlock()
		p.event(pod, corev1.EventTypeWarning, reasonFailedScheduling, "Provision", "Failed to schedule pod, %s", reasons[uid])
	}
}

func (p *Plugin) event(pod *corev1.Pod, eventType, reason, action, note string, args ...any) {
	if p.recorder != nil {
		p.recorder.Eventf(pod, nil, eventType, reason, action, note, args...)
	}
}

// instanceTypes returns the values of nc's node.kubernetes.io/instance-type In requirement,
// in the planner's (cheapest-first) order.
func instanceTypes(nc *karpv1.NodeClaim) []string {
	for _, r := range nc.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable && r.Operator == corev1.NodeSelectorOpIn {
			return r.Values
		}
	}
	return nil
}

func uids(pods []*corev1.Pod) []types.UID {
	out := make([]types.UID, len(pods))
	for i, pod := range pods {
		out[i] = pod.UID
	}
	return out
}
