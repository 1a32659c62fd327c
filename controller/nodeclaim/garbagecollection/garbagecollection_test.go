package garbagecollection

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/controller/nodeclaim/internal/fixtures"
)

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

const gracePeriod = 30 * time.Second

type harness struct {
	client     client.Client
	provider   *fixtures.Provider
	clock      *clocktesting.FakeClock
	events     *events.FakeRecorder
	controller *Controller
}

func newHarness(t *testing.T, objs ...client.Object) *harness {
	t.Helper()
	c := fixtures.NewClient(t, objs...)
	h := &harness{
		client:   c,
		provider: fixtures.NewProvider(t, c),
		clock:    clocktesting.NewFakeClock(epoch),
		events:   events.NewFakeRecorder(100),
	}
	h.controller = New(c, h.provider, h.events, Options{GracePeriod: gracePeriod, Clock: h.clock})
	return h
}

// kwokNode is an instance as the kwok provider sees one, created age before epoch; nodePool
// labels it as joinery's when not empty.
func kwokNode(name, nodePool string, age time.Duration) *corev1.Node {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Annotations:       map[string]string{kwok.KwokNodeAnnotation: kwok.KwokNodeAnnotationValue},
			Labels:            map[string]string{corev1.LabelHostname: name},
			CreationTimestamp: metav1.NewTime(epoch.Add(-age)),
		},
		Spec: corev1.NodeSpec{ProviderID: kwok.ProviderIDPrefix + name},
	}
	if nodePool != "" {
		node.Labels[karpv1.NodePoolLabelKey] = nodePool
	}
	return node
}

// launchedNodeClaim is a NodeClaim created age before epoch, launched as providerID.
func launchedNodeClaim(name, providerID string, age time.Duration) *karpv1.NodeClaim {
	nc := fixtures.NodeClaim(name)
	nc.CreationTimestamp = metav1.NewTime(epoch.Add(-age))
	nc.Status.ProviderID = providerID
	nc.Status.Conditions = []metav1.Condition{{
		Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: karpv1.ConditionTypeLaunched,
		LastTransitionTime: metav1.NewTime(epoch.Add(-age)),
	}}
	return nc
}

func exists(t *testing.T, c client.Client, obj client.Object) bool {
	t.Helper()
	err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("getting %T %s: %v", obj, obj.GetName(), err)
	}
	return true
}

func TestCollectLeakedInstances(t *testing.T) {
	tests := []struct {
		name       string
		node       *corev1.Node
		claims     []client.Object
		wantKept   bool
		wantEvents int
	}{
		{name: "nodepool instance without nodeclaim past grace is terminated", node: kwokNode("leaked", "default", time.Minute), wantEvents: 1},
		{name: "exactly at grace is terminated", node: kwokNode("leaked", "default", gracePeriod), wantEvents: 1},
		{name: "young instance is kept", node: kwokNode("young", "default", gracePeriod-time.Second), wantKept: true},
		{name: "instance without nodepool label is kept", node: kwokNode("by-hand", "", time.Hour), wantKept: true},
		{
			name:     "instance whose provider ID a nodeclaim has is kept",
			node:     kwokNode("claimed", "default", time.Hour),
			claims:   []client.Object{launchedNodeClaim("other-name", kwok.ProviderIDPrefix+"claimed", time.Hour)},
			wantKept: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, append([]client.Object{tt.node}, tt.claims...)...)
			if err := h.controller.Collect(context.Background()); err != nil {
				t.Fatalf("Collect: %v", err)
			}
			if kept := exists(t, h.client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tt.node.Name}}); kept != tt.wantKept {
				t.Errorf("node kept = %t, want %t", kept, tt.wantKept)
			}
			if got := fixtures.Drain(h.events.Events); len(got) != tt.wantEvents {
				t.Errorf("events = %q, want %d", got, tt.wantEvents)
			}
		})
	}
}

func TestCollectLeakedInstanceDeleteFailure(t *testing.T) {
	tests := []struct {
		name      string
		deleteErr error
		wantErr   bool
	}{
		{name: "not found means done", deleteErr: cloudprovider.NewNodeClaimNotFoundError(errors.New("gone"))},
		{name: "other errors are returned", deleteErr: fixtures.ErrBoom, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, kwokNode("leaked", "default", time.Hour))
			h.provider.DeleteErr = tt.deleteErr
			err := h.controller.Collect(context.Background())
			if (err != nil) != tt.wantErr || (tt.wantErr && !errors.Is(err, fixtures.ErrBoom)) {
				t.Fatalf("Collect error = %v, want error %t", err, tt.wantErr)
			}
			if h.provider.Deletes != 1 {
				t.Errorf("Delete calls = %d, want 1", h.provider.Deletes)
			}
		})
	}
}

func TestCollectOrphanedNodeClaims(t *testing.T) {
	deleting := launchedNodeClaim("deleting", kwok.ProviderIDPrefix+"deleting", time.Hour)
	deleting.DeletionTimestamp = &metav1.Time{Time: epoch}
	deleting.Finalizers = []string{karpv1.TerminationFinalizer}
	notLaunched := launchedNodeClaim("not-launched", kwok.ProviderIDPrefix+"not-launched", time.Hour)
	notLaunched.Status.Conditions[0].Status = metav1.ConditionUnknown

	// Created an hour ago, launched only now: the grace period counts from the launch.
	lateLaunch := launchedNodeClaim("late-launch", kwok.ProviderIDPrefix+"late-launch", time.Hour)
	lateLaunch.Status.Conditions[0].LastTransitionTime = metav1.NewTime(epoch.Add(-gracePeriod + time.Second))

	tests := []struct {
		name        string
		nodeClaim   *karpv1.NodeClaim
		node        *corev1.Node
		wantDeleted bool
	}{
		{name: "instance gone deletes the nodeclaim", nodeClaim: launchedNodeClaim("gone", kwok.ProviderIDPrefix+"gone", time.Hour), wantDeleted: true},
		{name: "nodeclaim launched within the grace period is kept, however old", nodeClaim: lateLaunch},
		{
			name:      "healthy nodeclaim is kept",
			nodeClaim: launchedNodeClaim("healthy", kwok.ProviderIDPrefix+"healthy", time.Hour),
			node:      kwokNode("healthy", "default", time.Hour),
		},
		{name: "young nodeclaim is kept", nodeClaim: launchedNodeClaim("young", kwok.ProviderIDPrefix+"young", gracePeriod-time.Second)},
		{name: "nodeclaim being deleted is left to termination", nodeClaim: deleting},
		{name: "nodeclaim not launched is kept", nodeClaim: notLaunched},
		{name: "nodeclaim without provider ID is kept", nodeClaim: launchedNodeClaim("no-id", "", time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []client.Object{tt.nodeClaim}
			if tt.node != nil {
				objs = append(objs, tt.node)
			}
			h := newHarness(t, objs...)
			// One sweep that misses the instance is not enough: the cloud's listing may lag.
			if err := h.controller.Collect(context.Background()); err != nil {
				t.Fatalf("Collect: %v", err)
			}
			nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: tt.nodeClaim.Name}}
			if exists(t, h.client, nc) && nc.DeletionTimestamp != nil && tt.nodeClaim.DeletionTimestamp == nil {
				t.Fatal("nodeclaim deleted after one sweep missed its instance")
			}
			if err := h.controller.Collect(context.Background()); err != nil {
				t.Fatalf("Collect: %v", err)
			}
			gone := !exists(t, h.client, nc) || nc.DeletionTimestamp != nil && tt.nodeClaim.DeletionTimestamp == nil
			if gone != tt.wantDeleted {
				t.Errorf("nodeclaim deleted = %t, want %t", gone, tt.wantDeleted)
			}
			got := fixtures.Drain(h.events.Events)
			if tt.wantDeleted && (len(got) != 1 || !strings.Contains(got[0], reasonInstanceGone)) {
				t.Errorf("events = %q, want one %s", got, reasonInstanceGone)
			}
			if !tt.wantDeleted && len(got) != 0 {
				t.Errorf("events = %q, want none", got)
			}
			if tt.node != nil && !exists(t, h.client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tt.node.Name}}) {
				t.Errorf("node %s of a healthy nodeclaim was deleted", tt.node.Name)
			}
		})
	}
}

func TestStartCollectsEveryInterval(t *testing.T) {
	h := newHarness(t, kwokNode("leaked", "default", time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.controller.Start(ctx) }()

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "leaked"}}
	if !exists(t, h.client, node) {
		t.Fatal("node collected before the first tick")
	}
	// Wait until the ticker is registered, then fire it.
	deadline := time.Now().Add(5 * time.Second)
	for !h.clock.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("Start registered no ticker")
		}
		time.Sleep(time.Millisecond)
	}
	h.clock.Step(DefaultInterval)
	for exists(t, h.client, node) {
		if time.Now().After(deadline) {
			t.Fatal("leaked node not collected after one interval")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start returned %v", err)
	}
	if !h.controller.NeedLeaderElection() {
		t.Error("NeedLeaderElection = false, want true")
	}
}

// cloudNode is a Node of an instance the kwok provider does not list (as a Node of another
// cloud would be), created age before epoch.
func cloudNode(name string, age time.Duration, mutate func(*corev1.Node)) *corev1.Node {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			UID:               types.UID("uid-" + name),
			Labels:            map[string]string{karpv1.NodePoolLabelKey: "default"},
			CreationTimestamp: metav1.NewTime(epoch.Add(-age)),
		},
		Spec: corev1.NodeSpec{ProviderID: "aws:///test-zone-a/i-" + name},
	}
	if mutate != nil {
		mutate(node)
	}
	return node
}

func TestCollectOrphanedNodes(t *testing.T) {
	withFinalizer := func(n *corev1.Node) { n.Finalizers = []string{karpv1.TerminationFinalizer} }
	tests := []struct {
		name        string
		node        *corev1.Node
		claims      []client.Object
		wantDeleted bool
		// wantDeletes is the number of instance terminations the provider sees.
		wantDeletes int
	}{
		{name: "nodepool node without nodeclaim is deleted", node: cloudNode("orphan", time.Hour, nil), wantDeleted: true},
		{
			name: "finalizer alone marks the node as joinery's",
			node: cloudNode("orphan", time.Hour, func(n *corev1.Node) {
				delete(n.Labels, karpv1.NodePoolLabelKey)
				withFinalizer(n)
			}),
			wantDeleted: true,
		},
		{name: "young node is kept", node: cloudNode("young", gracePeriod-time.Second, nil)},
		{name: "node of someone else is kept", node: cloudNode("theirs", time.Hour, func(n *corev1.Node) { delete(n.Labels, karpv1.NodePoolLabelKey) })},
		{name: "node without provider ID is kept", node: cloudNode("no-id", time.Hour, func(n *corev1.Node) { n.Spec.ProviderID = "" })},
		{
			name: "claimed node is kept",
			node: cloudNode("claimed", time.Hour, nil),
			// Young, so the kwok provider not knowing its instance does not get it collected.
			claims: []client.Object{launchedNodeClaim("claimed", "aws:///test-zone-a/i-claimed", time.Second)},
		},
		{
			name:        "leaked kwok instance is collected once, as an instance",
			node:        kwokNode("leaked", "default", time.Hour),
			wantDeleted: true,
			wantDeletes: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, append([]client.Object{tt.node}, tt.claims...)...)
			if err := h.controller.Collect(context.Background()); err != nil {
				t.Fatalf("Collect: %v", err)
			}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tt.node.Name}}
			deleted := !exists(t, h.client, node) || node.DeletionTimestamp != nil
			if deleted != tt.wantDeleted {
				t.Errorf("node deleted = %t, want %t", deleted, tt.wantDeleted)
			}
			if h.provider.Deletes != tt.wantDeletes {
				t.Errorf("instance deletes = %d, want %d", h.provider.Deletes, tt.wantDeletes)
			}
			events := fixtures.Drain(h.events.Events)
			if tt.wantDeleted && (len(events) != 1 || !strings.Contains(events[0], "GarbageCollected")) {
				t.Errorf("events = %q, want one GarbageCollected", events)
			}
			if !tt.wantDeleted && len(events) != 0 {
				t.Errorf("events = %q, want none", events)
			}
		})
	}
}

// listCounter is a fixtures.Provider that counts List and Get calls and can hide instances
// from List, as an eventually consistent cloud listing does.
type listCounter struct {
	*fixtures.Provider
	lists, gets int
	hidden      map[string]bool
}

func (p *listCounter) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	p.lists++
	all, err := p.Provider.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []*karpv1.NodeClaim
	for _, instance := range all {
		if !p.hidden[instance.Status.ProviderID] {
			out = append(out, instance)
		}
	}
	return out, nil
}

func (p *listCounter) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	p.gets++
	return p.Provider.Get(ctx, providerID)
}

// TestCollectOnceListedTwiceMissed (issue 17, defect 8): a sweep lists the cloud once, asks
// for no instance one by one, and a NodeClaim is collected only when two sweeps in a row miss
// its instance; a listing that shows it again resets the count.
func TestCollectOnceListedTwiceMissed(t *testing.T) {
	claims := []client.Object{
		launchedNodeClaim("a", kwok.ProviderIDPrefix+"a", time.Hour), kwokNode("a", "default", time.Hour),
		launchedNodeClaim("b", kwok.ProviderIDPrefix+"b", time.Hour), kwokNode("b", "default", time.Hour),
		launchedNodeClaim("c", kwok.ProviderIDPrefix+"c", time.Hour), kwokNode("c", "default", time.Hour),
	}
	h := newHarness(t, claims...)
	provider := &listCounter{Provider: h.provider, hidden: map[string]bool{kwok.ProviderIDPrefix + "a": true}}
	h.controller = New(h.client, provider, h.events, Options{GracePeriod: gracePeriod, Clock: h.clock})
	ctx := context.Background()
	deleted := func(name string) bool {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		return !exists(t, h.client, nc) || nc.DeletionTimestamp != nil
	}

	// Sweep 1 misses a; sweep 2 shows it again (the listing lagged); sweeps 3 and 4 miss it.
	for sweep, want := range []bool{false, false, false, true} {
		provider.hidden[kwok.ProviderIDPrefix+"a"] = sweep != 1
		if err := h.controller.Collect(ctx); err != nil {
			t.Fatalf("sweep %d: %v", sweep+1, err)
		}
		if got := deleted("a"); got != want {
			t.Errorf("after sweep %d nodeclaim a deleted = %v, want %v", sweep+1, got, want)
		}
		if deleted("b") || deleted("c") {
			t.Errorf("after sweep %d a nodeclaim whose instance is listed was deleted", sweep+1)
		}
	}
	if provider.lists != 4 || provider.gets != 0 {
		t.Errorf("4 sweeps made %d List and %d Get calls, want 4 and 0", provider.lists, provider.gets)
	}
}
