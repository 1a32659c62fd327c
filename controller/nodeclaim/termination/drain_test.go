package termination

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/nodeclaim/internal/fixtures"
)

// pod is a running pod named name on node, changed by mutate.
func pod(name, node string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func annotated(key, value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{key: value} }
}

func grace(seconds int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To(seconds) }
}

func daemonSetPod(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds", Controller: ptr.To(true)}}
}

func criticalPod(p *corev1.Pod) { p.Spec.PriorityClassName = "system-node-critical" }

// create stores objs, failing the test on error.
func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := c.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
}

// podsLeft returns the names of the pods that still exist among pods.
func podsLeft(t *testing.T, c client.Client, pods ...*corev1.Pod) []string {
	t.Helper()
	var left []string
	for _, p := range pods {
		if !gone(t, c, p.DeepCopy()) {
			left = append(left, p.Name)
		}
	}
	return left
}

// deleteNode starts the Node's termination as `kubectl delete node` would.
func deleteNode(t *testing.T, c client.Client, node *corev1.Node) {
	t.Helper()
	if err := c.Delete(context.Background(), node); err != nil {
		t.Fatal(err)
	}
}

// refuseEvictionOf answers evictions of the named pods with 429, as a PodDisruptionBudget that
// allows no disruption does; it counts the refusals.
func refuseEvictionOf(refused *int, names ...string) *interceptor.Funcs {
	return &interceptor.Funcs{SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj client.Object, subObj client.Object, opts ...client.SubResourceCreateOption) error {
		if sub == "eviction" && slices.Contains(names, obj.GetName()) {
			*refused++
			return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
		}
		return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
	}}
}

func eventsMatching(all []string, substr string) []string {
	var out []string
	for _, e := range all {
		if strings.Contains(e, substr) {
			out = append(out, e)
		}
	}
	return out
}

func TestDrainTaintsEvictsThenTerminates(t *testing.T) {
	h, _, node := newHarness(t, nil)
	web, elsewhere := pod("web", node.Name), pod("elsewhere", "other-node")
	create(t, h.client, web, elsewhere)
	deleteNode(t, h.client, node)

	if result := h.reconcileNode(t, node.Name); result.RequeueAfter == 0 {
		t.Error("no requeue while the evicted pod may still be terminating")
	}
	fixtures.Get(t, h.client, node)
	if !slices.ContainsFunc(node.Spec.Taints, func(taint corev1.Taint) bool {
		return taint.Key == karpv1.DisruptedTaintKey && taint.Effect == corev1.TaintEffectNoSchedule
	}) {
		t.Errorf("taints = %v, want %s:NoSchedule", node.Spec.Taints, karpv1.DisruptedTaintKey)
	}
	if h.provider.Deletes != 0 {
		t.Error("instance terminated before the drain finished")
	}
	if left := podsLeft(t, h.client, web, elsewhere); !slices.Equal(left, []string{"elsewhere"}) {
		t.Errorf("pods left = %v, want only the other node's", left)
	}
	got := fixtures.Drain(h.events.Events)
	if !slices.Contains(got, "Normal Draining Draining node") || !slices.Contains(got, "Normal Evicted Evicted pod default/web") {
		t.Errorf("events = %q", got)
	}

	// Drained: the instance goes and the Node is released; the taint is not added twice.
	if result := h.reconcileNode(t, node.Name); result.RequeueAfter != 0 {
		t.Errorf("drained node requeued after %v", result.RequeueAfter)
	}
	if !gone(t, h.client, node) {
		t.Errorf("drained node still exists, taints %v", node.Spec.Taints)
	}
}

func TestDrainSkipRules(t *testing.T) {
	tests := []struct {
		name        string
		pod         *corev1.Pod
		blocksDrain bool
	}{
		{"mirror pod", pod("static", "default-xyz", annotated("kubernetes.io/config.mirror", "abc")), false},
		{"tolerates disrupted taint", pod("tolerant", "default-xyz", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists}}
		}), false},
		{"tolerates every taint", pod("tolerant", "default-xyz", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}), false},
		{"succeeded", pod("done", "default-xyz", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false},
		{"failed", pod("crashed", "default-xyz", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), false},
		{"do-not-disrupt", pod("precious", "default-xyz", annotated(karpv1.DoNotDisruptAnnotationKey, "true")), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _, node := newHarness(t, nil)
			create(t, h.client, tt.pod)
			deleteNode(t, h.client, node)

			result := h.reconcileNode(t, node.Name)
			if left := podsLeft(t, h.client, tt.pod); len(left) != 1 {
				t.Fatalf("pod %s was evicted", tt.pod.Name)
			}
			if gone(t, h.client, node) == tt.blocksDrain {
				t.Errorf("node gone = %v, want %v (requeue %v)", !tt.blocksDrain, !tt.blocksDrain, result.RequeueAfter)
			}
			warnings := eventsMatching(fixtures.Drain(h.events.Events), "Warning FailedDraining")
			if tt.blocksDrain && (len(warnings) != 1 || !strings.Contains(warnings[0], `Pod default/precious has "karpenter.sh/do-not-disrupt" annotation`)) {
				t.Errorf("warnings = %q", warnings)
			}
			if tt.blocksDrain && h.provider.Deletes != 0 {
				t.Error("instance terminated while a do-not-disrupt pod runs")
			}
		})
	}
}

func TestDrainEvictsDaemonSetAndCriticalPodsLast(t *testing.T) {
	h, _, node := newHarness(t, nil)
	web, agent, dns := pod("web", node.Name), pod("agent", node.Name, daemonSetPod), pod("dns", node.Name, criticalPod)
	create(t, h.client, web, agent, dns)
	deleteNode(t, h.client, node)

	h.reconcileNode(t, node.Name)
	if left := podsLeft(t, h.client, web, agent, dns); !slices.Equal(left, []string{"agent", "dns"}) {
		t.Fatalf("after the first wave, pods left = %v", left)
	}
	h.reconcileNode(t, node.Name)
	if left := podsLeft(t, h.client, web, agent, dns); len(left) != 0 {
		t.Fatalf("after the second wave, pods left = %v", left)
	}
	h.reconcileNode(t, node.Name)
	if !gone(t, h.client, node) {
		t.Error("drained node still exists")
	}
}

func TestDrainBlockedByPDBBacksOff(t *testing.T) {
	refused := 0
	h, _, node := newHarness(t, refuseEvictionOf(&refused, "guarded"))
	guarded := pod("guarded", node.Name)
	create(t, h.client, guarded)
	deleteNode(t, h.client, node)

	first := h.reconcileNode(t, node.Name)
	second := h.reconcileNode(t, node.Name)
	if refused != 2 {
		t.Fatalf("eviction attempted %d times, want 2", refused)
	}
	if first.RequeueAfter == 0 || second.RequeueAfter <= first.RequeueAfter {
		t.Errorf("requeues %v then %v, want a growing backoff", first.RequeueAfter, second.RequeueAfter)
	}
	if left := podsLeft(t, h.client, guarded); len(left) != 1 {
		t.Error("pod protected by a PDB was removed")
	}
	if gone(t, h.client, node) || h.provider.Deletes != 0 {
		t.Error("node terminated while a PDB blocks its drain")
	}
	warnings := eventsMatching(fixtures.Drain(h.events.Events), "Warning FailedDraining")
	if len(warnings) == 0 || !strings.Contains(warnings[0], "Pod default/guarded not evicted, blocked by a PodDisruptionBudget") {
		t.Errorf("warnings = %q", warnings)
	}
}

// TestDrainWaitsForPodsOfTerminatingNamespace: the API server refuses evictions in a namespace
// being deleted (403, cause NamespaceTerminating); the namespace controller deletes those pods,
// so the drain waits for them instead of failing the reconcile.
func TestDrainWaitsForPodsOfTerminatingNamespace(t *testing.T) {
	refused := 0
	funcs := &interceptor.Funcs{SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj client.Object, subObj client.Object, opts ...client.SubResourceCreateOption) error {
		if sub == "eviction" {
			refused++
			err := apierrors.NewForbidden(corev1.Resource("pods"), obj.GetName(), errors.New("namespace default is being terminated"))
			err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Field: "metadata.namespace"}}
			return err
		}
		return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
	}}
	h, _, node := newHarness(t, funcs)
	web := pod("web", node.Name)
	create(t, h.client, web)
	deleteNode(t, h.client, node)

	if result := h.reconcileNode(t, node.Name); result.RequeueAfter == 0 {
		t.Error("no requeue while the pod waits for its namespace's deletion")
	}
	if refused != 1 {
		t.Errorf("eviction attempted %d times, want 1", refused)
	}
	if gone(t, h.client, node) || h.provider.Deletes != 0 {
		t.Error("node terminated before its pod was gone")
	}
	if warnings := eventsMatching(fixtures.Drain(h.events.Events), "Warning FailedDraining"); len(warnings) != 0 {
		t.Errorf("warnings = %q, want none for a namespace being deleted", warnings)
	}
}

func TestTerminationGracePeriodForcesDeletion(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	refused := 0
	h, nc, node := newHarness(t, refuseEvictionOf(&refused, "guarded"), WithClock(clk))
	fixtures.Get(t, h.client, nc)
	nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
	if err := h.client.Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	precious := pod("precious", node.Name, annotated(karpv1.DoNotDisruptAnnotationKey, "true"), grace(300))
	slow := pod("slow", node.Name, annotated(karpv1.DoNotDisruptAnnotationKey, "true"), grace(7200))
	guarded := pod("guarded", node.Name) // default 30s grace
	create(t, h.client, precious, slow, guarded)
	deleteNode(t, h.client, node)

	// Drain starts: the deadline is recorded, and a pod whose own grace exceeds the node's is
	// deleted at once.
	result := h.reconcileNode(t, node.Name)
	fixtures.Get(t, h.client, nc)
	want := start.Add(time.Hour).Format(time.RFC3339)
	if got := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; got != want {
		t.Fatalf("termination timestamp = %q, want %q", got, want)
	}
	if left := podsLeft(t, h.client, precious, slow, guarded); !slices.Equal(left, []string{"precious", "guarded"}) {
		t.Fatalf("at the start, pods left = %v", left)
	}
	if result.RequeueAfter == 0 || result.RequeueAfter > 55*time.Minute {
		t.Errorf("requeue after %v, want before the first forced deletion", result.RequeueAfter)
	}

	// A restarted controller keeps the recorded deadline: at deadline - 300s the do-not-disrupt
	// pod is deleted, the PDB-guarded one (30s) is not yet.
	clk.SetTime(start.Add(55 * time.Minute))
	h.nodes = NewNodeController(h.client, h.provider, WithEventRecorder(h.events), WithClock(clk))
	h.reconcileNode(t, node.Name)
	if left := podsLeft(t, h.client, precious, slow, guarded); !slices.Equal(left, []string{"guarded"}) {
		t.Fatalf("at deadline - 300s, pods left = %v", left)
	}
	if gone(t, h.client, node) {
		t.Fatal("node terminated before its deadline while a pod remained")
	}

	// At the deadline everything left goes, PDB or not, and the node terminates.
	clk.SetTime(start.Add(time.Hour))
	h.reconcileNode(t, node.Name)
	if left := podsLeft(t, h.client, precious, slow, guarded); len(left) != 0 {
		t.Fatalf("at the deadline, pods left = %v", left)
	}
	if !gone(t, h.client, node) {
		t.Error("node still exists after its terminationGracePeriod")
	}
	if deleted := eventsMatching(fixtures.Drain(h.events.Events), "Warning Deleted"); len(deleted) != 3 {
		t.Errorf("forced deletion events = %q", deleted)
	}
}

// TestRecordedDeadlineWithoutGracePeriodIsForceful: node repair records "now" as the
// termination deadline of a NodeClaim without a terminationGracePeriod; the drain then deletes
// every pod at once, PDB or do-not-disrupt, and the node terminates.
func TestRecordedDeadlineWithoutGracePeriodIsForceful(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	refused := 0
	h, nc, node := newHarness(t, refuseEvictionOf(&refused, "guarded"), WithClock(clk))
	fixtures.Get(t, h.client, nc)
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = start.Format(time.RFC3339)
	if err := h.client.Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	precious := pod("precious", node.Name, annotated(karpv1.DoNotDisruptAnnotationKey, "true"))
	guarded := pod("guarded", node.Name)
	create(t, h.client, precious, guarded)
	deleteNode(t, h.client, node)

	h.reconcileNode(t, node.Name)
	h.reconcileNode(t, node.Name)
	if left := podsLeft(t, h.client, precious, guarded); len(left) != 0 {
		t.Fatalf("pods left = %v, want none", left)
	}
	if !gone(t, h.client, node) {
		t.Error("node still exists past its recorded deadline")
	}
}
