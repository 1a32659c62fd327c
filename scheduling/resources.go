package scheduling

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodRequests returns what a pod asks of a node, counted as kube-scheduler's NodeResourcesFit
// counts it for a pod not yet bound: the larger of the containers' sum (plus restartable sidecar
// init containers, which keep running) and each init container's peak, pod-level requests where
// the pod sets them (PodLevelResources is on by default in Kubernetes 1.36), plus pod overhead.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// Merge returns the sum of lists, as a new list.
func Merge(lists ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, list := range lists {
		for name, q := range list {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}

// Subtract returns a minus b, as a new list; resources missing from a count as zero, so results
// may be negative (an over-committed node).
func Subtract(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a))
	for name, q := range a {
		out[name] = q.DeepCopy()
	}
	for name, q := range b {
		diff := out[name]
		diff.Sub(q)
		out[name] = diff
	}
	return out
}

// Cmp compares one resource of two lists, missing counting as zero: -1, 0 or 1 as a's quantity
// is less than, equal to or greater than b's.
func Cmp(a, b corev1.ResourceList, name corev1.ResourceName) int {
	qa, qb := a[name], b[name]
	return qa.Cmp(qb)
}

// Fits returns nil when every requested quantity is within what is available (missing counts as
// zero), or an error naming each resource that falls short, sorted by name.
func Fits(requests, available corev1.ResourceList) error {
	for name, q := range requests {
		if exceeds(q, available[name]) {
			return shortfalls(requests, available)
		}
	}
	return nil
}

func exceeds(requested, available resource.Quantity) bool {
	return requested.Cmp(available) > 0
}

// shortfalls is Fits' slow path, deterministic in order.
func shortfalls(requests, available corev1.ResourceList) error {
	var errs []error
	for _, name := range sortedKeys(requests) {
		requested, avail := requests[name], available[name]
		if exceeds(requested, avail) {
			errs = append(errs, fmt.Errorf("resource %s: requested %s, available %s", name, requested.String(), avail.String()))
		}
	}
	return errors.Join(errs...)
}
