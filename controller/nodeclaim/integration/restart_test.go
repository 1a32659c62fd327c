package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
)

// awaitRegistered waits for nc's Registered condition and returns nc as stored.
func awaitRegistered(t *testing.T, nc *karpv1.NodeClaim) {
	t.Helper()
	await(t, "nodeclaim "+nc.Name+" registered", func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeRegistered), nil
	})
}

// launchedOnce checks that nc has exactly one instance, the Node first launched for it.
func launchedOnce(t *testing.T, nc *karpv1.NodeClaim, first *corev1.Node) {
	t.Helper()
	nodes := nodesWithProviderID(t, kwok.ProviderIDPrefix+nc.Name)
	if len(nodes) != 1 {
		t.Fatalf("%d nodes with provider ID %s, want 1", len(nodes), kwok.ProviderIDPrefix+nc.Name)
	}
	if nodes[0].UID != first.UID {
		t.Errorf("node %s was launched again: UID %s, first launched as %s", nodes[0].Name, nodes[0].UID, first.UID)
	}
	if nc.Status.ProviderID != nodes[0].Spec.ProviderID || nc.Status.NodeName != nodes[0].Name {
		t.Errorf("nodeclaim status names %s/%s, want the node %s", nc.Status.ProviderID, nc.Status.NodeName, nodes[0].Name)
	}
	if !slices.Contains(nodes[0].Finalizers, karpv1.TerminationFinalizer) || nodes[0].Labels[karpv1.NodeRegisteredLabelKey] != "true" {
		t.Errorf("node %s not registered: finalizers %v, labels %v", nodes[0].Name, nodes[0].Finalizers, nodes[0].Labels)
	}
}

// TestRestartDuringLaunch: the controller dies right after the cloud launched the instance but
// before the NodeClaim says so, or right before it registers the node. The next run finishes
// the launch with the same instance.
func TestRestartDuringLaunch(t *testing.T) {
	tests := []struct {
		name  string
		point func(call) when
	}{
		{
			name: "after cloudprovider.Create, before the status write",
			point: func(c call) when {
				if c.verb == "cloud-create" {
					return after
				}
				return never
			},
		},
		{
			name: "after Launched, before Registered",
			point: func(c call) when {
				if _, ok := c.obj.(*corev1.Node); ok && c.verb == "patch" && c.subresource == "" {
					return before // the registration's write to the node
				}
				return never
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class := newNodeClass(t)
			crash := newCrasher(tt.point)
			run := startControllers(t, crash)
			nc := newNodeClaim(t, class)
			awaitCrash(t, run, crash)

			first := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}}
			get(t, first)
			t.Cleanup(func() { forceDelete(first) })
			if first.Labels[karpv1.NodeRegisteredLabelKey] == "true" {
				t.Fatal("the node registered before the crash point")
			}

			startControllers(t, nil)
			awaitRegistered(t, nc)
			launchedOnce(t, nc, first)
		})
	}
}

// registeredNode starts the controllers with crash, launches a NodeClaim and waits until its
// node is registered; it returns both.
func registeredNode(t *testing.T, crash *crasher) (*controllers, *karpv1.NodeClaim, *corev1.Node) {
	t.Helper()
	class := newNodeClass(t)
	run := startControllers(t, crash)
	nc := newNodeClaim(t, class)
	awaitRegistered(t, nc)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Status.NodeName}}
	get(t, node)
	t.Cleanup(func() { forceDelete(node) })
	return run, nc, node
}

// boundPod creates a pod on node that a drain evicts; with no kubelet, a zero grace period
// lets the API server delete it at once.
func boundPod(t *testing.T, name, node string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	create(t, pod)
	return pod
}

// TestRestartDuringTermination: the controller dies in the middle of the drain, or after the
// cloud began terminating the instance but before the finalizers came off. The next run
// finishes: every pod evicted, the instance gone, no finalizer left.
func TestRestartDuringTermination(t *testing.T) {
	tests := []struct {
		name  string
		point func(call) when
		// check looks at what the crash left, before the restart.
		check func(t *testing.T, nc *karpv1.NodeClaim, node *corev1.Node, pods []*corev1.Pod)
	}{
		{
			name: "mid-drain, after the first eviction",
			point: func(c call) when {
				if c.subresource == "eviction" {
					return after
				}
				return never
			},
			check: func(t *testing.T, _ *karpv1.NodeClaim, node *corev1.Node, pods []*corev1.Pod) {
				left := 0
				for _, p := range pods {
					if exists(t, p) {
						left++
					}
				}
				if left != len(pods)-1 {
					t.Errorf("%d of %d pods left after one eviction", left, len(pods))
				}
				if !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey }) {
					t.Errorf("draining node lacks the disrupted taint: %v", node.Spec.Taints)
				}
			},
		},
		{
			name: "after cloudprovider.Delete, before the finalizers came off",
			point: func(c call) when {
				if c.verb == "cloud-delete" {
					return after
				}
				return never
			},
			check: func(t *testing.T, nc *karpv1.NodeClaim, node *corev1.Node, _ []*corev1.Pod) {
				if node.DeletionTimestamp == nil || !slices.Contains(node.Finalizers, karpv1.TerminationFinalizer) {
					t.Errorf("node after the crash: deleting %v, finalizers %v", node.DeletionTimestamp, node.Finalizers)
				}
				get(t, nc)
				if !slices.Contains(nc.Finalizers, karpv1.TerminationFinalizer) {
					t.Errorf("nodeclaim lost its finalizer before the instance was gone: %v", nc.Finalizers)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crash := newCrasher(tt.point)
			run, nc, node := registeredNode(t, crash)
			pods := []*corev1.Pod{boundPod(t, nc.Name+"-a", node.Name), boundPod(t, nc.Name+"-b", node.Name)}
			if err := admin.Delete(t.Context(), nc); err != nil {
				t.Fatal(err)
			}
			awaitCrash(t, run, crash)
			get(t, node)
			tt.check(t, nc, node, pods)

			startControllers(t, nil)
			for _, obj := range []client.Object{node, nc} {
				awaitGone(t, obj)
			}
			for _, p := range pods {
				if exists(t, p) {
					t.Errorf("pod %s survived the drain", p.Name)
				}
			}
			if nodes := nodesWithProviderID(t, kwok.ProviderIDPrefix+nc.Name); len(nodes) != 0 {
				t.Errorf("instance leaked: %d nodes with provider ID %s", len(nodes), kwok.ProviderIDPrefix+nc.Name)
			}
		})
	}
}

// exists reports whether obj is still stored.
func exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := admin.Get(t.Context(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(fmt.Errorf("getting %s: %w", obj.GetName(), err))
	}
	return err == nil
}
