package disruption

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// timeout bounds each wait: the loop passes every 10 s and validates a command for 5 s,
// launches take a second or two on kwok; the rest is room for a loaded 2-core machine.
const timeout = 3 * time.Minute

// createNodePool creates a kwok NodePool whose nodes carry the group label, with spec lines
// (indented two spaces, under spec) added.
func createNodePool(t *testing.T, name, spec string) {
	t.Helper()
	env.Create(t, framework.KWOKNodeClasses, fmt.Sprintf(`{"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass", "metadata": {"name": %q}}`, name))
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
%[2]s
  template:
    metadata:
      labels: {%[3]s: %[1]q}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large, c5.xlarge, c5.2xlarge]}
`, name, spec, framework.GroupLabel))
}

func patchNodePool(t *testing.T, name, patch string) {
	t.Helper()
	if _, err := env.Dynamic.Resource(framework.NodePools).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch nodepool %s: %v", name, err)
	}
}

type deployOption func(*appsv1.Deployment)

// oneNodeEach keeps the Deployment's pods on separate nodes.
func oneNodeEach(d *appsv1.Deployment) {
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels},
		}},
	}}
}

func podAnnotated(k, v string) deployOption {
	return func(d *appsv1.Deployment) { d.Spec.Template.Annotations = map[string]string{k: v} }
}

func createDeployment(t *testing.T, ns, pool, name string, replicas int32, cpu string, opts ...deployOption) {
	t.Helper()
	labels := map[string]string{"app": name, framework.GroupLabel: pool}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: framework.GroupPodSpec(pool, cpu, "256Mi")},
		},
	}
	for _, o := range opts {
		o(d)
	}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment %s: %v", name, err)
	}
}

func scale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec": {"replicas": %d}}`, replicas)
	if _, err := env.Client.AppsV1().Deployments(ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("scale %s: %v", name, err)
	}
}

func running(pod corev1.Pod) error {
	if pod.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("pod %s is %s", pod.Name, pod.Status.Phase)
	}
	return nil
}

// nodeClaims lists the NodePool's NodeClaims.
func nodeClaims(ctx context.Context, pool string) ([]karpv1.NodeClaim, error) {
	list, err := env.Dynamic.Resource(framework.NodeClaims).List(ctx, metav1.ListOptions{LabelSelector: karpv1.NodePoolLabelKey + "=" + pool})
	if err != nil {
		return nil, err
	}
	out := make([]karpv1.NodeClaim, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func mustNodeClaims(t *testing.T, pool string) []karpv1.NodeClaim {
	t.Helper()
	ncs, err := nodeClaims(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	return ncs
}

// watcher samples a NodePool's NodeClaims every 250 ms for the whole test and records the
// most that were disrupting at once (chosen by a command, or being deleted) and every
// candidate deleted while a replacement of its command was not yet initialized.
type watcher struct {
	mu             sync.Mutex
	maxDisrupting  int
	deletedEarly   []string
	seenCandidates map[string]bool
	stop           func()
}

func watch(t *testing.T, pool string) *watcher {
	w := &watcher{seenCandidates: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w.stop = func() { cancel(); <-done }
	t.Cleanup(w.stop)
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if ncs, err := nodeClaims(ctx, pool); err == nil {
				w.sample(ncs)
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *watcher) sample(ncs []karpv1.NodeClaim) {
	w.mu.Lock()
	defer w.mu.Unlock()
	initialized := map[string]bool{} // command → all its replacements initialized so far
	for _, nc := range ncs {
		if id := nc.Annotations[disruption.ReplacementForAnnotationKey]; id != "" {
			ok, seen := initialized[id]
			initialized[id] = (ok || !seen) && meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
		}
	}
	disrupting := 0
	for _, nc := range ncs {
		id := nc.Annotations[disruption.CommandAnnotationKey]
		if id != "" || nc.DeletionTimestamp != nil {
			disrupting++
		}
		if id != "" {
			w.seenCandidates[nc.Name] = true
		}
		if id != "" && nc.DeletionTimestamp != nil {
			if ok, has := initialized[id]; has && !ok {
				w.deletedEarly = append(w.deletedEarly, nc.Name)
			}
		}
	}
	w.maxDisrupting = max(w.maxDisrupting, disrupting)
}

// blockedEvents returns the DisruptionBlocked messages recorded about the named object.
func blockedEvents(ctx context.Context, name string) ([]string, error) {
	list, err := env.Client.EventsV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range list.Items {
		if e.Reason == disruption.EventDisruptionBlocked && e.Regarding.Name == name {
			out = append(out, e.Note)
		}
	}
	return out, nil
}

func awaitBlockedEvent(t *testing.T, name, want string) {
	t.Helper()
	framework.Eventually(t, timeout, fmt.Sprintf("DisruptionBlocked event on %s saying %q", name, want), func(ctx context.Context) (bool, error) {
		notes, err := blockedEvents(ctx, name)
		if err != nil {
			return false, err
		}
		for _, n := range notes {
			if strings.Contains(n, want) {
				return true, nil
			}
		}
		return false, fmt.Errorf("events: %q", notes)
	})
}

// driftEvaluations is Karpenter's count of the drift method's evaluations.
const driftEvaluations = "karpenter_voluntary_disruption_decision_evaluation_duration_seconds_count"

// awaitDriftEvaluations waits until the disruption loop has evaluated the drift method n more
// times than when called: a sign it looked at the cluster again, for a test asserting that
// looking changed nothing.
func awaitDriftEvaluations(t *testing.T, n float64) {
	t.Helper()
	before, err := env.ControllerMetric(t.Context(), driftEvaluations, `method="drift"`)
	if err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, timeout, fmt.Sprintf("%v more evaluations of the drift method", n), func(ctx context.Context) (bool, error) {
		now, err := env.ControllerMetric(ctx, driftEvaluations, `method="drift"`)
		if err != nil {
			return false, err
		}
		if now < before+n {
			return false, fmt.Errorf("%v evaluations, from %v", now, before)
		}
		return true, nil
	})
}
