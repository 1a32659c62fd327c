package plugin

import (
	"context"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// workloadListers read the controllers whose missing replicas a batch plans
// (planMissingReplicas), and the claims and classes a StatefulSet's replicas mount.
type workloadListers struct {
	replicaSets  appslisters.ReplicaSetLister
	statefulSets appslisters.StatefulSetLister
	jobs         batchlisters.JobLister
	claims       corelisters.PersistentVolumeClaimLister
	classes      storagelisters.StorageClassLister
}

// missingReplicaPods returns virtual pods for the replicas that the controllers of the
// batch's pods (ReplicaSets, StatefulSets, Jobs) will create but have not created yet, at
// most limit in all (planMissingReplicas). A controller creates a scale-up's pods in bursts
// over many seconds; planned with the first of them, the rest get capacity in the same solve
// instead of in later batches that each buy small NodeClaims beside the first batch's. The
// real replicas that come later are planned like any pod (the solver places the batch's real
// pods first, onto the launching NodeClaims bought for them), and their Filters decide
// exactly as before.
func (p *Plugin) missingReplicaPods(ctx context.Context, pods []*corev1.Pod, limit int) []*corev1.Pod {
	if p.workloads == nil || limit <= 0 {
		return nil
	}
	workloads := p.missingReplicas(pods)
	p.mu.Lock()
	for i := range workloads {
		p.slots.keepFreeSlots(&workloads[i], p.clock.Now())
	}
	p.mu.Unlock()
	virtual := buffer.MissingReplicas(workloads, limit)
	missingReplicas.WithLabelValues(p.profile).Set(float64(len(virtual)))
	if len(virtual) > 0 {
		var names []string
		want := 0
		for _, w := range workloads {
			names = append(names, w.Ref.Kind+"/"+w.Namespace+"/"+w.Ref.Name)
			want += missingCount(w)
		}
		klog.FromContext(ctx).Info("planning replicas not created yet", "workloads", strings.Join(names, ","), "missing", want, "planned", len(virtual), "limit", limit)
	}
	return virtual
}

func missingCount(w buffer.Workload) int {
	if w.Replicas != nil {
		return len(w.Replicas)
	}
	return int(w.Missing)
}

// missingReplicas returns the controllers of the batch's pods that will create more pods
// than exist, by kind, namespace and name. Each kind counts its missing replicas as its
// controller does; a controller being deleted, or that may never create them, is left out.
func (p *Plugin) missingReplicas(pods []*corev1.Pod) []buffer.Workload {
	seen := map[types.UID]bool{}
	var out []buffer.Workload
	for _, pod := range pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil || seen[ref.UID] {
			continue
		}
		seen[ref.UID] = true
		if w, ok := p.workloadOf(pod.Namespace, ref); ok && missingCount(w) > 0 {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b buffer.Workload) int {
		return strings.Compare(a.Ref.Kind+"/"+a.Namespace+"/"+a.Ref.Name, b.Ref.Kind+"/"+b.Namespace+"/"+b.Ref.Name)
	})
	return out
}

// workloadOf reads the controller ref names in namespace and counts its missing replicas as
// that kind's controller does; ok is false for another kind, or one that may never create
// them.
func (p *Plugin) workloadOf(namespace string, ref *metav1.OwnerReference) (buffer.Workload, bool) {
	switch workloadKind(ref) {
	case kindReplicaSet:
		return p.replicaSetReplicas(namespace, ref)
	case kindStatefulSet:
		return p.statefulSetReplicas(namespace, ref)
	case kindJob:
		return p.jobReplicas(namespace, ref)
	}
	return buffer.Workload{}, false
}

// The workload kinds whose missing replicas are planned (workloadKind).
const (
	kindReplicaSet  = "ReplicaSet"
	kindStatefulSet = "StatefulSet"
	kindJob         = "Job"
)

// workloadKind is the kind of the controller ref names when it is one whose replicas the
// plugin plans: kindReplicaSet, kindStatefulSet or kindJob; "" for any other (or nil).
func workloadKind(ref *metav1.OwnerReference) string {
	switch {
	case ref == nil:
	case ref.APIVersion == appsv1.SchemeGroupVersion.String() && (ref.Kind == kindReplicaSet || ref.Kind == kindStatefulSet):
		return ref.Kind
	case ref.APIVersion == batchv1.SchemeGroupVersion.String() && ref.Kind == kindJob:
		return ref.Kind
	}
	return ""
}

// replicaSetReplicas: spec.replicas less the pods that count, as the ReplicaSet controller
// counts them (not being deleted, not finished: it replaces those). A ReplicaSet whose last
// creations failed (ReplicaFailure: a quota or a webhook refused them) is left out.
func (p *Plugin) replicaSetReplicas(namespace string, ref *metav1.OwnerReference) (buffer.Workload, bool) {
	rs, err := p.workloads.replicaSets.ReplicaSets(namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID || rs.DeletionTimestamp != nil || rs.Spec.Replicas == nil || replicaFailure(rs) {
		return buffer.Workload{}, false
	}
	var active int32
	for _, pod := range p.controlledPods(namespace, rs.Spec.Selector, rs.UID) {
		if pod.DeletionTimestamp == nil && !scheduling.PodFinished(pod) {
			active++
		}
	}
	return buffer.Workload{Ref: *ref, Namespace: namespace, Template: &rs.Spec.Template, Missing: *rs.Spec.Replicas - active}, true
}

// desiredReplicas is how many replicas the workload ref names in namespace wants now, read
// from its spec alone (no pods listed: PreFilter asks it): a ReplicaSet's or StatefulSet's
// spec.replicas, a Job's parallelism. ok is false when it cannot be read.
func (p *Plugin) desiredReplicas(namespace string, ref *metav1.OwnerReference) (int32, bool) {
	if p.workloads == nil {
		return 0, false
	}
	switch workloadKind(ref) {
	case kindReplicaSet:
		rs, err := p.workloads.replicaSets.ReplicaSets(namespace).Get(ref.Name)
		if err == nil && rs.UID == ref.UID && rs.Spec.Replicas != nil {
			return *rs.Spec.Replicas, true
		}
	case kindStatefulSet:
		sts, err := p.workloads.statefulSets.StatefulSets(namespace).Get(ref.Name)
		if err == nil && sts.UID == ref.UID && sts.Spec.Replicas != nil {
			return *sts.Spec.Replicas, true
		}
	case kindJob:
		job, err := p.workloads.jobs.Jobs(namespace).Get(ref.Name)
		if err == nil && job.UID == ref.UID {
			return ptr.Deref(job.Spec.Parallelism, 1), true
		}
	}
	return 0, false
}

// controlledPods lists the pods selector selects in namespace whose controller is uid, as
// the informer has them.
func (p *Plugin) controlledPods(namespace string, ls *metav1.LabelSelector, uid types.UID) []*corev1.Pod {
	selector, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		selector = labels.Everything()
	}
	list, err := p.pods.Pods(namespace).List(selector)
	if err != nil {
		return nil
	}
	var out []*corev1.Pod
	for _, pod := range list {
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && ref.UID == uid {
			out = append(out, pod)
		}
	}
	return out
}

func replicaFailure(rs *appsv1.ReplicaSet) bool {
	for _, c := range rs.Status.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
