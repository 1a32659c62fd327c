package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/joinery-dev/joinery/cli/whatif"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/localcluster"
	"github.com/joinery-dev/joinery/simulation"
)

const (
	timeout = 3 * time.Minute
	// holdGate keeps the test's pods away from the scheduler until the snapshot is taken.
	holdGate = "joinery.dev/e2e-hold"
)

// joinery runs bin/joinery against the cluster and returns its stdout and exit code.
func joinery(t *testing.T, args ...string) (string, int) {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := kubeconfigPath(t)
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "joinery"), append(args, "--kubeconfig", kubeconfig)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), 0
	case errors.As(err, &exit):
		if exit.ExitCode() == 2 {
			t.Fatalf("joinery %s: exit 2: %s", strings.Join(args, " "), stderr.String())
		}
		return stdout.String(), exit.ExitCode()
	default:
		t.Fatalf("joinery %s: %v (make build builds bin/joinery)", strings.Join(args, " "), err)
		return "", 0
	}
}

func kubeconfigPath(t *testing.T) string {
	if env.Local() {
		return env.Cluster.KubeconfigPath()
	}
	if k := os.Getenv(framework.KubeconfigEnv); k != "" {
		return k
	}
	t.Skip("needs a kubeconfig file for bin/joinery")
	return ""
}

// schedulerConfig writes joinery-scheduler's configuration on the local cluster, so the CLI
// plans with the same profile and args.
func schedulerConfig(t *testing.T) string {
	t.Helper()
	env.RequireLocal(t)
	data, err := localcluster.SchedulerConfig(env.Cluster.KubeconfigPath(), false)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// createNodePool creates a NodePool and its KWOKNodeClass whose nodes carry the group label.
// extraSpec goes under spec, templateSpec under spec.template.spec.
func createNodePool(t *testing.T, name, group, extraSpec, templateSpec string) {
	t.Helper()
	env.CreateKWOKNodeClass(t, name)
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
  disruption: {consolidateAfter: Never}
%[3]s  template:
    metadata:
      labels: {joinery.dev/e2e-group: %[2]q}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
%[4]s      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large, c5.xlarge, m5.large, m5.xlarge, c5.2xlarge]}
`, name, group, extraSpec, templateSpec))
}

// groupPod is a pod of joinery's scheduler that runs only on the group's nodes.
func groupPod(ns, group, name, cpu string) *corev1.Pod {
	spec := framework.GroupPodSpec(group, cpu, "256Mi")
	spec.SchedulerName = localcluster.JoinerySchedulerName
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{framework.GroupLabel: group}},
		Spec:       spec,
	}
}

func createPod(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := env.Client.CoreV1().Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", p.Name, err)
	}
	return created
}

// claimView is what the comparison looks at: the NodePool, the instance-type options and
// the pods a NodeClaim is for.
type claimView struct {
	NodePool      string
	InstanceTypes []string
	Pods          []string
}

func (c claimView) String() string {
	return fmt.Sprintf("%s %v %v", c.NodePool, c.InstanceTypes, c.Pods)
}

func sortViews(views []claimView) []string {
	out := make([]string, len(views))
	for i, v := range views {
		slices.Sort(v.Pods)
		out[i] = v.String()
	}
	slices.Sort(out)
	return out
}

// TestSimulatePredictsScheduler: pods that will need three new nodes (each holds 1.5 cpu,
// and they keep apart by hostname) are created held by a scheduling gate; a snapshot taken
// then and simulated offline with the gates lifted (a change file) predicts the NodeClaims the
// running scheduler publishes once the gates are lifted: the same NodePool, instance-type
// options and pods.
func TestSimulatePredictsScheduler(t *testing.T) {
	ns := env.Namespace(t)
	group := framework.UniqueName("sim")
	createNodePool(t, group, group, "", "")
	var pods []*corev1.Pod
	var change bytes.Buffer
	for i := range 3 {
		p := groupPod(ns, group, fmt.Sprintf("%s-%d", group, i), "1500m")
		p.Labels["app"] = group
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": group}},
		}}}}
		// The change file holds the pod as it will be once its gate is lifted.
		data, err := yaml.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&change, "---\n%s", data)
		held := p.DeepCopy()
		held.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: holdGate}}
		pods = append(pods, createPod(t, held))
	}
	dir := t.TempDir()
	snap, changes := filepath.Join(dir, "cluster.tar.gz"), filepath.Join(dir, "ungate.yaml")
	if err := os.WriteFile(changes, change.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	joinery(t, "snapshot", "-o", snap)

	out, code := joinery(t, "simulate", "--snapshot", snap, "-f", changes, "--scheduler-config", schedulerConfig(t), "-o", "json")
	if code != 1 {
		t.Fatalf("simulate exit %d, want 1 (the cluster would change)\n%s", code, out)
	}
	var res whatif.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("simulate -o json: %v\n%s", err, out)
	}
	var predicted []claimView
	for _, nc := range res.Provisioning.NewNodeClaims {
		if nc.NodePool == group {
			predicted = append(predicted, claimView{NodePool: nc.NodePool, InstanceTypes: nc.InstanceTypes, Pods: nc.Pods})
		}
	}

	// Lift the gates: the scheduler sees the pods now.
	names := map[types.UID]string{}
	for _, p := range pods {
		p.Spec.SchedulingGates = nil
		updated, err := env.Client.CoreV1().Pods(ns).Update(t.Context(), p, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("lift the gate of %s: %v", p.Name, err)
		}
		names[updated.UID] = ns + "/" + updated.Name
	}
	claims := env.AwaitNodeClaims(t, "karpenter.sh/nodepool="+group, 3, timeout, func(unstructured.Unstructured) error { return nil })
	var live []claimView
	for _, nc := range claims {
		v := claimView{NodePool: nc.GetLabels()["karpenter.sh/nodepool"]}
		reqs, _, _ := unstructured.NestedSlice(nc.Object, "spec", "requirements")
		for _, r := range reqs {
			if m, ok := r.(map[string]any); ok && m["key"] == corev1.LabelInstanceTypeStable {
				for _, val := range m["values"].([]any) {
					v.InstanceTypes = append(v.InstanceTypes, val.(string))
				}
			}
		}
		for _, part := range strings.Split(nc.GetAnnotations()[simulation.PlannedPodsAnnotationKey], ",") {
			if name, ok := names[types.UID(part)]; ok {
				v.Pods = append(v.Pods, name)
			}
		}
		live = append(live, v)
	}
	if got, want := sortViews(predicted), sortViews(live); !slices.Equal(got, want) {
		t.Errorf("simulate predicted NodeClaims\n  %s\nthe scheduler published\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestExplainPod: explain names the cause of each of three pending pods, one held by its
// NodePool's cpu limit, one by a taint it does not tolerate, one by a request no instance
// type holds.
func TestExplainPod(t *testing.T) {
	ns := env.Namespace(t)
	limited, tainted, plain := framework.UniqueName("limited"), framework.UniqueName("tainted"), framework.UniqueName("plain")
	createNodePool(t, limited, limited, "  limits: {cpu: \"1\"}\n", "")
	createNodePool(t, tainted, tainted, "", "      taints: [{key: dedicated, value: special, effect: NoSchedule}]\n")
	createNodePool(t, plain, plain, "", "")
	cases := []struct {
		pod, pool, cpu, want string
	}{
		{"over-limit", limited, "2", "limits reached"},
		{"untolerated", tainted, "1", "taint dedicated=special:NoSchedule not tolerated"},
		{"too-large", plain, "1000", "no instance type fits the pod's requests"},
	}
	for _, c := range cases {
		createPod(t, groupPod(ns, c.pool, c.pod, c.cpu))
	}
	config := schedulerConfig(t)
	for _, c := range cases {
		t.Run(c.pod, func(t *testing.T) {
			out, _ := joinery(t, "explain", "pod", ns+"/"+c.pod, "--scheduler-config", config, "-o", "json")
			var ex whatif.PodExplanation
			if err := json.Unmarshal([]byte(out), &ex); err != nil {
				t.Fatalf("explain -o json: %v\n%s", err, out)
			}
			if ex.State != "pending" {
				t.Fatalf("state %q, want pending\n%s", ex.State, out)
			}
			i := slices.IndexFunc(ex.NodePools, func(v whatif.PoolVerdict) bool { return v.NodePool == c.pool })
			if i < 0 || !strings.Contains(ex.NodePools[i].Verdict, c.want) {
				t.Errorf("nodepool %s verdict does not name %q:\n%s", c.pool, c.want, out)
			}
			// The table says the same.
			table, _ := joinery(t, "explain", "pod", ns+"/"+c.pod, "--scheduler-config", config)
			if !strings.Contains(table, c.want) {
				t.Errorf("explain's table does not name %q:\n%s", c.want, table)
			}
		})
	}
}

// TestExplainNodePDB: explain node on a node whose only pod a PDB allows no eviction of names
// the PDB.
func TestExplainNodePDB(t *testing.T) {
	ns := env.Namespace(t)
	group := framework.UniqueName("held")
	createNodePool(t, group, group, "", "")
	p := groupPod(ns, group, group, "500m")
	p.Labels["app"] = group
	createPod(t, p)
	running := env.AwaitPodRunning(t, ns, p.Name, timeout)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: group + "-pdb"},
		// minAvailable as a count: the PDB controller needs a workload's scale for maxUnavailable.
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": group}}},
	}
	if _, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, timeout, "the PDB's status counts the pod", func(ctx context.Context) (bool, error) {
		got, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, pdb.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		done := st.ObservedGeneration >= got.Generation && st.ExpectedPods == 1 && st.CurrentHealthy == 1 && st.DisruptionsAllowed == 0
		return done, fmt.Errorf("expected=%d healthy=%d allowed=%d", st.ExpectedPods, st.CurrentHealthy, st.DisruptionsAllowed)
	})
	out, _ := joinery(t, "explain", "node", running.Spec.NodeName, "--scheduler-config", schedulerConfig(t))
	if want := fmt.Sprintf("pdb %s/%s prevents pod evictions", ns, pdb.Name); !strings.Contains(out, want) {
		t.Errorf("explain node does not name the PDB (%q):\n%s", want, out)
	}
}

// TestCostSumsLaunchedPrices: cost's total, and the sums of joinery-controller's
// joinery_nodepool_cost_per_hour and karpenter_nodepools_cost_total, are the sum of the NodeClaims' launched prices (the kwok
// catalog's price of each one's instance type, zone and capacity type).
func TestCostSumsLaunchedPrices(t *testing.T) {
	ns := env.Namespace(t)
	group := framework.UniqueName("cost")
	createNodePool(t, group, group, "", "")
	for i := range 2 {
		createPod(t, groupPod(ns, group, fmt.Sprintf("%s-%d", group, i), "3"))
	}
	env.AwaitPods(t, ns, framework.GroupLabel+"="+group, 2, timeout, func(p corev1.Pod) error {
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	provider, err := kwok.New(nil, kwok.Options{})
	if err != nil {
		t.Fatal(err)
	}
	its, err := provider.GetInstanceTypes(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var want float64
	var report struct {
		Total float64 `json:"total"`
	}
	// Every NodeClaim of the cluster counts; wait until all have launched so none is priced
	// by expectation.
	framework.Eventually(t, timeout, "cost matches the launched NodeClaims", func(ctx context.Context) (bool, error) {
		list, err := env.Dynamic.Resource(framework.NodeClaims).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		want = 0
		for _, nc := range list.Items {
			if nc.GetDeletionTimestamp() != nil {
				continue
			}
			l := nc.GetLabels()
			price := math.Inf(1)
			for _, it := range its {
				if it.Name != l[corev1.LabelInstanceTypeStable] {
					continue
				}
				for _, o := range it.Offerings {
					if o.Zone() == l[corev1.LabelTopologyZone] && o.CapacityType() == l["karpenter.sh/capacity-type"] {
						price = math.Min(price, o.Price)
					}
				}
			}
			if math.IsInf(price, 1) {
				return false, fmt.Errorf("NodeClaim %s has not launched (labels %v)", nc.GetName(), l)
			}
			want += price
		}
		out, _ := joinery(t, "cost", "-o", "json", "--scheduler-config", schedulerConfig(t))
		if err := json.Unmarshal([]byte(out), &report); err != nil {
			return false, fmt.Errorf("cost -o json: %w", err)
		}
		if math.Abs(report.Total-want) > 1e-9 {
			return false, fmt.Errorf("cost total %.4f, launched NodeClaims sum %.4f", report.Total, want)
		}
		if env.Local() {
			// joinery-controller exports the same numbers (every 30 s), and Karpenter's
			// gauge from the same computation.
			for _, name := range []string{"joinery_nodepool_cost_per_hour", "karpenter_nodepools_cost_total"} {
				metric, err := env.ControllerMetric(ctx, name)
				if err != nil {
					return false, err
				}
				if math.Abs(metric-want) > 1e-9 {
					return false, fmt.Errorf("%s sums to %.4f, launched NodeClaims to %.4f", name, metric, want)
				}
			}
		}
		return true, nil
	})
	if want == 0 {
		t.Error("no NodeClaim was priced")
	}
}
