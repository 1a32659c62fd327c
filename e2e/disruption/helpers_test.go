package disruption

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	watchapi "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// timeout bounds each wait: the loop passes every 10 s and validates a command for 5 s,
// launches take a second or two on kwok; the rest is room for a loaded 2-core machine.
const timeout = 3 * time.Minute

// poolShape is what a test's NodePool may launch: its capacity type and instance types.
type poolShape struct {
	capacityType string
	types        []string
}

// c5OnDemand is the shape of most tests' NodePools.
var c5OnDemand = poolShape{onDemand, []string{"c5.large", "c5.xlarge", "c5.2xlarge"}}

// createNodePool creates a kwok NodePool of c5OnDemand whose nodes carry the group label, with
// spec lines (indented two spaces, under spec) added.
func createNodePool(t *testing.T, name, spec string) {
	t.Helper()
	createNodePoolOf(t, name, spec, c5OnDemand)
}

// createNodePoolOf is createNodePool launching shape.
func createNodePoolOf(t *testing.T, name, spec string, shape poolShape) {
	t.Helper()
	createPool(t, pool{name: name, spec: spec, capacityTypes: []string{shape.capacityType}, types: shape.types})
}

// pool is a kwok NodePool: its nodes carry GroupLabel=group (name when empty) and labels,
// and launch the capacity types and instance types; spec lines (indented two spaces) go
// under spec, templateSpec lines (indented six) under spec.template.spec.
type pool struct {
	name, group, spec, templateSpec string
	labels                          map[string]string
	capacityTypes, types            []string
}

func createPool(t *testing.T, p pool) {
	t.Helper()
	if p.group == "" {
		p.group = p.name
	}
	labels := map[string]string{framework.GroupLabel: p.group}
	maps.Copy(labels, p.labels)
	var quoted [3][]byte
	for i, v := range []any{labels, p.capacityTypes, p.types} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		quoted[i] = b
	}
	env.CreateKWOKNodeClass(t, p.name)
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
%[2]s
  template:
    metadata:
      labels: %[3]s
    spec:
%[6]s
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: %[4]s}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: %[5]s}
`, p.name, p.spec, quoted[0], quoted[1], quoted[2], p.templateSpec))
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
	env.ScaleDeployment(t, ns, name, replicas)
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
// most that were disrupting at once (chosen by a command, or being deleted, and not yet
// InstanceTerminating), every candidate deleted while a replacement of its command was not yet
// initialized, every NodeClaim seen and the disruption reason of every candidate.
type watcher struct {
	mu             sync.Mutex
	maxDisrupting  int
	deletedEarly   []string
	seenCandidates map[string]bool
	// seen is the last state of every NodeClaim of the pool seen, by name.
	seen map[string]karpv1.NodeClaim
	// reasons is the disruption reason of each candidate, by NodeClaim name.
	reasons map[string]string
	// commands is the command of each candidate, by NodeClaim name.
	commands map[string]string
	stop     func()
}

// commandReasonAnnotation is the disruption reason the queue records on a candidate.
const commandReasonAnnotation = "joinery.dev/disruption-reason"

func watch(t *testing.T, pool string) *watcher {
	w := &watcher{seenCandidates: map[string]bool{}, seen: map[string]karpv1.NodeClaim{}, reasons: map[string]string{}, commands: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var once sync.Once
	w.stop = func() { once.Do(func() { cancel(); <-done }) }
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
		w.seen[nc.Name] = nc
		if id := nc.Annotations[disruption.ReplacementForAnnotationKey]; id != "" {
			ok, seen := initialized[id]
			initialized[id] = (ok || !seen) && meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
		}
	}
	disrupting := 0
	for _, nc := range ncs {
		id := nc.Annotations[disruption.CommandAnnotationKey]
		// Counted as budgets count (Karpenter's rule): a NodeClaim whose instance is
		// terminating (drained, its node gone) no longer holds its budget.
		terminating := meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInstanceTerminating)
		if (id != "" || nc.DeletionTimestamp != nil) && !terminating {
			disrupting++
		}
		if id != "" {
			w.seenCandidates[nc.Name] = true
			w.reasons[nc.Name] = nc.Annotations[commandReasonAnnotation]
			w.commands[nc.Name] = id
		}
		if id != "" && nc.DeletionTimestamp != nil {
			if ok, has := initialized[id]; has && !ok {
				w.deletedEarly = append(w.deletedEarly, nc.Name)
			}
		}
	}
	w.maxDisrupting = max(w.maxDisrupting, disrupting)
}

// withReason returns the candidates seen with the disruption reason.
func (w *watcher) withReason(reason string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name, r := range w.reasons {
		if r == reason {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// largestCommand is the most candidates seen in one command.
func (w *watcher) largestCommand() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	sizes := map[string]int{}
	most := 0
	for _, id := range w.commands {
		sizes[id]++
		most = max(most, sizes[id])
	}
	return most
}

// seenNames returns the name of every NodeClaim seen.
func (w *watcher) seenNames() sets.Set[string] {
	w.mu.Lock()
	defer w.mu.Unlock()
	return sets.KeySet(w.seen)
}

// podMonitor watches the pods of a namespace that match a selector for the rest of the test
// and, after every change the API server reports, counts the available ones (Running,
// Ready, not terminating) and notes every pod the scheduler reported Unschedulable. It
// watches rather than polls so that a short dip or a brief Unschedulable is not missed.
type podMonitor struct {
	mu   sync.Mutex
	pods map[types.UID]*corev1.Pod
	// fewestAvailable is the fewest available pods after any change since the monitor synced
	// (synced: the initial list, delivered one pod at a time, is complete).
	fewestAvailable int
	synced          bool
	// unschedulable holds, by pod, the scheduler's message for each pod seen Unschedulable.
	unschedulable map[string]string
	stop          func()
}

func monitorPods(t *testing.T, ns, selector string) *podMonitor {
	t.Helper()
	m := &podMonitor{pods: map[types.UID]*corev1.Pod{}, fewestAvailable: math.MaxInt, unschedulable: map[string]string{}}
	lw := &cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			return env.Client.CoreV1().Pods(ns).List(context.Background(), opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watchapi.Interface, error) {
			opts.LabelSelector = selector
			return env.Client.CoreV1().Pods(ns).Watch(context.Background(), opts)
		},
	}
	informer := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	set := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			m.update(p, false)
		}
	}
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				m.update(p, true)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopCh := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); informer.Run(stopCh) }()
	var once sync.Once
	m.stop = func() { once.Do(func() { close(stopCh); <-done }) }
	t.Cleanup(m.stop)
	// The handler's own HasSynced: every pod of the initial list has reached update.
	if !cache.WaitForCacheSync(t.Context().Done(), reg.HasSynced) {
		t.Fatal("pod monitor did not sync")
	}
	m.mu.Lock()
	m.synced = true
	m.fewestAvailable = m.available()
	m.mu.Unlock()
	return m
}

func (m *podMonitor) update(p *corev1.Pod, deleted bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if deleted {
		delete(m.pods, p.UID)
	} else {
		m.pods[p.UID] = p
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			m.unschedulable[p.Name] = c.Message
		}
	}
	if m.synced {
		m.fewestAvailable = min(m.fewestAvailable, m.available())
	}
}

// available counts the pods Running, Ready and not terminating; m.mu is held.
func (m *podMonitor) available() int {
	n := 0
	for _, p := range m.pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && podReady(p) {
			n++
		}
	}
	return n
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// results stops the monitor and returns the fewest available pods seen and the pods seen
// Unschedulable with the scheduler's message.
func (m *podMonitor) results() (int, map[string]string) {
	m.stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fewestAvailable, maps.Clone(m.unschedulable)
}

func awaitBlockedEvent(t *testing.T, name, want string) {
	t.Helper()
	awaitEvent(t, disruption.EventDisruptionBlocked, name, want)
}

// awaitEvent waits for an event with reason about the named object whose note contains want.
func awaitEvent(t *testing.T, reason, name, want string) {
	t.Helper()
	framework.Eventually(t, timeout, fmt.Sprintf("%s event on %s saying %q", reason, name, want), func(ctx context.Context) (bool, error) {
		notes, err := env.EventNotes(ctx, reason, name)
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

// evaluations is Karpenter's count of a disruption method's evaluations.
const evaluations = "karpenter_voluntary_disruption_decision_evaluation_duration_seconds_count"

// Disruption methods, the method label of evaluations.
const (
	methodDrift            = "drift"
	methodSingleNodeConsol = "single-node-consolidation"
)

// awaitDriftEvaluations waits until the disruption loop has evaluated the drift method n more
// times than when called: a sign it looked at the cluster again, for a test asserting that
// looking changed nothing.
func awaitDriftEvaluations(t *testing.T, n float64) {
	t.Helper()
	awaitEvaluations(t, methodDrift, n)
}

// awaitEvaluations waits until the disruption loop has evaluated method n more times than
// when called. A pass evaluates a method after the methods before it found nothing to do, and
// counts the evaluation before it validates and starts the command found, so the command of
// the evaluation counted first is visible on the cluster by the time a later one is counted.
func awaitEvaluations(t *testing.T, method string, n float64) {
	t.Helper()
	env.RequireLocal(t) // the controller's metrics
	label := fmt.Sprintf("method=%q", method)
	before, err := env.ControllerMetric(t.Context(), evaluations, label)
	if err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, timeout, fmt.Sprintf("%v more evaluations of the %s method", n, method), func(ctx context.Context) (bool, error) {
		now, err := env.ControllerMetric(ctx, evaluations, label)
		if err != nil {
			return false, err
		}
		if now < before+n {
			return false, fmt.Errorf("%v evaluations, from %v", now, before)
		}
		return true, nil
	})
}

// keepOnePodOnEachOf annotates one pod on each of n different nodes with a high
// pod-deletion-cost, so that scaling the Deployment down to n keeps exactly those (the
// ReplicaSet deletes the pods of lower deletion cost first) and leaves n nodes with a pod
// each. It returns those nodes.
func keepOnePodOnEachOf(t *testing.T, ns, selector string, n int) sets.Set[string] {
	t.Helper()
	list, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	nodes := sets.New[string]()
	patch := fmt.Sprintf(`{"metadata": {"annotations": {%q: "1000"}}}`, disruption.PodDeletionCostAnnotationKey)
	for _, p := range list.Items {
		if nodes.Len() == n {
			break
		}
		if p.Spec.NodeName == "" || nodes.Has(p.Spec.NodeName) {
			continue
		}
		if _, err := env.Client.CoreV1().Pods(ns).Patch(t.Context(), p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		nodes.Insert(p.Spec.NodeName)
	}
	if nodes.Len() < n {
		t.Fatalf("pods %q are on %d nodes, the test needs %d", selector, nodes.Len(), n)
	}
	return nodes
}

// cordon sets the node's spec.unschedulable.
func cordon(t *testing.T, node string, unschedulable bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec": {"unschedulable": %t}}`, unschedulable)
	if _, err := env.Client.CoreV1().Nodes().Patch(t.Context(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// setRequests changes the cpu request of the Deployment's pods (a rollout).
func setRequests(t *testing.T, ns, name, cpu string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec": {"template": {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": %q}}}]}}}}`, cpu)
	if _, err := env.Client.AppsV1().Deployments(ns).Patch(t.Context(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("set %s's cpu request: %v", name, err)
	}
}

// createPDB creates a PodDisruptionBudget over the pods labelled app=app.
func createPDB(t *testing.T, ns, name, app string, spec policyv1.PodDisruptionBudgetSpec) {
	t.Helper()
	spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
	if _, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// live returns the NodeClaims not being deleted.
func live(ncs []karpv1.NodeClaim) []karpv1.NodeClaim {
	var out []karpv1.NodeClaim
	for _, nc := range ncs {
		if nc.DeletionTimestamp == nil {
			out = append(out, nc)
		}
	}
	return out
}

// summary names NodeClaims with their instance types, for messages.
func summary(ncs []karpv1.NodeClaim) string {
	var parts []string
	for _, nc := range ncs {
		s := nc.Name + "(" + nc.Labels[corev1.LabelInstanceTypeStable]
		if nc.DeletionTimestamp != nil {
			s += ", deleting"
		}
		parts = append(parts, s+")")
	}
	return strings.Join(parts, " ")
}

// disruptedTotal is Karpenter's count of NodeClaims disrupted, by reason and NodePool.
const disruptedTotal = "karpenter_nodeclaims_disrupted_total"

// disrupted is how many of the NodePool's NodeClaims joinery-controller has deleted for the
// reason (Empty, Underutilized, ...). A counter, it misses no deletion however brief. ok is
// false on another cluster than the local one, whose controller's metrics are not at hand.
func disrupted(t *testing.T, pool, reason string) (n int, ok bool) {
	t.Helper()
	if !env.Local() {
		return 0, false
	}
	v, err := env.ControllerMetric(t.Context(), disruptedTotal, fmt.Sprintf("nodepool=%q", pool), fmt.Sprintf("reason=%q", disruption.MetricReason(reason)))
	if err != nil {
		t.Fatal(err)
	}
	return int(v), true
}

// sampleMax samples the controller metric (summed over the series with labels) every 200 ms
// until the returned function is called, which returns the largest value seen. Gauges a pass
// sets while its command waits for validation are caught this way.
func sampleMax(t *testing.T, name string, labels ...string) func() float64 {
	t.Helper()
	env.RequireLocal(t) // the controller's metrics
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	most := math.Inf(-1)
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if v, err := env.ControllerMetric(ctx, name, labels...); err == nil {
				most = math.Max(most, v)
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	var once sync.Once
	stop := func() float64 { once.Do(func() { cancel(); <-done }); return most }
	t.Cleanup(func() { stop() })
	return stop
}
