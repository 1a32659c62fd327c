package simulation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// Planner decides which new NodeClaims would host pending pods, over the cluster it reads
// itself. joinery-scheduler's planner (plugin/planner) implements it: the solver over the
// scheduler's informers, whose state it hands the solver on each call.
type Planner interface {
	Plan(ctx context.Context, pods []*corev1.Pod) (*Plan, error)
}

// Plan is the outcome of one batch.
type Plan struct {
	// NewNodeClaims are to create, cheapest-first instance types already in requirements.
	NewNodeClaims []*PlannedNodeClaim
	// InFlight maps a pod UID to the name of an existing (launching) NodeClaim it will land on.
	InFlight map[types.UID]string
	// InFlightRequests are, for each NodeClaim of InFlight that has not launched yet, what it
	// must hold now: its daemons and every pod planned onto it, this batch's included. Its
	// spec is immutable, so the plugin records them in PlannedRequestsAnnotationKey.
	InFlightRequests map[string]corev1.ResourceList
	// Retry maps a pending pod UID to the registered, initialized node it fits as that node is
	// now. kube-scheduler tried the pod before the node could take it (the node was still
	// initializing, or room was freed since): the plugin sends the pod back to kube-scheduler
	// instead of buying it capacity of its own.
	Retry map[types.UID]string
	// Unschedulable maps a pod UID to why no NodePool can host it, as the user reads it
	// ("no NodePool fits: ..."); the plugin shows it verbatim.
	Unschedulable map[types.UID]string
	// Reasons are, for each pod of Unschedulable, the reasons that text joins, one per
	// NodePool in the order the solver tried them: readers decide from their kinds, never
	// from the text.
	Reasons map[types.UID][]NodePoolReason
	// Incompatible are the NodePools whose requirements filter out every instance type the
	// cloud provider offers them, so they can serve no pod; the plugin tells the user with
	// Karpenter's NoCompatibleInstanceTypes event.
	Incompatible []IncompatibleNodePool
}

// HasReason reports whether some NodePool cannot host the unschedulable pod uid for a reason
// of kind.
func (p *Plan) HasReason(uid types.UID, kind ReasonKind) bool {
	return slices.ContainsFunc(p.Reasons[uid], func(r NodePoolReason) bool { return r.Kind == kind })
}

// ReasonKind is what stops a NodePool from hosting a pod.
type ReasonKind string

const (
	// ReasonLimits: the NodePool's limits leave no room for a node that holds the pod.
	ReasonLimits ReasonKind = "Limits"
	// ReasonRequirements: the NodePool's requirements or taints rule the pod out, or leave no
	// instance type (or too few for their minValues) once the pod's are added.
	ReasonRequirements ReasonKind = "Requirements"
	// ReasonUnavailableOfferings: instance types would meet the requirements, but every
	// offering of theirs that does is known not to launch.
	ReasonUnavailableOfferings ReasonKind = "UnavailableOfferings"
	// ReasonNoInstanceType: no instance type makes a node that takes the pod — its requests
	// with its daemons, its devices or volumes, or a Filter of the scheduler profile.
	ReasonNoInstanceType ReasonKind = "NoInstanceType"
	// ReasonStatic: the NodePool is static (spec.replicas); only its own controller adds nodes.
	ReasonStatic ReasonKind = "Static"
	// ReasonNotReady: the NodePool is not ready or its instance types cannot be read; with no
	// NodePool named, no NodePool is ready at all.
	ReasonNotReady ReasonKind = "NotReady"
)

// NodePoolReason is why one NodePool cannot host a pod.
type NodePoolReason struct {
	// NodePool is empty when the reason is about no NodePool in particular.
	NodePool string
	Kind     ReasonKind
	// Message is the reason about the NodePool without its name ("limits reached").
	Message string
	// Text is the reason as Plan.Unschedulable words it, the NodePool named
	// ("nodepool \"default\": limits reached").
	Text string
}

// IncompatibleNodePool is a NodePool with no instance type left after its requirements.
type IncompatibleNodePool struct {
	NodePool *karpv1.NodePool
	// MinValues is set when types are left, but too few to meet the requirements' minValues
	// (under the Strict minValues policy).
	MinValues bool
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

// RemovePlannedPods removes uids from nodeClaim's PlannedPodsAnnotationKey and reports
// whether the annotation changed.
func RemovePlannedPods(nodeClaim *karpv1.NodeClaim, uids ...types.UID) bool {
	before := PlannedPods(nodeClaim)
	kept := slices.DeleteFunc(slices.Clone(before), func(uid types.UID) bool { return slices.Contains(uids, uid) })
	if len(kept) == len(before) {
		return false
	}
	delete(nodeClaim.Annotations, PlannedPodsAnnotationKey)
	if len(kept) > 0 {
		AddPlannedPods(nodeClaim, kept...)
	}
	return true
}

// PlannedRequestsAnnotationKey records, on a NodeClaim, the resources its planned pods and
// their daemons request together (a JSON resource list), once pods were planned onto it after
// it was created. A NodeClaim's spec is immutable, so its spec requests count only the pods it
// was made for; the launch must hold the pods added while it launched too (LaunchRequests).
const PlannedRequestsAnnotationKey = "joinery.dev/planned-requests"

// PlannedRequests returns what nodeClaim's PlannedRequestsAnnotationKey records: nil when it
// has none, an error naming the annotation when it is not a resource list.
func PlannedRequests(nodeClaim *karpv1.NodeClaim) (corev1.ResourceList, error) {
	value, ok := nodeClaim.Annotations[PlannedRequestsAnnotationKey]
	if !ok {
		return nil, nil
	}
	var list corev1.ResourceList
	if err := json.Unmarshal([]byte(value), &list); err != nil {
		return nil, fmt.Errorf("annotation %s of NodeClaim %s: %w", PlannedRequestsAnnotationKey, nodeClaim.Name, err)
	}
	return list, nil
}

// RaisePlannedRequests raises nodeClaim's PlannedRequestsAnnotationKey to at least requests,
// resource by resource (it never lowers one: another writer's pods still count), and reports
// whether it changed. A corrupt annotation is replaced.
func RaisePlannedRequests(nodeClaim *karpv1.NodeClaim, requests corev1.ResourceList) bool {
	current, err := PlannedRequests(nodeClaim)
	if err != nil {
		current = nil
	}
	data, err := json.Marshal(maxResources(current, requests))
	if err != nil {
		return false // a resource list always marshals
	}
	if nodeClaim.Annotations == nil {
		nodeClaim.Annotations = map[string]string{}
	}
	if nodeClaim.Annotations[PlannedRequestsAnnotationKey] == string(data) {
		return false
	}
	nodeClaim.Annotations[PlannedRequestsAnnotationKey] = string(data)
	return true
}

// LaunchRequests is what nodeClaim's launch must hold: its spec's requests, raised to the
// requests of the pods planned onto it while it launched (PlannedRequestsAnnotationKey). The
// error, for a corrupt annotation, comes with the spec's requests.
func LaunchRequests(nodeClaim *karpv1.NodeClaim) (corev1.ResourceList, error) {
	planned, err := PlannedRequests(nodeClaim)
	return maxResources(nodeClaim.Spec.Resources.Requests, planned), err
}

// maxResources is, per resource, the larger of a and b.
func maxResources(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, list := range []corev1.ResourceList{a, b} {
		for name, q := range list {
			if have, ok := out[name]; !ok || q.Cmp(have) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	return out
}
