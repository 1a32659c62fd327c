package plugin

import (
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// jobTrackingFinalizer is on a Job's pods until the Job controller has counted them.
const jobTrackingFinalizer = "batch.kubernetes.io/job-tracking"

// jobReplicas: the pods a Job will create now, as the Job controller decides: at most
// parallelism active, and no more than the completions still to succeed (a Job without
// completions runs parallelism pods until one succeeds), less the pods active. An Indexed
// Job's replicas are its lowest pending completion indexes, each a replica of its own. A
// Job that is suspended (it creates no pods), finished, being deleted, or managed by
// another controller (spec.managedBy) plans nothing. Pods that failed are planned again:
// the controller replaces them, after its backoff, until the Job fails.
func (p *Plugin) jobReplicas(namespace string, ref *metav1.OwnerReference) (buffer.Workload, bool) {
	job, err := p.workloads.jobs.Jobs(namespace).Get(ref.Name)
	if err != nil || job.UID != ref.UID || job.DeletionTimestamp != nil || ptr.Deref(job.Spec.Suspend, false) || jobFinished(job) ||
		(job.Spec.ManagedBy != nil && *job.Spec.ManagedBy != batchv1.JobControllerName) {
		return buffer.Workload{}, false
	}
	indexed := ptr.Deref(job.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
	// Terminating pods are replaced at once unless the Job waits for them to fail.
	waitTerminating := ptr.Deref(job.Spec.PodReplacementPolicy, batchv1.TerminatingOrFailed) == batchv1.Failed
	// Succeeded pods not in status.succeeded yet: still tracked, or listed as uncounted.
	uncounted := sets.New[types.UID]()
	if u := job.Status.UncountedTerminatedPods; u != nil {
		uncounted.Insert(u.Succeeded...)
	}
	// An Indexed Job does not run again the indexes that succeeded, nor those that failed for
	// good (backoffLimitPerIndex).
	completed := parseIndexes(job.Status.CompletedIndexes)
	if job.Status.FailedIndexes != nil {
		completed = completed.Union(parseIndexes(*job.Status.FailedIndexes))
	}
	active, activeIndexes := 0, sets.New[int]()
	for _, pod := range p.controlledPods(namespace, job.Spec.Selector, job.UID) {
		index, hasIndex := completionIndex(pod)
		switch {
		case pod.Status.Phase == corev1.PodSucceeded:
			if slices.Contains(pod.Finalizers, jobTrackingFinalizer) {
				uncounted.Insert(pod.UID)
			}
			if hasIndex {
				completed.Insert(index)
			}
		case scheduling.PodFinished(pod), pod.DeletionTimestamp != nil && !waitTerminating:
		default:
			active++
			if hasIndex {
				activeIndexes.Insert(index)
			}
		}
	}
	parallelism := int(ptr.Deref(job.Spec.Parallelism, 1))
	w := buffer.Workload{Ref: *ref, Namespace: namespace, Template: &job.Spec.Template}
	if indexed {
		if job.Spec.Completions == nil {
			return buffer.Workload{}, false
		}
		room := parallelism - active
		w.Replicas = []buffer.Replica{}
		for index := 0; index < int(*job.Spec.Completions) && len(w.Replicas) < room; index++ {
			if !completed.Has(index) && !activeIndexes.Has(index) {
				w.Replicas = append(w.Replicas, buffer.Replica{Index: index})
			}
		}
		return w, true
	}
	succeeded := int(job.Status.Succeeded) + uncounted.Len()
	want := parallelism
	switch {
	case job.Spec.Completions != nil:
		want = min(parallelism, int(*job.Spec.Completions)-succeeded)
	case succeeded > 0:
		// A work queue: once a pod succeeded the rest finish and none is added.
		want = 0
	}
	w.Missing = int32(max(want-active, 0))
	return w, true
}

// jobFinished reports whether the Job has finished or is about to (its terminal condition
// is set once its last pods are gone): it creates no more pods.
func jobFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		switch c.Type {
		case batchv1.JobComplete, batchv1.JobFailed, batchv1.JobSuccessCriteriaMet, batchv1.JobFailureTarget:
			if c.Status == corev1.ConditionTrue {
				return true
			}
		}
	}
	return false
}

// completionIndex is an Indexed Job's pod's completion index.
func completionIndex(pod *corev1.Pod) (int, bool) {
	v, ok := pod.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 0
}

// parseIndexes reads a Job's status.completedIndexes ("1,3-5,7"); malformed parts are
// skipped.
func parseIndexes(s string) sets.Set[int] {
	out := sets.New[int]()
	for _, part := range strings.Split(s, ",") {
		from, to, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(from)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(to); err != nil || b < a {
				continue
			}
		}
		for i := a; i <= b; i++ {
			out.Insert(i)
		}
	}
	return out
}
