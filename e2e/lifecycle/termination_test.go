package lifecycle

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/controller/nodeclaim/termination"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// readyNodeClaim creates a NodePool and a NodeClaim of it and waits until the NodeClaim is
// Ready; it returns the NodeClaim's name, which its Node shares.
func readyNodeClaim(t *testing.T, prefix string) string {
	t.Helper()
	name := framework.UniqueName(prefix)
	createNodePool(t, name, "")
	env.Create(t, framework.NodeClaims, toJSON(t, nodeClaim(t, name, name)))
	env.AwaitNodeClaims(t, "karpenter.sh/nodepool="+name, 1, readyTimeout, framework.NodeClaimCondition("Ready", "True"))
	env.AwaitNodeReady(t, name, readyTimeout)
	return name
}

// TestTerminationWaitsForVolumeDetachment: deleting a NodeClaim whose node still has a volume
// attached drains the node and then holds it until the VolumeAttachment goes. No
// attach-detach controller runs for kwok nodes, so the test attaches and detaches by hand.
func TestTerminationWaitsForVolumeDetachment(t *testing.T) {
	name := readyNodeClaim(t, "volumes")
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "csi.example.com",
			NodeName: name,
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-" + name)},
		},
	}
	vas := env.Client.StorageV1().VolumeAttachments()
	if _, err := vas.Create(t.Context(), va, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create volume attachment: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		_ = vas.Delete(ctx, name, metav1.DeleteOptions{})
	})

	if err := env.Dynamic.Resource(framework.NodeClaims).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete nodeclaim: %v", err)
	}
	framework.Eventually(t, readyTimeout, "node "+name+" drained", func(ctx context.Context) (bool, error) {
		node, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "karpenter.sh/disrupted" }), nil
	})
	// The termination reaches the attachment and says it waits for it; the node must still be
	// there, finalizer and all, after that.
	framework.Eventually(t, readyTimeout, "AwaitingVolumeDetachment event on node "+name, func(ctx context.Context) (bool, error) {
		list, err := env.Client.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(list.Items, func(ev eventsv1.Event) bool {
			return ev.Regarding.Kind == "Node" && ev.Regarding.Name == name && ev.Reason == termination.EventAwaitingVolumeDetachment
		}), nil
	})
	node, err := env.Client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node terminated while its volume was attached: %v", err)
	}
	if !slices.Contains(node.Finalizers, "karpenter.sh/termination") {
		t.Fatalf("node finalizers %v while its volume is attached", node.Finalizers)
	}

	if err := vas.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete volume attachment: %v", err)
	}
	framework.AwaitGone(t, readyTimeout, "node "+name, func(ctx context.Context) error {
		_, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err
	})
	framework.AwaitGone(t, readyTimeout, "nodeclaim "+name, func(ctx context.Context) error {
		_, err := env.Dynamic.Resource(framework.NodeClaims).Get(ctx, name, metav1.GetOptions{})
		return err
	})
}

// TestNodeLeftWithoutNodeClaimGoes: a NodeClaim removed by force (finalizer stripped) leaves
// its Node behind with the termination finalizer and a do-not-disrupt pod that would hold a
// drain forever. The Node still goes: with no NodeClaim there is nothing to drain for.
func TestNodeLeftWithoutNodeClaimGoes(t *testing.T) {
	name := readyNodeClaim(t, "orphan")
	ns := env.Namespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "precious", Namespace: ns, Annotations: map[string]string{"karpenter.sh/do-not-disrupt": "true"}},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{corev1.LabelHostname: name},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	env.AwaitPodRunning(t, ns, pod.Name, readyTimeout)

	claims := env.Dynamic.Resource(framework.NodeClaims)
	if _, err := claims.Patch(t.Context(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("strip nodeclaim finalizers: %v", err)
	}
	if err := claims.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete nodeclaim: %v", err)
	}
	framework.AwaitGone(t, gcTimeout, "node "+name+" without its nodeclaim", func(ctx context.Context) error {
		_, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err
	})
}
