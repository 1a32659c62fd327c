package termination

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
)

// VolumeAttachmentNodeNameField indexes VolumeAttachments by spec.nodeName, so a terminating
// node lists only its own attachments.
const VolumeAttachmentNodeNameField = "termination.volumeattachment.spec.nodeName"

// volumeAttachmentNodeName is the VolumeAttachmentNodeNameField indexer.
func volumeAttachmentNodeName(obj client.Object) []string {
	va, ok := obj.(*storagev1.VolumeAttachment)
	if !ok || va.Spec.NodeName == "" {
		return nil
	}
	return []string{va.Spec.NodeName}
}

// volumeDetachPollInterval re-checks a node whose volumes are still attached, in case the
// deletion of a VolumeAttachment is missed.
const volumeDetachPollInterval = 5 * time.Second

// EventAwaitingVolumeDetachment (Karpenter's reason) is recorded on a drained Node each time
// its termination looks at its VolumeAttachments and waits for them.
const EventAwaitingVolumeDetachment = "AwaitingVolumeDetachment"

// awaitVolumeDetachment runs once node is drained, before its instance is terminated: a volume
// detached by the attach-detach controller is released cleanly, while one torn away by the
// instance's termination may take minutes to become attachable elsewhere. It returns 0 once no
// VolumeAttachment on node is left to wait for, or how long to wait before looking again.
//
// Attachments of volumes that only pods staying on the node use (static pods, pods tolerating
// the disrupted taint) are not waited for: those pods are never evicted, so their volumes would
// never detach. (By now every evicted pod is gone, so those are the only pods left.) Pods with
// the do-not-disrupt annotation need no such rule: the drain holds for them until they go or
// the terminationGracePeriod deadline passes, which ends this wait too. Attachments described by
// an inline volume spec rather than a PersistentVolume are always waited for. The wait ends at
// nc's terminationGracePeriod deadline, if it has one.
func (d *drainer) awaitVolumeDetachment(ctx context.Context, node *corev1.Node, nc *karpv1.NodeClaim) (time.Duration, error) {
	now := d.clock.Now()
	deadline, bounded, err := drainDeadline(ctx, d.client, nc, now)
	if err != nil {
		return 0, err
	}
	if bounded && !now.Before(deadline) {
		return 0, nil
	}
	attachments := &storagev1.VolumeAttachmentList{}
	if err := d.client.List(ctx, attachments, client.MatchingFields{VolumeAttachmentNodeNameField: node.Name}); err != nil {
		return 0, fmt.Errorf("listing volume attachments of node %s: %w", node.Name, err)
	}
	if len(attachments.Items) == 0 {
		return 0, nil
	}
	kept, err := d.volumesStayingOn(ctx, node)
	if err != nil {
		return 0, err
	}
	var pending []string
	for i := range attachments.Items {
		pv := attachments.Items[i].Spec.Source.PersistentVolumeName
		if pv != nil && kept.Has(*pv) {
			continue
		}
		pending = append(pending, attachments.Items[i].Name)
	}
	if len(pending) == 0 {
		return 0, nil
	}
	log.FromContext(ctx).Info("waiting for volumes to detach", "volumeattachments", pending)
	d.recorder.Eventf(node, nil, corev1.EventTypeNormal, EventAwaitingVolumeDetachment, "Terminate",
		"Awaiting deletion of bound volumeattachments (%s)", strings.Join(pending, ", "))
	wait := volumeDetachPollInterval
	if bounded {
		wait = min(wait, deadline.Sub(now))
	}
	return wait, nil
}

// volumesStayingOn returns the PersistentVolumes that pods which the drain leaves running on
// node use, through their PersistentVolumeClaims (generic ephemeral volumes included).
func (d *drainer) volumesStayingOn(ctx context.Context, node *corev1.Node) (sets.Set[string], error) {
	pods := &corev1.PodList{}
	if err := d.client.List(ctx, pods, client.MatchingFields{PodNodeNameField: node.Name}); err != nil {
		return nil, fmt.Errorf("listing pods of node %s: %w", node.Name, err)
	}
	volumes := sets.New[string]()
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !staysOnNode(pod) {
			continue
		}
		for _, claim := range claimNames(pod) {
			pvc := &corev1.PersistentVolumeClaim{}
			err := d.client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: claim}, pvc)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("getting claim %s/%s of pod %s: %w", pod.Namespace, claim, pod.Name, err)
			}
			if pvc.Spec.VolumeName != "" {
				volumes.Insert(pvc.Spec.VolumeName)
			}
		}
	}
	return volumes, nil
}

// staysOnNode reports whether pod keeps running through the drain: the drain ignores it and it
// has not finished.
func staysOnNode(pod *corev1.Pod) bool {
	if scheduling.PodFinished(pod) {
		return false
	}
	return drainIgnores(pod)
}

// claimNames lists the PersistentVolumeClaims pod mounts; a generic ephemeral volume's claim is
// named <pod>-<volume>.
func claimNames(pod *corev1.Pod) []string {
	var names []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			names = append(names, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			names = append(names, pod.Name+"-"+v.Name)
		}
	}
	return names
}
