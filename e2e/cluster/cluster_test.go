package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// Timeouts: kwok reacts within a second and the controllers within a few; these leave room
// for a loaded 2-core machine without hiding a hang.
const (
	nodeReadyTimeout = 30 * time.Second
	podTimeout       = 60 * time.Second
)

func TestClusterStarts(t *testing.T) {
	version, err := env.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	t.Logf("API server %s, %s", env.RESTConfig.Host, version.GitVersion)
	if _, err := env.Dynamic.Resource(framework.NodeClaims).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("NodeClaims are not served: %v", err)
	}
	if !env.Local() {
		return
	}
	t.Logf("local cluster ready in %s", env.StartedIn.Round(time.Millisecond))
	if env.StartedIn > time.Minute {
		t.Errorf("start-to-ready took %s, want under 60s", env.StartedIn)
	}
	var names []string
	for _, p := range env.Cluster.Processes() {
		names = append(names, p.Name)
	}
	want := []string{"etcd", "kube-apiserver"}
	for _, c := range localcluster.AllComponents {
		want = append(want, string(c))
	}
	for _, name := range want {
		if !strings.Contains(strings.Join(names, " "), name) {
			t.Errorf("component %s is not running; running: %v", name, names)
		}
	}
}

func TestKwokNodeBecomesReady(t *testing.T) {
	name := framework.UniqueName("kwok-ready")
	env.KwokNode(t, name, "4", "16Gi")
	node := env.AwaitNodeReady(t, name, nodeReadyTimeout)
	if got := node.Status.Allocatable.Cpu().String(); got != "4" {
		t.Errorf("allocatable cpu = %s, want the capacity 4", got)
	}
	var internalIP bool
	for _, addr := range node.Status.Addresses {
		internalIP = internalIP || (addr.Type == corev1.NodeInternalIP && addr.Address != "")
	}
	if !internalIP {
		t.Errorf("node has no InternalIP: %v", node.Status.Addresses)
	}
	if node.Status.NodeInfo.KubeletVersion == "" {
		t.Error("node reports no kubelet version")
	}
}

func TestPodBoundToKwokNodeRuns(t *testing.T) {
	ns := env.Namespace(t)
	node := framework.UniqueName("kwok-pod")
	env.KwokNode(t, node, "4", "16Gi")
	env.AwaitNodeReady(t, node, nodeReadyTimeout)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:   node, // bound by hand: no scheduler involved
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	running := env.AwaitPodRunning(t, ns, "bound", podTimeout)
	if running.Status.HostIP == "" || len(running.Status.ContainerStatuses) != 1 || !running.Status.ContainerStatuses[0].Ready {
		t.Errorf("running pod lacks a host IP or a ready container: %+v", running.Status)
	}

	// A deleted pod goes away: kwok plays the kubelet confirming the deletion.
	if err := env.Client.CoreV1().Pods(ns).Delete(t.Context(), "bound", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	framework.AwaitGone(t, podTimeout, "pod bound", func(ctx context.Context) error {
		_, err := env.Client.CoreV1().Pods(ns).Get(ctx, "bound", metav1.GetOptions{})
		return err
	})
}

func TestDeploymentScaledToFiveRunsFivePods(t *testing.T) {
	ns := env.Namespace(t)
	node := framework.UniqueName("kwok-deploy")
	env.KwokNode(t, node, "8", "32Gi")
	env.AwaitNodeReady(t, node, nodeReadyTimeout)

	labels := map[string]string{"app": "five"}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "five", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					// Only the node of this test: other tests' nodes come and go.
					NodeSelector: map[string]string{corev1.LabelHostname: node},
					Containers: []corev1.Container{{
						Name: "app", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi"),
						}},
					}},
				},
			},
		},
	}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(t.Context(), deployment, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	env.AwaitPods(t, ns, "app=five", 1, podTimeout, framework.RunningOn(node))

	env.ScaleDeployment(t, ns, "five", 5)
	env.AwaitPods(t, ns, "app=five", 5, podTimeout, framework.RunningOn(node))
	framework.Eventually(t, podTimeout, "deployment reports 5 available replicas", func(ctx context.Context) (bool, error) {
		d, err := env.Client.AppsV1().Deployments(ns).Get(ctx, "five", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Status.AvailableReplicas == 5, fmt.Errorf("available %d", d.Status.AvailableReplicas)
	})
}

func TestDeletingOwnerCollectsDependents(t *testing.T) {
	ns := env.Namespace(t)
	owner, err := env.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create owner: %v", err)
	}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
	for i := range 3 {
		dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("dependent-%d", i), Namespace: ns, OwnerReferences: []metav1.OwnerReference{ref},
		}}
		if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), dependent, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create dependent: %v", err)
		}
	}
	if err := env.Client.CoreV1().ConfigMaps(ns).Delete(t.Context(), owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete owner: %v", err)
	}
	framework.Eventually(t, podTimeout, "dependents garbage-collected", func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var left []string
		for _, cm := range list.Items {
			if strings.HasPrefix(cm.Name, "dependent-") {
				left = append(left, cm.Name)
			}
		}
		return len(left) == 0, fmt.Errorf("still present: %v", left)
	})
}

func TestPDBStatusIsComputed(t *testing.T) {
	ns := env.Namespace(t)
	node := framework.UniqueName("kwok-pdb")
	env.KwokNode(t, node, "4", "16Gi")
	env.AwaitNodeReady(t, node, nodeReadyTimeout)
	labels := map[string]string{"app": "guarded"}
	for i := range 3 {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("guarded-%d", i), Namespace: ns, Labels: labels},
			Spec: corev1.PodSpec{
				NodeName:   node,
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			},
		}
		if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod: %v", err)
		}
	}
	minAvailable := intstr.FromInt32(2)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if _, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PDB: %v", err)
	}
	framework.Eventually(t, podTimeout, "PDB status", func(ctx context.Context) (bool, error) {
		got, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "guard", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := got.Status
		done := s.ExpectedPods == 3 && s.CurrentHealthy == 3 && s.DesiredHealthy == 2 && s.DisruptionsAllowed == 1
		return done, fmt.Errorf("expected=%d healthy=%d desired=%d allowed=%d", s.ExpectedPods, s.CurrentHealthy, s.DesiredHealthy, s.DisruptionsAllowed)
	})
}

// TestDeployManifestsAreValid applies manifests/deploy with server-side dry-run: the API
// server validates every object (RBAC rules, probes, the Deployment specs) without running
// them. The namespace is created for real, since dry-run cannot place objects in a namespace
// that does not exist.
func TestDeployManifestsAreValid(t *testing.T) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "manifests", "deploy")
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &kustomization); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if len(kustomization.Resources) == 0 {
		t.Fatal("kustomization.yaml lists no resources")
	}
	applier, err := localcluster.NewApplier(env.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range kustomization.Resources {
		manifest, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatalf("kustomization.yaml lists %s: %v", file, err)
		}
		dryRun := file != "namespace.yaml"
		if err := applier.Apply(t.Context(), manifest, dryRun); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	}
	if _, err := env.Client.AppsV1().Deployments("joinery").Get(t.Context(), "joinery-scheduler", metav1.GetOptions{}); err == nil {
		t.Error("dry-run stored the scheduler Deployment")
	}
}

// TestClusterStopsWithoutLeftovers starts a second local cluster with every component, stops
// it, and checks that every process is gone and every port free.
func TestClusterStopsWithoutLeftovers(t *testing.T) {
	env.RequireLocal(t)
	opts, err := framework.LocalOptions(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	begin := time.Now()
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start a second cluster: %v", err)
	}
	t.Logf("second cluster ready in %s", time.Since(begin).Round(time.Millisecond))
	procs := c.Processes()
	if len(procs) != 2+len(localcluster.AllComponents) {
		t.Errorf("%d processes, want %d: %+v", len(procs), 2+len(localcluster.AllComponents), procs)
	}
	begin = time.Now()
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("stopped in %s", time.Since(begin).Round(time.Millisecond))
	if err := framework.CheckStopped(procs); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, "etcd")); !os.IsNotExist(err) {
		t.Errorf("etcd data left behind (stat: %v)", err)
	}
}
