package plugin

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// volumeHandler plans the pods the last plans refused again when a PersistentVolume appears,
// or its phase or claim changes, for refused pods that mount a claim. VolumeBinding reads
// the PV of a bound claim, and the PVs a waiting claim could take, from the PV informer,
// which may show a PV after the claim informer showed the claim bound to it: the batch the
// claim triggered then refused the pod again.
func (p *Plugin) volumeHandler(ctx context.Context) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if _, ok := obj.(*corev1.PersistentVolume); ok && !isInInitialList {
				p.replanRefused(ctx, "PersistentVolume created", p.mountsAClaim)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*corev1.PersistentVolume)
			updated, ok2 := newObj.(*corev1.PersistentVolume)
			if ok1 && ok2 && volumeMayNowServe(old, updated) {
				p.replanRefused(ctx, "PersistentVolume changed", p.mountsAClaim)
			}
		},
	}
}

// volumeMayNowServe reports whether a PV update can let a claim bind or be used: its phase
// or its claim reference changed.
func volumeMayNowServe(old, updated *corev1.PersistentVolume) bool {
	if old.Status.Phase != updated.Status.Phase {
		return true
	}
	if (old.Spec.ClaimRef == nil) != (updated.Spec.ClaimRef == nil) {
		return true
	}
	return old.Spec.ClaimRef != nil && old.Spec.ClaimRef.UID != updated.Spec.ClaimRef.UID
}

// mountsAClaim reports whether the pod uid mounts a PersistentVolumeClaim, directly or
// through a generic ephemeral volume.
func (p *Plugin) mountsAClaim(uid types.UID) bool {
	ref, ok := p.refs[uid]
	if !ok || p.pods == nil {
		return false
	}
	pod, err := p.pods.Pods(ref.Namespace).Get(ref.Name)
	if err != nil {
		return false
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}
