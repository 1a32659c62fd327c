package plugin

import (
	"context"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// missingReplicaPods returns virtual pods for the replicas that the ReplicaSets of the batch's
// pods will create but have not created yet, at most limit in all (planMissingReplicas). A
// ReplicaSet creates its pods in growing bursts over many seconds; planned with the first of
// them, the rest get capacity in the same solve instead of in later batches that each buy
// small NodeClaims beside the first batch's. The real replicas that come later are planned
// like any pod (the solver places the batch's real pods first, onto the launching NodeClaims
// bought for them), and their Filters decide exactly as before.
func (p *Plugin) missingReplicaPods(ctx context.Context, pods []*corev1.Pod, limit int) []*corev1.Pod {
	if p.replicaSets == nil || limit <= 0 {
		return nil
	}
	workloads := p.missingReplicas(pods)
	virtual := buffer.MissingReplicas(workloads, limit)
	missingReplicas.WithLabelValues(p.profile).Set(float64(len(virtual)))
	if len(virtual) > 0 {
		var names []string
		want := 0
		for _, w := range workloads {
			names = append(names, w.Namespace+"/"+w.Ref.Name)
			want += int(w.Missing)
		}
		klog.FromContext(ctx).Info("planning replicas not created yet", "ReplicaSets", strings.Join(names, ","), "missing", want, "planned", len(virtual), "limit", limit)
	}
	return virtual
}

// missingReplicas returns the ReplicaSets that control pods of the batch and want more
// replicas than they have, by namespace and name. A ReplicaSet being deleted, or whose last
// creations failed (ReplicaFailure: a quota or a webhook refused them), is left out: its
// missing replicas may never come.
func (p *Plugin) missingReplicas(pods []*corev1.Pod) []buffer.Workload {
	seen := map[types.UID]bool{}
	var out []buffer.Workload
	for _, pod := range pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil || ref.Kind != "ReplicaSet" || ref.APIVersion != appsv1.SchemeGroupVersion.String() || seen[ref.UID] {
			continue
		}
		seen[ref.UID] = true
		rs, err := p.replicaSets.ReplicaSets(pod.Namespace).Get(ref.Name)
		if err != nil || rs.UID != ref.UID || rs.DeletionTimestamp != nil || rs.Spec.Replicas == nil || replicaFailure(rs) {
			continue
		}
		missing := *rs.Spec.Replicas - p.activeReplicas(rs)
		if missing <= 0 {
			continue
		}
		out = append(out, buffer.Workload{Ref: *ref, Namespace: rs.Namespace, Template: &rs.Spec.Template, Missing: missing})
	}
	slices.SortFunc(out, func(a, b buffer.Workload) int {
		return strings.Compare(a.Namespace+"/"+a.Ref.Name, b.Namespace+"/"+b.Ref.Name)
	})
	return out
}

// activeReplicas counts rs's pods as the ReplicaSet controller does: not being deleted, not
// finished (it replaces those).
func (p *Plugin) activeReplicas(rs *appsv1.ReplicaSet) int32 {
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		selector = labels.Everything()
	}
	list, err := p.pods.Pods(rs.Namespace).List(selector)
	if err != nil {
		return 0
	}
	var n int32
	for _, pod := range list {
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && ref.UID == rs.UID && pod.DeletionTimestamp == nil && !scheduling.PodFinished(pod) {
			n++
		}
	}
	return n
}

func replicaFailure(rs *appsv1.ReplicaSet) bool {
	for _, c := range rs.Status.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
