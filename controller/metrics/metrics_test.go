package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joinery-dev/joinery/apis"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func node(name, pool string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(epoch), Labels: map[string]string{
			karpv1.NodePoolLabelKey: pool, corev1.LabelTopologyZone: "z1", karpv1.CapacityTypeLabelKey: "spot",
		}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3500m"), corev1.ResourceMemory: resource.MustParse("7Gi")},
		},
	}
}

func pod(name, nodeName, cpu string, daemon bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(epoch)},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if daemon {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds", Controller: new(true)}}
	}
	return p
}

// TestRecordNodeAndPoolGauges: one pass sets the node gauges of managed nodes only, the
// cluster's utilization, the NodePool's limits and usage, and the cluster state.
func TestRecordNodeAndPoolGauges(t *testing.T) {
	pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec:   karpv1.NodePoolSpec{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}},
		Status: karpv1.NodePoolStatus{Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	c := newClient(t, node("managed", "default"), node("unmanaged", ""), pool,
		pod("app", "managed", "1", false), pod("daemon", "managed", "750m", true), pod("other", "unmanaged", "2", false))
	ctl := New(c, c, clocktesting.NewFakePassiveClock(epoch.Add(time.Hour)), 0)
	if err := ctl.Record(context.Background()); err != nil {
		t.Fatal(err)
	}
	managed := prometheus.Labels{"node_name": "managed", "nodepool": "default", "arch": "", "os": "", "capacity_type": "spot",
		"instance_type": "", "region": "", "zone": "z1", "phase": "", "resource_type": "cpu"}
	tests := []struct {
		name  string
		gauge *prometheus.GaugeVec
		want  float64
	}{
		{"allocatable", nodeAllocatable, 3.5},
		{"pod requests include daemons", nodePodRequests, 1.75},
		{"pod limits", nodePodLimits, 1.75},
		{"daemon requests", nodeDaemonRequests, 0.75},
		{"daemon limits", nodeDaemonLimits, 0.75},
		{"system overhead", nodeSystemOverhead, 0.5},
	}
	for _, tt := range tests {
		if got := testutil.ToFloat64(tt.gauge.With(managed)); got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, got, tt.want)
		}
	}
	if n := testutil.CollectAndCount(nodeAllocatable); n != 2 { // cpu and memory of the managed node
		t.Errorf("allocatable has %d series, want 2 (the unmanaged node left out)", n)
	}
	delete(managed, "resource_type")
	if got := testutil.ToFloat64(nodeCurrentLifetime.With(managed)); got != 3600 {
		t.Errorf("current lifetime = %v, want 3600", got)
	}
	if got := testutil.ToFloat64(clusterUtilization.WithLabelValues("cpu")); got != 50 {
		t.Errorf("cpu utilization = %v, want 50", got)
	}
	if got := testutil.ToFloat64(nodePoolLimit.WithLabelValues("default", "cpu")); got != 100 {
		t.Errorf("limit = %v, want 100", got)
	}
	if got := testutil.ToFloat64(nodePoolUsage.WithLabelValues("default", "cpu")); got != 4 {
		t.Errorf("usage = %v, want 4", got)
	}
	if got := testutil.ToFloat64(clusterStateNodeCount); got != 2 {
		t.Errorf("node count = %v, want 2", got)
	}
	if got := testutil.ToFloat64(clusterStateSynced); got != 1 {
		t.Errorf("synced = %v, want 1", got)
	}
}

// TestPodWaits: a pod seen pending has its unbound and unstarted times; once bound and ready
// they are observed as durations and the gauges go; deletion drops its state series.
func TestPodWaits(t *testing.T) {
	p := pod("web", "", "1", false)
	p.Status.Phase = corev1.PodPending
	c := newClient(t, p)
	clk := clocktesting.NewFakePassiveClock(epoch.Add(10 * time.Second))
	ctl := NewPodController(c, clk)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}
	ctx := context.Background()
	if res, err := ctl.Reconcile(ctx, req); err != nil || res.RequeueAfter == 0 {
		t.Fatalf("pending pod: %v, %v; want a requeue to refresh its wait", res, err)
	}
	series := prometheus.Labels{"name": "web", "namespace": "default"}
	if got := testutil.ToFloat64(podUnboundTime.With(series)); got != 10 {
		t.Errorf("unbound time = %v, want 10", got)
	}
	bound, started := testutil.CollectAndCount(podBoundDuration), testutil.CollectAndCount(podStartupDuration)

	p.Spec.NodeName = "n1"
	if err := c.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(epoch.Add(20 * time.Second))},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(epoch.Add(30 * time.Second))},
	}
	if err := c.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(podUnboundTime); n != 0 {
		t.Errorf("%d unbound series left after binding", n)
	}
	if testutil.CollectAndCount(podBoundDuration) != bound || testutil.CollectAndCount(podStartupDuration) != started {
		t.Fatal("histogram series changed") // unlabelled: one series each, always
	}
	if got := histogramSum(t, podBoundDuration); got != 20 {
		t.Errorf("bound duration sum = %v, want 20", got)
	}
	if got := testutil.ToFloat64(podState.With(prometheus.Labels{"name": "web", "namespace": "default", "owner": "", "node": "n1",
		"nodepool": "", "zone": "", "arch": "", "capacity_type": "", "instance_type": "", "phase": "Running", "ready": "true"})); got != 1 {
		t.Errorf("state = %v, want 1", got)
	}
	if err := c.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(podState); n != 0 {
		t.Errorf("%d state series left after deletion", n)
	}
}

func histogramSum(t *testing.T, h prometheus.Histogram) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	h.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleSum()
}

// TestUnsynced: a Node the API server has and the cache lacks makes cluster state unsynced,
// and the unsynced time grows from the first pass that saw it.
func TestUnsynced(t *testing.T) {
	cached, api := newClient(t), newClient(t, node("new", "default"))
	clk := clocktesting.NewFakePassiveClock(epoch)
	ctl := New(cached, api, clk, 0)
	ctx := context.Background()
	if err := ctl.Record(ctx); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(epoch.Add(30 * time.Second))
	if err := ctl.Record(ctx); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(clusterStateSynced); got != 0 {
		t.Errorf("synced = %v, want 0", got)
	}
	if got := testutil.ToFloat64(clusterStateUnsyncedTime); got != 30 {
		t.Errorf("unsynced time = %v, want 30", got)
	}
}
