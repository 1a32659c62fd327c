package termination

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/nodeclaim/internal/fixtures"
)

type harness struct {
	client   client.Client
	provider *fixtures.Provider
	events   *events.FakeRecorder
	claims   *NodeClaimController
	nodes    *NodeController
}

// newHarness launches a NodeClaim through the kwok provider and links its Node the way the
// lifecycle controller does (finalizers on both, same provider ID).
// funcs, when not nil, intercepts the client's calls; opts configure the NodeController.
func newHarness(t *testing.T, funcs *interceptor.Funcs, opts ...NodeOption) (*harness, *karpv1.NodeClaim, *corev1.Node) {
	t.Helper()
	ctx := context.Background()
	nc := fixtures.NodeClaim("default-xyz")
	nc.Finalizers = []string{karpv1.TerminationFinalizer}
	c := newClient(t, funcs, nc)
	h := &harness{client: c, provider: fixtures.NewProvider(t, c), events: events.NewFakeRecorder(50)}
	h.claims = NewNodeClaimController(c, h.provider, h.events)
	h.nodes = NewNodeController(c, h.provider, append([]NodeOption{WithEventRecorder(h.events)}, opts...)...)
	launched, err := h.provider.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	nc.Status = launched.Status
	if err := c.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{}
	node.Name = nc.Name
	fixtures.Get(t, c, node)
	node.Finalizers = []string{karpv1.TerminationFinalizer}
	if err := c.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	return h, nc, node
}

func (h *harness) reconcileClaim(t *testing.T, name string) ctrl.Result {
	t.Helper()
	result, err := h.claims.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: name}})
	if err != nil {
		t.Fatalf("NodeClaim Reconcile: %v", err)
	}
	return result
}

func (h *harness) reconcileNode(t *testing.T, name string) ctrl.Result {
	t.Helper()
	result, err := h.nodes.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: name}})
	if err != nil {
		t.Fatalf("Node Reconcile: %v", err)
	}
	return result
}

func gone(t *testing.T, c client.Client, obj client.Object) bool {
	t.Helper()
	err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return apierrors.IsNotFound(err)
}

func TestDeleteNodeClaim(t *testing.T) {
	h, nc, node := newHarness(t, nil)
	if err := h.client.Delete(context.Background(), nc); err != nil {
		t.Fatal(err)
	}

	// The NodeClaim's finalizer deletes the Node and waits for it.
	if result := h.reconcileClaim(t, nc.Name); result.RequeueAfter == 0 {
		t.Error("no requeue while the node terminates")
	}
	fixtures.Get(t, h.client, node)
	fixtures.Get(t, h.client, nc)
	if node.DeletionTimestamp == nil || nc.DeletionTimestamp == nil || len(nc.Finalizers) == 0 {
		t.Fatalf("after the first step: node deleting %v, nodeclaim finalizers %v", node.DeletionTimestamp, nc.Finalizers)
	}

	// The Node's finalizer terminates the instance and releases the Node.
	h.reconcileNode(t, node.Name)
	if !gone(t, h.client, node) {
		t.Fatalf("node still exists with finalizers %v", node.Finalizers)
	}

	// The instance is gone: the NodeClaim is released.
	h.reconcileClaim(t, nc.Name)
	if !gone(t, h.client, nc) {
		t.Errorf("nodeclaim still exists with finalizers %v", nc.Finalizers)
	}
	all := fixtures.Drain(h.events.Events)
	if !slices.Contains(all, "Normal Draining Draining node") {
		t.Errorf("no Draining event in %q", all)
	}
	if got := eventsMatching(all, "Terminated"); len(got) != 1 || got[0] != "Normal Terminated Instance kwok://default-xyz terminated" {
		t.Errorf("events = %q", got)
	}
	// Repeating a step after the fact is harmless.
	h.reconcileClaim(t, nc.Name)
	h.reconcileNode(t, node.Name)
}

func TestDeleteNodeDeletesNodeClaim(t *testing.T) {
	h, nc, node := newHarness(t, nil)
	if err := h.client.Delete(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	h.reconcileNode(t, node.Name)
	if !gone(t, h.client, node) {
		t.Error("node still exists")
	}
	fixtures.Get(t, h.client, nc)
	if nc.DeletionTimestamp == nil {
		t.Fatal("deleting the node did not delete its nodeclaim")
	}
	h.reconcileClaim(t, nc.Name)
	if !gone(t, h.client, nc) {
		t.Error("nodeclaim still exists")
	}
}

func TestNodeClaimNeverLaunched(t *testing.T) {
	ctx := context.Background()
	nc := fixtures.NodeClaim("default-new")
	nc.Finalizers = []string{karpv1.TerminationFinalizer}
	c := newClient(t, nil, nc)
	p := fixtures.NewProvider(t, c)
	claims := NewNodeClaimController(c, p, events.NewFakeRecorder(10))
	if err := c.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if _, err := claims.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: nc.Name}}); err != nil {
		t.Fatal(err)
	}
	if !gone(t, c, nc) {
		t.Error("nodeclaim without an instance kept its finalizer")
	}
	if p.Deletes != 0 {
		t.Errorf("provider Delete called %d times for a NodeClaim that launched nothing", p.Deletes)
	}
}

func TestInstanceTerminationFailureKeepsFinalizers(t *testing.T) {
	ctx := context.Background()
	h, nc, node := newHarness(t, nil)
	h.provider.DeleteErr = fixtures.ErrBoom
	if err := h.client.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	if _, err := h.nodes.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: node.Name}}); err == nil {
		t.Error("Node Reconcile succeeded while the instance could not be terminated")
	}
	fixtures.Get(t, h.client, node)
	if !slices.Contains(node.Finalizers, karpv1.TerminationFinalizer) {
		t.Error("node released although its instance was not terminated")
	}
	fixtures.Get(t, h.client, nc)
	// The drain and the volumes are done and the termination was asked for: the NodeClaim says so.
	for _, ct := range []string{karpv1.ConditionTypeDrained, karpv1.ConditionTypeVolumesDetached, karpv1.ConditionTypeInstanceTerminating} {
		if c := meta.FindStatusCondition(nc.Status.Conditions, ct); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("%s condition = %+v, want True", ct, c)
		}
	}
	if _, err := h.claims.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: nc.Name}}); err != nil {
		t.Fatal(err) // waits for the node: no error
	}
	fixtures.Get(t, h.client, nc)
	if !slices.Contains(nc.Finalizers, karpv1.TerminationFinalizer) {
		t.Error("nodeclaim released while its node remains")
	}

	// The provider recovers: everything completes.
	h.provider.DeleteErr = nil
	h.reconcileNode(t, node.Name)
	h.reconcileClaim(t, nc.Name)
	if !gone(t, h.client, node) || !gone(t, h.client, nc) {
		t.Error("node or nodeclaim left after the provider recovered")
	}
}
