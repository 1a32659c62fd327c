package interruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	awsinterruption "github.com/joinery-dev/joinery/cloudprovider/aws/interruption"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

const queueName = "joinery-interruptions"

// recordedEvent is one event the controller recorded.
type recordedEvent struct{ kind, name, reason string }

type eventLog struct {
	mu     sync.Mutex
	events []recordedEvent
}

var _ events.EventRecorder = (*eventLog)(nil)

func (l *eventLog) Eventf(regarding, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := recordedEvent{reason: reason}
	switch o := regarding.(type) {
	case *karpv1.NodeClaim:
		e.kind, e.name = "NodeClaim", o.Name
	case *corev1.Node:
		e.kind, e.name = "Node", o.Name
	}
	l.events = append(l.events, e)
}

func (l *eventLog) list() []recordedEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// markLog records offerings marked unavailable.
type markLog struct {
	mu     sync.Mutex
	marked []cloudprovider.OfferingKey
	ttl    time.Duration
}

func (m *markLog) MarkUnavailable(_ context.Context, ttl time.Duration, offerings ...cloudprovider.OfferingKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.marked = append(m.marked, offerings...)
	m.ttl = ttl
	return nil
}

func (m *markLog) list() []cloudprovider.OfferingKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.marked)
}

type fixture struct {
	srv         *awsemulator.Server
	kube        client.Client
	events      *eventLog
	unavailable *markLog
	controller  *Controller
}

// instances are the cluster's: one NodeClaim (with its Node) per instance.
var instances = []struct{ id, zone, instanceType, capacityType string }{
	{"i-0000000000000000a", "us-west-2a", "m5.large", karpv1.CapacityTypeSpot},
	{"i-0000000000000000b", "us-west-2b", "c5.xlarge", karpv1.CapacityTypeOnDemand},
	{"i-0000000000000000c", "us-west-2c", "r5.large", karpv1.CapacityTypeSpot},
}

func claimName(id string) string { return "claim-" + id[len(id)-1:] }
func nodeName(id string) string  { return "node-" + id[len(id)-1:] }

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := karpv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

func clusterObjects() []client.Object {
	var objs []client.Object
	for _, in := range instances {
		providerID := fmt.Sprintf("aws:///%s/%s", in.zone, in.id)
		labels := map[string]string{
			corev1.LabelTopologyZone:       in.zone,
			corev1.LabelInstanceTypeStable: in.instanceType,
			karpv1.CapacityTypeLabelKey:    in.capacityType,
		}
		objs = append(objs,
			&karpv1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: claimName(in.id), Labels: labels, Finalizers: []string{karpv1.TerminationFinalizer}},
				Status:     karpv1.NodeClaimStatus{ProviderID: providerID, NodeName: nodeName(in.id)},
			},
			&corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: nodeName(in.id), Labels: labels},
				Spec:       corev1.NodeSpec{ProviderID: providerID},
			},
		)
	}
	return objs
}

func newFixture(t *testing.T, funcs interceptor.Funcs, opts Options, extra ...client.Object) *fixture {
	t.Helper()
	srv := awsemulator.NewServer(awsemulator.Options{})
	t.Cleanup(srv.Close)
	if _, err := srv.CreateQueue(queueName); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(newScheme(t)).
		WithObjects(append(clusterObjects(), extra...)...).
		WithStatusSubresource(&karpv1.NodeClaim{}).
		WithInterceptorFuncs(funcs).
		Build()
	f := &fixture{srv: srv, kube: kube, events: &eventLog{}, unavailable: &markLog{}}
	opts.Queue = queueName
	if opts.WaitTime == 0 {
		opts.WaitTime = time.Second
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 10 * time.Millisecond
	}
	f.controller = New(kube, sqs.NewFromConfig(srv.Config()), f.unavailable, f.events, opts)
	return f
}

func (f *fixture) send(t *testing.T, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if _, err := f.srv.SendEvent(queueName, b); err != nil {
			t.Fatal(err)
		}
	}
}

// deleting lists the NodeClaims being deleted.
func (f *fixture) deleting(t *testing.T) []string {
	t.Helper()
	var list karpv1.NodeClaimList
	if err := f.kube.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, nc := range list.Items {
		if !nc.DeletionTimestamp.IsZero() {
			out = append(out, nc.Name)
		}
	}
	slices.Sort(out)
	return out
}

func (f *fixture) depth(t *testing.T) (visible, inFlight int) {
	t.Helper()
	visible, inFlight, err := f.srv.QueueDepth(queueName)
	if err != nil {
		t.Fatal(err)
	}
	return visible, inFlight
}

// reasonsOn lists the event reasons recorded on one object, in order.
func reasonsOn(events []recordedEvent, kind, name string) []string {
	var out []string
	for _, e := range events {
		if e.kind == kind && e.name == name {
			out = append(out, e.reason)
		}
	}
	return out
}

func TestMessages(t *testing.T) {
	a, b, c := instances[0].id, instances[1].id, instances[2].id
	probe := awsemulator.NewServer(awsemulator.Options{}) // only builds message bodies
	defer probe.Close()
	tests := []struct {
		name         string
		body         string
		kind         awsinterruption.Kind
		wantDeleting []string
		wantEvents   map[string][]string // object (Kind/name) → reasons
		wantMarked   []cloudprovider.OfferingKey
	}{
		{
			name: "spot interruption: offering unavailable, nodeclaim deleted",
			body: probe.SpotInterruptionWarning(a), kind: awsinterruption.SpotInterruption,
			wantDeleting: []string{claimName(a)},
			wantEvents: map[string][]string{
				"NodeClaim/" + claimName(a): {ReasonSpotInterrupted, ReasonTerminatingOnInterruption},
				"Node/" + nodeName(a):       {ReasonSpotInterrupted, ReasonTerminatingOnInterruption},
			},
			wantMarked: []cloudprovider.OfferingKey{{CapacityType: "spot", InstanceType: "m5.large", Zone: "us-west-2a"}},
		},
		{
			name: "rebalance recommendation: event only",
			body: probe.RebalanceRecommendation(c), kind: awsinterruption.RebalanceRecommendation,
			wantEvents: map[string][]string{
				"NodeClaim/" + claimName(c): {ReasonRebalanceRecommendation},
				"Node/" + nodeName(c):       {ReasonRebalanceRecommendation},
			},
		},
		{
			name: "scheduled change of two instances: both deleted",
			body: probe.ScheduledChange(a, b), kind: awsinterruption.ScheduledChange,
			wantDeleting: []string{claimName(a), claimName(b)},
			wantEvents: map[string][]string{
				"NodeClaim/" + claimName(a): {ReasonInstanceUnhealthy, ReasonTerminatingOnInterruption},
				"NodeClaim/" + claimName(b): {ReasonInstanceUnhealthy, ReasonTerminatingOnInterruption},
			},
		},
		{
			name: "stopping", body: probe.InstanceStateChange(b, awsemulator.InstanceStateStopping), kind: awsinterruption.InstanceStopped,
			wantDeleting: []string{claimName(b)},
			wantEvents:   map[string][]string{"NodeClaim/" + claimName(b): {ReasonInstanceStopping, ReasonTerminatingOnInterruption}},
		},
		{
			name: "stopped", body: probe.InstanceStateChange(b, awsemulator.InstanceStateStopped), kind: awsinterruption.InstanceStopped,
			wantDeleting: []string{claimName(b)},
			wantEvents:   map[string][]string{"NodeClaim/" + claimName(b): {ReasonInstanceStopping, ReasonTerminatingOnInterruption}},
		},
		{
			name: "shutting-down", body: probe.InstanceStateChange(c, awsemulator.InstanceStateShuttingDown), kind: awsinterruption.InstanceTerminated,
			wantDeleting: []string{claimName(c)},
			wantEvents:   map[string][]string{"Node/" + nodeName(c): {ReasonInstanceTerminating, ReasonTerminatingOnInterruption}},
		},
		{
			name: "terminated", body: probe.InstanceStateChange(c, awsemulator.InstanceStateTerminated), kind: awsinterruption.InstanceTerminated,
			wantDeleting: []string{claimName(c)},
			wantEvents:   map[string][]string{"NodeClaim/" + claimName(c): {ReasonInstanceTerminating, ReasonTerminatingOnInterruption}},
		},
		{name: "running: nothing to do", body: probe.InstanceStateChange(a, awsemulator.InstanceStateRunning), kind: awsinterruption.NoOp},
		{name: "an instance of another cluster", body: probe.SpotInterruptionWarning("i-0ffffffffffffffff"), kind: awsinterruption.SpotInterruption},
		{name: "malformed", body: `{"detail-type": "EC2 Spot Instance Interruption Warning", "source": "aws.ec2", "detail": {}}`, kind: awsinterruption.NoOp},
		{name: "not JSON", body: "hello", kind: awsinterruption.NoOp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, interceptor.Funcs{}, Options{})
			received := testutil.ToFloat64(receivedMessages.WithLabelValues(string(tt.kind)))
			deleted := testutil.ToFloat64(deletedMessages)
			f.send(t, tt.body)

			if err := f.controller.Poll(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := f.deleting(t); !slices.Equal(got, tt.wantDeleting) {
				t.Errorf("deleting nodeclaims = %v, want %v", got, tt.wantDeleting)
			}
			recorded := f.events.list()
			for object, want := range tt.wantEvents {
				kind, name, _ := strings.Cut(object, "/")
				if got := reasonsOn(recorded, kind, name); !slices.Equal(got, want) {
					t.Errorf("events on %s = %v, want %v", object, got, want)
				}
			}
			if len(tt.wantEvents) == 0 && len(recorded) > 0 {
				t.Errorf("events = %v, want none", recorded)
			}
			if got := f.unavailable.list(); !slices.Equal(got, tt.wantMarked) {
				t.Errorf("marked unavailable = %v, want %v", got, tt.wantMarked)
			}
			if len(tt.wantMarked) > 0 && f.unavailable.ttl != cloudprovider.UnavailableOfferingsTTL {
				t.Errorf("ttl = %s, want %s", f.unavailable.ttl, cloudprovider.UnavailableOfferingsTTL)
			}
			if visible, inFlight := f.depth(t); visible+inFlight != 0 {
				t.Errorf("queue holds %d visible and %d in-flight messages, want none", visible, inFlight)
			}
			if got := testutil.ToFloat64(receivedMessages.WithLabelValues(string(tt.kind))) - received; got != 1 {
				t.Errorf("received_messages_total{message_type=%q} grew by %v, want 1", tt.kind, got)
			}
			if got := testutil.ToFloat64(deletedMessages) - deleted; got != 1 {
				t.Errorf("deleted_messages_total grew by %v, want 1", got)
			}
		})
	}
}

// run starts the controller and returns a stop function that waits for it to return.
func run(t *testing.T, c *Controller) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	stop := func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Start returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the controller did not stop with its context")
		}
	}
	t.Cleanup(stop)
	return stop
}

// eventually polls cond until it holds or 20 seconds pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestConsumerContinuesAfterMalformedMessages(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, Options{})
	run(t, f.controller)
	f.send(t, "not an event", `{"source":"aws.ec2"}`, f.srv.SpotInterruptionWarning(instances[0].id))
	eventually(t, "the spot-interrupted nodeclaim deleted", func() bool { return slices.Equal(f.deleting(t), []string{claimName(instances[0].id)}) })
	eventually(t, "an empty queue", func() bool { v, i := f.depth(t); return v+i == 0 })

	// Messages sent while the consumer waits in a long poll are handled too.
	f.send(t, f.srv.InstanceStateChange(instances[1].id, awsemulator.InstanceStateShuttingDown))
	eventually(t, "the terminating nodeclaim deleted", func() bool { return len(f.deleting(t)) == 2 })
}

func TestThrottledReceiveRecovers(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, Options{})
	// Nine throttled answers outlast the SDK's three attempts per call three times over, so
	// the controller's own backoff must carry it through.
	f.srv.Inject(awsemulator.SQSThrottling.For(awsemulator.ServiceSQS, "ReceiveMessage", 9))
	f.send(t, f.srv.SpotInterruptionWarning(instances[2].id))
	run(t, f.controller)
	eventually(t, "the nodeclaim deleted after throttling", func() bool { return slices.Equal(f.deleting(t), []string{claimName(instances[2].id)}) })
	if n := f.srv.Calls(awsemulator.ServiceSQS, "ReceiveMessage"); n < 10 {
		t.Errorf("ReceiveMessage calls = %d, want at least 10 (9 throttled, then one answered)", n)
	}
}

func TestQueueCreatedAfterStart(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, Options{})
	f.controller.opts.Queue = "created-later"
	run(t, f.controller)
	eventually(t, "a failed GetQueueUrl", func() bool { return f.srv.Calls(awsemulator.ServiceSQS, "GetQueueUrl") >= 2 })
	if _, err := f.srv.CreateQueue("created-later"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.srv.SendEvent("created-later", f.srv.InstanceStateChange(instances[0].id, awsemulator.InstanceStateStopping)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stopping nodeclaim deleted", func() bool { return slices.Equal(f.deleting(t), []string{claimName(instances[0].id)}) })
}

func TestFailedHandlingKeepsTheMessage(t *testing.T) {
	var failDeletes sync.Map
	failDeletes.Store("fail", true)
	funcs := interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		if v, _ := failDeletes.Load("fail"); v == true {
			return errors.New("injected: the API server is unavailable")
		}
		return c.Delete(ctx, obj, opts...)
	}}
	f := newFixture(t, funcs, Options{VisibilityTimeout: time.Second, WaitTime: 5 * time.Second})
	f.send(t, f.srv.ScheduledChange(instances[1].id))

	if err := f.controller.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.deleting(t); len(got) != 0 {
		t.Fatalf("deleting = %v with deletes failing", got)
	}
	if _, inFlight := f.depth(t); inFlight != 1 {
		t.Fatalf("in flight = %d, want the unhandled message kept", inFlight)
	}

	// Once the API server answers, the message (visible again after a second) is handled.
	failDeletes.Store("fail", false)
	if err := f.controller.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.deleting(t); !slices.Equal(got, []string{claimName(instances[1].id)}) {
		t.Errorf("deleting = %v after recovery", got)
	}
	if v, i := f.depth(t); v+i != 0 {
		t.Errorf("queue holds %d messages after handling, want none", v+i)
	}
}

func TestAlreadyDeletingNodeClaimIsNotDeletedAgain(t *testing.T) {
	deletes := 0
	funcs := interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		deletes++
		return c.Delete(ctx, obj, opts...)
	}}
	f := newFixture(t, funcs, Options{})
	id := instances[0].id
	f.send(t, f.srv.SpotInterruptionWarning(id), f.srv.InstanceStateChange(id, awsemulator.InstanceStateShuttingDown))
	if err := f.controller.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if deletes != 1 {
		t.Errorf("deletes = %d, want 1", deletes)
	}
	if got := reasonsOn(f.events.list(), "NodeClaim", claimName(id)); !slices.Equal(got, []string{ReasonSpotInterrupted, ReasonTerminatingOnInterruption, ReasonInstanceTerminating}) {
		t.Errorf("events = %v", got)
	}
}

func TestBackoff(t *testing.T) {
	c := New(nil, nil, nil, nil, Options{MinBackoff: time.Second, MaxBackoff: 10 * time.Second})
	var got []time.Duration
	for i := range 6 {
		got = append(got, c.backoff(i))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("backoff = %v, want %v", got, want)
	}
}
