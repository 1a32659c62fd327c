package cluster

import (
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/joinery-dev/joinery/internal/chart"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// TestChartDryRuns renders charts/joinery with its defaults and with ci/nondefault-values.yaml
// and has the API server validate and admit every object with server-side dry-run, the CRDs
// included. Each Deployment's pod is dry-run too, in the namespace that enforces the
// restricted Pod Security Standard, so admission shows the pods meet it. Kinds the cluster
// does not serve (the ServiceMonitor's CRD is Prometheus Operator's) are skipped.
func TestChartDryRuns(t *testing.T) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := chart.Dir(root)
	ns, err := env.Client.CoreV1().Namespaces().Get(t.Context(), chart.Namespace, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace %s: %v", chart.Namespace, err)
	}
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Fatalf("namespace %s labels %v: the pods' dry-run would not be held to the restricted standard", chart.Namespace, ns.Labels)
	}
	nondefault := map[string]any{}
	data, err := os.ReadFile(filepath.Join(dir, "ci", "nondefault-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &nondefault); err != nil {
		t.Fatal(err)
	}
	crds, err := filepath.Glob(filepath.Join(dir, "crds", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("the chart's crds/: %v %v", crds, err)
	}
	applier, err := localcluster.NewApplier(env.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	for name, values := range map[string]map[string]any{"defaults": nil, "nondefault-values.yaml": nondefault} {
		t.Run(name, func(t *testing.T) {
			files, err := chart.Render(dir, chart.Namespace, values)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := localcluster.DecodeManifests([]byte(chart.Join(files)))
			if err != nil {
				t.Fatal(err)
			}
			for _, crd := range crds {
				manifest, err := os.ReadFile(crd)
				if err != nil {
					t.Fatal(err)
				}
				if err := applier.Apply(t.Context(), manifest, true); err != nil {
					t.Errorf("CRD %s: %v", filepath.Base(crd), err)
				}
			}
			deployments := 0
			for _, obj := range objs {
				gvk := obj.GroupVersionKind()
				if !applier.HasKind(gvk.Group, gvk.Version, gvk.Kind) {
					t.Logf("skipped %s %s: the cluster does not serve %s", gvk.Kind, obj.GetName(), gvk.GroupVersion())
					continue
				}
				manifest, err := obj.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				if err := applier.Apply(t.Context(), manifest, true); err != nil {
					t.Errorf("%s %s: %v", gvk.Kind, obj.GetName(), err)
				}
				if gvk.Kind != "Deployment" {
					continue
				}
				deployments++
				var d appsv1.Deployment
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
					t.Fatal(err)
				}
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: d.Name + "-", Namespace: d.Namespace, Labels: d.Spec.Template.Labels}, Spec: d.Spec.Template.Spec}
				// A dry-run stores no ServiceAccount, and admission wants the pod's to exist.
				pod.Spec.ServiceAccountName = "default"
				if _, err := env.Client.CoreV1().Pods(d.Namespace).Create(t.Context(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
					t.Errorf("%s's pod: %v", d.Name, err)
				}
			}
			if deployments != 2 {
				t.Errorf("%d Deployments dry-run, want 2", deployments)
			}
		})
	}
}
