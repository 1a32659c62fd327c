package metrics

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/e2e/framework"
)

const timeout = 4 * time.Minute

const (
	controller = "joinery-controller"
	scheduler  = "joinery-scheduler"
)

// need is what the scenario (a scale-up and a drain) must leave of a metric.
type need int

const (
	// optional metrics count what the scenario does not cause (errors, timeouts, disruption
	// decisions, pods still waiting); they are checked when present.
	optional need = iota
	// present metrics have samples (a gauge may be 0).
	present
	// observed metrics have a non-zero value: a counter counted, a histogram or summary
	// observed, a gauge set above 0.
	observed
)

// expected is one metric as Karpenter's reference defines it.
type expected struct {
	binary, name, typ string
	labels            []string
	need              need
}

// optionalBecause says, for every optional row, why the scenario cannot make the series appear
// (binary and name as in want). TestOptionalRowsHaveReasons holds the two together.
var optionalBecause = map[string]string{
	scheduler + " karpenter_scheduler_queue_depth":                              "exists only while a batch is being planned (milliseconds); a scrape cannot be timed to fall inside one",
	scheduler + " karpenter_scheduler_unfinished_work_seconds":                  "as queue_depth",
	controller + " karpenter_nodeclaims_unhealthy_disrupted_total":              "needs node repair: the NodeRepair gate and a node condition unhealthy for its toleration (30 min for Ready); e2e/disruption repairs a node with a 15 s toleration but does not read this counter yet",
	controller + " karpenter_voluntary_disruption_failed_validations_total":     "needs a command the cluster invalidates during its validation delay: a race the test cannot time",
	controller + " karpenter_voluntary_disruption_consolidation_timeouts_total": "needs a consolidation search longer than its time budget",
	controller + " karpenter_cloudprovider_batcher_batch_size":                  "only the AWS provider batches CreateFleet; this suite runs kwok, e2e/aws (TestCreateFleetBatcherMetrics) checks it",
	controller + " karpenter_cloudprovider_batcher_batch_time_seconds":          "only the AWS provider batches CreateFleet; this suite runs kwok, e2e/aws (TestCreateFleetBatcherMetrics) checks it",
}

// nodeLabels are the labels of the per-node gauges.
var nodeLabels = []string{"node_name", "nodepool", "arch", "os", "capacity_type", "instance_type", "region", "zone", "phase"}

var want = []expected{
	{controller, "karpenter_build_info", "gauge", []string{"version", "goversion", "goarch", "commit"}, observed},
	{scheduler, "karpenter_build_info", "gauge", []string{"version", "goversion", "goarch", "commit"}, observed},

	{scheduler, "karpenter_nodeclaims_created_total", "counter", []string{"reason", "nodepool", "min_values_relaxed"}, observed},
	{controller, "karpenter_nodeclaims_created_total", "counter", []string{"reason", "nodepool", "min_values_relaxed"}, observed},
	{controller, "karpenter_nodeclaims_terminated_total", "counter", []string{"nodepool", "capacity_type", "zone"}, observed},
	{controller, "karpenter_nodeclaims_termination_duration_seconds", "histogram", []string{"nodepool"}, observed},
	{controller, "karpenter_nodeclaims_instance_termination_duration_seconds", "histogram", []string{"nodepool"}, observed},
	{controller, "karpenter_nodeclaims_disrupted_total", "counter", []string{"reason", "nodepool", "capacity_type"}, observed},
	{controller, "karpenter_nodeclaims_unhealthy_disrupted_total", "counter", []string{"condition", "nodepool", "capacity_type"}, optional},

	{controller, "karpenter_nodes_created_total", "counter", []string{"nodepool", "zone"}, observed},
	{controller, "karpenter_nodes_terminated_total", "counter", []string{"nodepool", "zone"}, observed},
	{controller, "karpenter_nodes_termination_duration_seconds", "histogram", []string{"nodepool"}, observed},
	{controller, "karpenter_nodes_lifetime_duration_seconds", "histogram", []string{"nodepool"}, observed},
	{controller, "karpenter_nodes_drained_total", "counter", []string{"nodepool"}, observed},
	{controller, "karpenter_nodes_current_lifetime_seconds", "gauge", nodeLabels, observed},
	{controller, "karpenter_nodes_allocatable", "gauge", append(slices.Clone(nodeLabels), "resource_type"), observed},
	{controller, "karpenter_nodes_total_pod_requests", "gauge", append(slices.Clone(nodeLabels), "resource_type"), observed},
	{controller, "karpenter_nodes_total_pod_limits", "gauge", append(slices.Clone(nodeLabels), "resource_type"), observed},
	{controller, "karpenter_nodes_total_daemon_requests", "gauge", append(slices.Clone(nodeLabels), "resource_type"), observed},
	{controller, "karpenter_nodes_total_daemon_limits", "gauge", append(slices.Clone(nodeLabels), "resource_type"), observed},
	{controller, "karpenter_nodes_system_overhead", "gauge", append(slices.Clone(nodeLabels), "resource_type"), present},

	{controller, "karpenter_nodepools_limit", "gauge", []string{"nodepool", "resource_type"}, observed},
	{controller, "karpenter_nodepools_usage", "gauge", []string{"nodepool", "resource_type"}, observed},
	{controller, "karpenter_nodepools_allowed_disruptions", "gauge", []string{"nodepool", "reason"}, present},
	{controller, "karpenter_nodepools_nodes_consuming_budgets", "gauge", []string{"nodepool"}, present},
	{controller, "karpenter_nodepools_cost_total", "gauge", []string{"nodepool"}, observed},
	{controller, "karpenter_cluster_utilization_percent", "gauge", []string{"resource_type"}, observed},

	{controller, "karpenter_pods_state", "gauge", []string{"name", "namespace", "owner", "node", "nodepool", "zone", "arch", "capacity_type", "instance_type", "phase", "ready"}, observed},
	{controller, "karpenter_pods_startup_duration_seconds", "summary", nil, observed},
	{controller, "karpenter_pods_bound_duration_seconds", "histogram", nil, observed},
	{controller, "karpenter_pods_unstarted_time_seconds", "gauge", []string{"name", "namespace"}, present},
	{controller, "karpenter_pods_unbound_time_seconds", "gauge", []string{"name", "namespace"}, present},
	{controller, "karpenter_pods_drained_total", "counter", []string{"reason"}, observed},
	{controller, "karpenter_pods_eviction_requests_total", "counter", []string{"code"}, observed},
	{scheduler, "karpenter_pods_scheduling_decision_duration_seconds", "histogram", nil, observed},
	{scheduler, "karpenter_pods_provisioning_bound_duration_seconds", "histogram", nil, observed},
	{scheduler, "karpenter_pods_provisioning_startup_duration_seconds", "histogram", nil, observed},
	{scheduler, "karpenter_pods_provisioning_unbound_time_seconds", "gauge", []string{"name", "namespace"}, present},
	{scheduler, "karpenter_pods_provisioning_unstarted_time_seconds", "gauge", []string{"name", "namespace"}, present},
	{scheduler, "karpenter_pods_provisioning_scheduling_undecided_time_seconds", "gauge", []string{"name", "namespace"}, present},

	{scheduler, "karpenter_scheduler_scheduling_duration_seconds", "histogram", []string{"controller"}, observed},
	{scheduler, "karpenter_scheduler_queue_depth", "gauge", []string{"controller", "scheduling_id"}, optional},
	{scheduler, "karpenter_scheduler_unfinished_work_seconds", "gauge", []string{"controller", "scheduling_id"}, optional},
	{scheduler, "karpenter_scheduler_ignored_pods_count", "gauge", nil, present},
	{scheduler, "karpenter_scheduler_unschedulable_pods_count", "gauge", []string{"controller"}, present},
	{scheduler, "karpenter_scheduler_pending_pods_by_effective_zone_count", "gauge", []string{"controller", "zone"}, observed},

	{controller, "karpenter_voluntary_disruption_decisions_total", "counter", []string{"decision", "reason", "consolidation_type"}, observed},
	{controller, "karpenter_voluntary_disruption_eligible_nodes", "gauge", []string{"reason"}, present},
	{controller, "karpenter_voluntary_disruption_decision_evaluation_duration_seconds", "histogram", []string{"method", "consolidation_type"}, observed},
	{controller, "karpenter_voluntary_disruption_failed_validations_total", "counter", []string{"consolidation_type"}, optional},
	{controller, "karpenter_voluntary_disruption_decisions_by_nodepool_total", "counter", []string{"nodepool", "decision", "reason", "consolidation_type"}, observed},
	{controller, "karpenter_voluntary_disruption_queue_failures_total", "counter", []string{"decision", "reason", "consolidation_type"}, observed},
	{controller, "karpenter_voluntary_disruption_consolidation_timeouts_total", "counter", []string{"consolidation_type"}, optional},

	{controller, "karpenter_cluster_state_node_count", "gauge", nil, observed},
	{controller, "karpenter_cluster_state_synced", "gauge", nil, observed},
	{controller, "karpenter_cluster_state_unsynced_time_seconds", "gauge", nil, present},

	{controller, "karpenter_cloudprovider_duration_seconds", "histogram", []string{"controller", "method", "provider"}, observed},
	{controller, "karpenter_cloudprovider_errors_total", "counter", []string{"controller", "method", "provider", "error"}, observed},
	{controller, "karpenter_cloudprovider_instance_type_cpu_cores", "gauge", []string{"instance_type"}, observed},
	{controller, "karpenter_cloudprovider_instance_type_memory_bytes", "gauge", []string{"instance_type"}, observed},
	{controller, "karpenter_cloudprovider_instance_type_offering_available", "gauge", []string{"instance_type", "capacity_type", "zone"}, observed},
	{controller, "karpenter_cloudprovider_instance_type_offering_price_estimate", "gauge", []string{"instance_type", "capacity_type", "zone"}, observed},
	{controller, "karpenter_cloudprovider_batcher_batch_size", "histogram", []string{"batcher"}, optional},
	{controller, "karpenter_cloudprovider_batcher_batch_time_seconds", "histogram", []string{"batcher"}, optional},
	{controller, "karpenter_nodepools_cost_tracker_errors_total", "counter", []string{"nodepool"}, observed},
	{controller, "karpenter_interruption_received_messages_total", "counter", []string{"message_type"}, present},
	{controller, "karpenter_interruption_deleted_messages_total", "counter", nil, present},
	{controller, "karpenter_interruption_message_queue_duration_seconds", "histogram", nil, present},
	{controller, "karpenter_interruption_instance_status_unhealthy_total", "counter", []string{"category"}, present},
}

// TestOptionalRowsHaveReasons: a row is optional only with a reason, and every reason is for an
// optional row.
func TestOptionalRowsHaveReasons(t *testing.T) {
	rows := map[string]bool{}
	for _, w := range want {
		key := w.binary + " " + w.name
		rows[key] = true
		if _, ok := optionalBecause[key]; ok != (w.need == optional) {
			t.Errorf("%s: optional = %t, but a reason in optionalBecause = %t", key, w.need == optional, ok)
		}
	}
	for key := range optionalBecause {
		if !rows[key] {
			t.Errorf("optionalBecause names %s, which is not a row", key)
		}
	}
}

// TestKarpenterMetrics scales a Deployment (with a DaemonSet) up from no nodes, drains its node
// by deleting the NodeClaim, drifts the NodePool so every node is replaced, loses a drift
// replacement of a second NodePool (a queue failure), adds a NodeClaim that cannot launch or be
// priced, a pod nothing fits and a pod held by a startup taint, and then checks both binaries'
// metrics against the table above and against docs/metrics.md.
func TestKarpenterMetrics(t *testing.T) {
	env.RequireLocal(t)
	group := framework.UniqueName("metrics")
	createNodePool(t, group)
	ns := env.Namespace(t)
	createDaemonSet(t, ns, group)
	createDeployment(t, ns, group, 2)
	selector := framework.GroupLabel + "=" + group + ",app=web"
	pods := env.AwaitPods(t, ns, selector, 2, timeout, running)

	// Drain: delete the NodeClaim of the first replica's node; its pods are evicted and come
	// back on new capacity.
	drained := pods[0].Spec.NodeName
	if err := env.Dynamic.Resource(framework.NodeClaims).Delete(t.Context(), drained, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete nodeclaim %s: %v", drained, err)
	}
	framework.AwaitGone(t, timeout, "nodeclaim "+drained, func(ctx context.Context) error {
		_, err := env.Dynamic.Resource(framework.NodeClaims).Get(ctx, drained, metav1.GetOptions{})
		return err
	})
	env.AwaitPods(t, ns, selector, 2, timeout, func(pod corev1.Pod) error {
		if err := running(pod); err != nil {
			return err
		}
		if pod.Spec.NodeName == drained {
			return fmt.Errorf("still on the drained node %s", drained)
		}
		return nil
	})

	// A NodeClaim no offering prices, whose NodeClass does not exist: its launch fails (a
	// cloud provider error) and the cost tracker cannot price it while it waits.
	unpriced := createUnpriceableNodeClaim(t, group)
	drift(t, group, unpriced)
	loseReplacement(t, ns, group+"-lost")
	// A pod no instance type fits: it waits, unbound, without a scheduling decision.
	createWaitingPod(t, ns, group, "waiting", "10000")
	// A pod planned onto a NodeClaim whose node keeps a startup taint nobody removes: it waits
	// to bind, with a scheduling decision.
	held := group + "-held"
	createHeldNodePool(t, held)
	createWaitingPod(t, ns, held, "held", "100m")

	documented := readDocs(t)
	scraped := map[string]map[string]*framework.Family{}
	// The gauges are recomputed every few seconds (the cost tracker every 30) and the counters
	// land as the steps finish: wait until every metric the scenario must leave is there.
	framework.Eventually(t, 2*time.Minute, "every metric the scenario causes", func(ctx context.Context) (bool, error) {
		var err error
		if scraped[controller], err = env.ScrapeController(ctx); err != nil {
			return false, err
		}
		if scraped[scheduler], err = env.ScrapeScheduler(ctx); err != nil {
			return false, err
		}
		var missing []string
		for _, w := range want {
			f := scraped[w.binary][w.name]
			switch {
			case w.need >= present && (f == nil || f.Samples == 0):
				missing = append(missing, w.binary+" "+w.name+" (no samples)")
			case w.need == observed && f.Value == 0:
				missing = append(missing, w.binary+" "+w.name+" (nothing counted or observed)")
			}
		}
		if len(missing) > 0 {
			return false, fmt.Errorf("missing %s", strings.Join(missing, ", "))
		}
		return true, nil
	})

	for _, w := range want {
		f := scraped[w.binary][w.name]
		if f == nil {
			continue
		}
		if f.Type != w.typ {
			t.Errorf("%s %s: type %s, want %s", w.binary, w.name, f.Type, w.typ)
		}
		if wantLabels := sorted(w.labels); f.Samples > 0 && !slices.Equal(f.Labels, wantLabels) {
			t.Errorf("%s %s: labels %v, want %v", w.binary, w.name, f.Labels, wantLabels)
		}
	}
	// Every karpenter_* family a binary serves is documented as served, with its type and
	// labels: docs/metrics.md is generated from the code, and this holds it to what runs.
	for _, binary := range []string{controller, scheduler} {
		for name, f := range scraped[binary] {
			if !strings.HasPrefix(name, "karpenter_") {
				continue
			}
			doc, ok := documented[binary][name]
			switch {
			case !ok:
				t.Errorf("%s serves %s, which docs/metrics.md does not list for it", binary, name)
			case doc.Type != f.Type:
				t.Errorf("%s %s: type %s, docs/metrics.md says %s", binary, name, f.Type, doc.Type)
			case f.Samples > 0 && !slices.Equal(f.Labels, doc.Labels):
				t.Errorf("%s %s: labels %v, docs/metrics.md says %v", binary, name, f.Labels, doc.Labels)
			}
		}
	}
	if t.Failed() {
		env.Dump(t, ns)
	}
}

// createNodePool creates a KWOKNodeClass and a NodePool named group whose nodes carry the
// group's label. Its budgets let drift replace every node at once; consolidation is off, so
// nothing but the scenario's own changes disrupts its nodes.
func createNodePool(t *testing.T, group string) {
	t.Helper()
	env.CreateKWOKNodeClass(t, group)
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
  disruption: {consolidateAfter: Never, budgets: [{nodes: "100%%"}]}
  limits: {cpu: "64"}
  template:
    metadata:
      labels: {%[2]s: %[1]q}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
`, group, framework.GroupLabel))
}

// createDeployment creates the Deployment "web" of replicas pods of half a CPU on the group's
// nodes.
func createDeployment(t *testing.T, ns, group string, replicas int32) {
	t.Helper()
	labels := map[string]string{framework.GroupLabel: group, "app": "web"}
	spec := framework.GroupPodSpec(group, "500m", "256Mi")
	// Limits as well as requests, so the nodes' pod-limit gauges have something to sum.
	for i := range spec.Containers {
		spec.Containers[i].Resources.Limits = spec.Containers[i].Resources.Requests.DeepCopy()
	}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(t.Context(), deploy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
}

// createHeldNodePool creates a NodePool named group whose nodes keep a startup taint: no
// daemon removes it, so they never initialize and the pods planned onto them never bind. Its
// limit keeps it to a few NodeClaims.
func createHeldNodePool(t *testing.T, group string) {
	t.Helper()
	env.CreateKWOKNodeClass(t, group)
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
  disruption: {consolidateAfter: Never, budgets: [{nodes: "0"}]}
  limits: {cpu: "8"}
  template:
    metadata:
      labels: {%[2]s: %[1]q}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
      startupTaints:
      - {key: joinery.dev/e2e-not-started, effect: NoSchedule}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
`, group, framework.GroupLabel))
}

// createDaemonSet creates a DaemonSet with requests and limits on the group's nodes, for the
// nodes' daemon gauges.
func createDaemonSet(t *testing.T, ns, group string) {
	t.Helper()
	labels := map[string]string{framework.GroupLabel: group, "app": "agent"}
	spec := framework.GroupPodSpec(group, "100m", "64Mi")
	for i := range spec.Containers {
		spec.Containers[i].Resources.Limits = spec.Containers[i].Resources.Requests.DeepCopy()
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
	if _, err := env.Client.AppsV1().DaemonSets(ns).Create(t.Context(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create daemonset: %v", err)
	}
}

// createUnpriceableNodeClaim creates a NodeClaim of the group's NodePool that asks for an
// instance type no catalog has and names a KWOKNodeClass that does not exist: every launch
// fails with NodeClassNotReadyError, and the cost tracker finds no offering to price it. Its
// taint keeps pods from being planned onto it. It returns its name.
func createUnpriceableNodeClaim(t *testing.T, group string) string {
	t.Helper()
	name := group + "-unpriced"
	env.Create(t, framework.NodeClaims, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: %[1]q
  labels: {karpenter.sh/nodepool: %[2]q}
spec:
  nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
  taints:
  - {key: joinery.dev/e2e-unpriced, effect: NoSchedule}
  requirements:
  - {key: node.kubernetes.io/instance-type, operator: In, values: [joinery-e2e-none]}
  resources:
    requests: {cpu: 100m}
`, name, group))
	return name
}

// drift changes the NodePool's template labels and waits until every NodeClaim of it (but
// skip, which never launches) is a replacement carrying the new label, and the Deployment's
// pods run again.
func drift(t *testing.T, group, skip string) {
	t.Helper()
	original := map[string]bool{}
	for _, nc := range nodeClaimsOf(t, t.Context(), group) {
		original[nc.GetName()] = true
	}
	patch := `{"spec": {"template": {"metadata": {"labels": {"joinery.dev/e2e-drift": "v2"}}}}}`
	if _, err := env.Dynamic.Resource(framework.NodePools).Patch(t.Context(), group, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch nodepool %s: %v", group, err)
	}
	framework.Eventually(t, 2*timeout, "every NodeClaim of "+group+" replaced", func(ctx context.Context) (bool, error) {
		replaced := 0
		for _, nc := range nodeClaimsOf(t, ctx, group) {
			if nc.GetName() == skip {
				continue
			}
			if original[nc.GetName()] || nc.GetLabels()["joinery.dev/e2e-drift"] != "v2" {
				return false, fmt.Errorf("%s not replaced yet", nc.GetName())
			}
			replaced++
		}
		return replaced > 0, fmt.Errorf("no NodeClaims")
	})
}

// loseReplacement runs a Deployment of one pod on a NodePool named group, then drifts the
// NodePool to a template with a startup taint nobody removes, so the drift's replacement
// never initializes, and deletes that replacement: the command, having lost it, is rolled
// back (a queue failure).
func loseReplacement(t *testing.T, ns, group string) {
	t.Helper()
	createNodePool(t, group)
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "lost", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{framework.GroupLabel: group}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{framework.GroupLabel: group}},
				Spec: framework.GroupPodSpec(group, "500m", "256Mi")},
		},
	}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(t.Context(), deploy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	env.AwaitPods(t, ns, framework.GroupLabel+"="+group, 1, timeout, running)
	original := map[string]bool{}
	for _, nc := range nodeClaimsOf(t, t.Context(), group) {
		original[nc.GetName()] = true
	}
	patch := `{"spec": {"template": {"metadata": {"labels": {"joinery.dev/e2e-drift": "v2"}}, "spec": {"startupTaints": [{"key": "joinery.dev/e2e-not-started", "effect": "NoSchedule"}]}}}}`
	if _, err := env.Dynamic.Resource(framework.NodePools).Patch(t.Context(), group, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch nodepool %s: %v", group, err)
	}
	var replacement string
	framework.Eventually(t, timeout, "a replacement NodeClaim of "+group, func(ctx context.Context) (bool, error) {
		for _, nc := range nodeClaimsOf(t, ctx, group) {
			if !original[nc.GetName()] {
				replacement = nc.GetName()
				return true, nil
			}
		}
		return false, fmt.Errorf("none yet")
	})
	if err := env.Dynamic.Resource(framework.NodeClaims).Delete(t.Context(), replacement, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete replacement %s: %v", replacement, err)
	}
	framework.Eventually(t, timeout, "the command that lost "+replacement+" rolled back", func(ctx context.Context) (bool, error) {
		v, err := env.ControllerMetric(ctx, "karpenter_voluntary_disruption_queue_failures_total", `reason="drifted"`)
		if err != nil {
			return false, err
		}
		return v > 0, fmt.Errorf("queue_failures_total = %v", v)
	})
}

func nodeClaimsOf(t *testing.T, ctx context.Context, group string) []unstructured.Unstructured {
	t.Helper()
	list, err := env.Dynamic.Resource(framework.NodeClaims).List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=" + group})
	if err != nil {
		t.Fatalf("list nodeclaims of %s: %v", group, err)
	}
	return list.Items
}

// createWaitingPod creates the pod name of the group requesting cpu.
func createWaitingPod(t *testing.T, ns, group, name, cpu string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{framework.GroupLabel: group}},
		Spec:       framework.GroupPodSpec(group, cpu, "256Mi"),
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
}

func running(pod corev1.Pod) error {
	if pod.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("phase %s", pod.Status.Phase)
	}
	return nil
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// readDocs reads the tables of docs/metrics.md: per binary section, each metric's type and
// labels.
func readDocs(t *testing.T) map[string]map[string]framework.Family {
	t.Helper()
	f, err := os.Open("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]framework.Family{}
	binary := ""
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := scanner.Text()
		if name, ok := strings.CutPrefix(line, "## "); ok {
			binary = name
			out[binary] = map[string]framework.Family{}
			continue
		}
		if !strings.HasPrefix(line, "| `") || binary == "" {
			continue
		}
		cells := strings.Split(line, " | ")
		if len(cells) < 3 {
			t.Fatalf("docs/metrics.md: malformed row %q", line)
		}
		var labels []string
		for _, l := range strings.Split(cells[2], ", ") {
			if l = strings.Trim(l, "`"); l != "—" {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		out[binary][strings.Trim(strings.TrimPrefix(cells[0], "| "), "`")] = framework.Family{Type: cells[1], Labels: labels}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
