package chart_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/joinery-dev/joinery/internal/chart"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// TestKustomizeBuildIsTheChart builds manifests/deploy with kustomize, as `kubectl apply -k`
// does, and checks it yields exactly the chart's objects rendered with DeployValues.
func TestKustomizeBuildIsTheChart(t *testing.T) {
	dir := chartDir(t)
	deploy := filepath.Join(filepath.Dir(filepath.Dir(dir)), "manifests", "deploy")
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), deploy)
	if err != nil {
		t.Fatalf("kustomize build manifests/deploy: %v", err)
	}
	built, err := resources.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	files, err := chart.Render(dir, chart.Namespace, chart.DeployValues())
	if err != nil {
		t.Fatal(err)
	}
	want, got := byKey(t, []byte(chart.Join(files))), byKey(t, built)
	if len(want) == 0 {
		t.Fatal("the chart rendered no objects")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kustomize build manifests/deploy differs from the chart (-chart +kustomize):\n%s", diff)
	}
}

func byKey(t *testing.T, manifests []byte) map[string]map[string]any {
	t.Helper()
	objs, err := localcluster.DecodeManifests(manifests)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, obj := range objs {
		out[key(obj)] = obj.Object
	}
	return out
}

func key(obj *unstructured.Unstructured) string {
	return obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName()
}
