package interruption

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/internal/awsemulator"
	"github.com/joinery-dev/joinery/simulation"
)

const poolName = "default"

// replacementSimulator stands in for the solver: one new NodeClaim per simulation, planned
// for every candidate pod. It records what the unavailable-offerings record held when it ran.
type replacementSimulator struct {
	mu          sync.Mutex
	unavailable *markLog
	fail        error
	calls       int
	markedFirst [][]cloudprovider.OfferingKey
}

func (s *replacementSimulator) Simulate(_ context.Context, _ *disruption.Cluster, cands []*disruption.Candidate) (*disruption.Simulation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.markedFirst = append(s.markedFirst, s.unavailable.list())
	if s.fail != nil {
		return nil, s.fail
	}
	repl := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
		Name:   "replacement-" + cands[0].NodeClaim.Name,
		Labels: map[string]string{karpv1.NodePoolLabelKey: poolName},
	}}
	out := &disruption.Simulation{Destinations: map[types.UID]string{}, Unschedulable: map[types.UID]string{}}
	for _, c := range cands {
		for _, p := range c.Pods {
			simulation.AddPlannedPods(repl, p.UID)
			out.Destinations[p.UID] = repl.Name
		}
	}
	out.Replacements = []*karpv1.NodeClaim{repl}
	return out, nil
}

// writeLog records, in order, the NodeClaims created and deleted through the client.
type writeLog struct {
	mu     sync.Mutex
	writes []string
}

func (l *writeLog) add(w string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes = append(l.writes, w)
}

func (l *writeLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.writes)
}

// recordWrites logs NodeClaim creates and deletes; deletes fail while failDeletes is set.
func recordWrites(l *writeLog, failDeletes *sync.Map) interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*karpv1.NodeClaim); ok {
				l.add("create " + obj.GetName())
			}
			return c.Create(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if v, _ := failDeletes.Load("fail"); v == true {
				return errors.New("injected: the API server is unavailable")
			}
			if _, ok := obj.(*karpv1.NodeClaim); ok {
				l.add("delete " + obj.GetName())
			}
			return c.Delete(ctx, obj, opts...)
		},
	}
}

// poolObjects are a NodePool owning every NodeClaim of the fixture and one pod on each node.
func poolObjects() []client.Object {
	objs := []client.Object{&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: poolName}}}
	for _, in := range instances {
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-" + in.id, UID: types.UID("uid-" + in.id)},
			Spec:       corev1.PodSpec{NodeName: nodeName(in.id), Containers: []corev1.Container{{Name: "web", Image: "web"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		})
	}
	return objs
}

// inPool puts the fixture's NodeClaims in the NodePool.
func inPool(t *testing.T, kube client.Client) {
	t.Helper()
	for _, in := range instances {
		nc := &karpv1.NodeClaim{}
		if err := kube.Get(context.Background(), client.ObjectKey{Name: claimName(in.id)}, nc); err != nil {
			t.Fatal(err)
		}
		nc.Labels[karpv1.NodePoolLabelKey] = poolName
		if err := kube.Update(context.Background(), nc); err != nil {
			t.Fatal(err)
		}
	}
}

// replacementsFor lists the NodeClaims pre-planned for claim by the interruption controller.
func replacementsFor(t *testing.T, kube client.Client, claim string) []karpv1.NodeClaim {
	t.Helper()
	var list karpv1.NodeClaimList
	if err := kube.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	var out []karpv1.NodeClaim
	for _, nc := range list.Items {
		if nc.Annotations[disruption.ReplacementForAnnotationKey] == disruption.PreplanPrefix+PreplanMethod+"-"+claim {
			out = append(out, nc)
		}
	}
	return out
}

// TestInterruptionPreplansBeforeDeleting: every message that deletes a NodeClaim first
// launches the replacement its node's pods need (the spot offering already marked
// unavailable, so the replacement is planned without it); a rebalance recommendation deletes
// nothing and plans nothing.
func TestInterruptionPreplansBeforeDeleting(t *testing.T) {
	a, b, c := instances[0].id, instances[1].id, instances[2].id
	probe := newFixture(t, interceptor.Funcs{}, Options{}) // only builds message bodies
	tests := []struct {
		name        string
		body        string
		wantPlanned []string                    // instances whose NodeClaims get a replacement, then are deleted
		wantMarked  []cloudprovider.OfferingKey // the record when the replacement was planned
	}{
		{name: "spot interruption", body: probe.srv.SpotInterruptionWarning(a), wantPlanned: []string{a},
			wantMarked: []cloudprovider.OfferingKey{{CapacityType: karpv1.CapacityTypeSpot, InstanceType: "m5.large", Zone: "us-west-2a"}}},
		{name: "scheduled change of two instances", body: probe.srv.ScheduledChange(a, b), wantPlanned: []string{a, b}},
		{name: "stopping", body: probe.srv.InstanceStateChange(b, awsemulator.InstanceStateStopping), wantPlanned: []string{b}},
		{name: "terminating", body: probe.srv.InstanceStateChange(c, awsemulator.InstanceStateShuttingDown), wantPlanned: []string{c}},
		{name: "rebalance recommendation", body: probe.srv.RebalanceRecommendation(c)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writes := &writeLog{}
			f := newFixture(t, recordWrites(writes, &sync.Map{}), Options{}, poolObjects()...)
			inPool(t, f.kube)
			sim := &replacementSimulator{unavailable: f.unavailable}
			f.controller.opts.Preplanner = &disruption.Preplanner{Client: f.kube, Simulator: sim}
			f.send(t, tt.body)
			if err := f.controller.Poll(context.Background()); err != nil {
				t.Fatal(err)
			}

			var want []string
			for _, id := range tt.wantPlanned {
				want = append(want, "create replacement-"+claimName(id), "delete "+claimName(id))
			}
			if got := writes.list(); !slices.Equal(got, want) {
				t.Errorf("nodeclaim writes = %v, want %v", got, want)
			}
			for _, id := range tt.wantPlanned {
				repl := replacementsFor(t, f.kube, claimName(id))
				if len(repl) != 1 {
					t.Fatalf("replacements of %s = %d, want 1", claimName(id), len(repl))
				}
				if got := simulation.PlannedPods(&repl[0]); !slices.Equal(got, []types.UID{types.UID("uid-" + id)}) {
					t.Errorf("replacement of %s is planned for %v, want the pod of its node", claimName(id), got)
				}
			}
			for i, marked := range sim.markedFirst {
				if !slices.Equal(marked, tt.wantMarked) {
					t.Errorf("simulation %d ran with offerings %v marked unavailable, want %v", i, marked, tt.wantMarked)
				}
			}
		})
	}
}

// TestInterruptionPreplanIsIdempotent: a message whose deletion failed is received again; the
// retry finds the replacement launched the first time and launches no second one.
func TestInterruptionPreplanIsIdempotent(t *testing.T) {
	writes := &writeLog{}
	var failDeletes sync.Map
	failDeletes.Store("fail", true)
	f := newFixture(t, recordWrites(writes, &failDeletes), Options{VisibilityTimeout: time.Second, WaitTime: 5 * time.Second}, poolObjects()...)
	inPool(t, f.kube)
	sim := &replacementSimulator{unavailable: f.unavailable}
	f.controller.opts.Preplanner = &disruption.Preplanner{Client: f.kube, Simulator: sim}
	id := instances[0].id
	f.send(t, f.srv.SpotInterruptionWarning(id))

	if err := f.controller.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.deleting(t); len(got) != 0 {
		t.Fatalf("deleting = %v with deletes failing", got)
	}
	failDeletes.Store("fail", false)
	if err := f.controller.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"create replacement-" + claimName(id), "delete " + claimName(id)}
	if got := writes.list(); !slices.Equal(got, want) {
		t.Errorf("nodeclaim writes = %v, want %v", got, want)
	}
	if sim.calls != 1 {
		t.Errorf("simulations = %d, want 1 (the retry reuses the first replacement)", sim.calls)
	}
}

// TestFailedPreplanDoesNotHoldTheDeletion: interruption is forceful; when no replacement can
// be planned the NodeClaim is deleted all the same.
func TestFailedPreplanDoesNotHoldTheDeletion(t *testing.T) {
	writes := &writeLog{}
	f := newFixture(t, recordWrites(writes, &sync.Map{}), Options{}, poolObjects()...)
	inPool(t, f.kube)
	sim := &replacementSimulator{unavailable: f.unavailable, fail: errors.New("injected: the simulation failed")}
	f.controller.opts.Preplanner = &disruption.Preplanner{Client: f.kube, Simulator: sim}
	id := instances[0].id
	f.send(t, f.srv.SpotInterruptionWarning(id))
	if err := f.controller.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := writes.list(), []string{"delete " + claimName(id)}; !slices.Equal(got, want) {
		t.Errorf("nodeclaim writes = %v, want %v", got, want)
	}
	if sim.calls != 1 {
		t.Errorf("simulations = %d, want 1", sim.calls)
	}
	if v, i := f.depth(t); v+i != 0 {
		t.Errorf("queue holds %d messages, want the message handled", v+i)
	}
}
