package integration

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/nodeclaim/termination"
)

// TestTerminationWaitsForVolumeAttachments: a drained node whose volume is still attached is
// not terminated until its VolumeAttachment is deleted (what the attach-detach controller does
// once the volume is detached); the deletion itself wakes the termination up.
func TestTerminationWaitsForVolumeAttachments(t *testing.T) {
	_, nc, node := registeredNode(t, nil)
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "va-" + node.Name},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "csi.example.com",
			NodeName: node.Name,
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-" + node.Name)},
		},
	}
	create(t, va)
	if err := admin.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	await(t, "node "+node.Name+" drained", func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKey{Name: node.Name}, node); err != nil {
			return false, err
		}
		return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey }), nil
	})
	// The termination reaches the attachment and says it waits for it: the node must still
	// hold its finalizer after that.
	await(t, "AwaitingVolumeDetachment event on node "+node.Name, func(ctx context.Context) (bool, error) {
		list := &eventsv1.EventList{}
		if err := admin.List(ctx, list); err != nil {
			return false, err
		}
		return slices.ContainsFunc(list.Items, func(ev eventsv1.Event) bool {
			return ev.Regarding.Kind == "Node" && ev.Regarding.Name == node.Name && ev.Reason == termination.EventAwaitingVolumeDetachment
		}), nil
	})
	get(t, node)
	if !slices.Contains(node.Finalizers, karpv1.TerminationFinalizer) {
		t.Fatalf("node released while volume attachment %s remains", va.Name)
	}
	// The NodeClaim tells the steps apart through the API server: drained, volumes awaited, the
	// instance not yet asked to terminate.
	await(t, "nodeclaim "+nc.Name+" Drained=True, VolumesDetached=Unknown", func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
			return false, err
		}
		drained := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrained)
		volumes := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeVolumesDetached)
		return drained != nil && drained.Status == metav1.ConditionTrue &&
			volumes != nil && volumes.Status == metav1.ConditionUnknown && volumes.Reason == "AwaitingVolumeDetachment", nil
	})
	if c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeInstanceTerminating); c != nil {
		t.Errorf("InstanceTerminating = %+v before the volumes detached, want none", c)
	}

	if err := admin.Delete(t.Context(), va); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, node)
	awaitGone(t, nc)
}
