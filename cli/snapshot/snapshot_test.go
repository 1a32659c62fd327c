package snapshot_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joinery-dev/joinery/cli/fixtures"
	"github.com/joinery-dev/joinery/cli/snapshot"
)

// TestNoSecrets: capturing a cluster whose pods and DaemonSets carry a secret in env values,
// env references, commands, args and kubectl's last-applied annotation, and which has a
// ConfigMap and a Secret holding it, writes the secret nowhere; env names stay.
func TestNoSecrets(t *testing.T) {
	s, err := fixtures.Capture(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, leak := range []string{fixtures.SecretValue, "app-secret", "app-config", "last-applied-configuration"} {
		if strings.Contains(out, leak) {
			t.Errorf("snapshot contains %q", leak)
		}
	}
	if !strings.Contains(out, `"name": "PASSWORD"`) {
		t.Error("snapshot lost the env variable's name")
	}
	for _, p := range s.Pods {
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				if e.Value != "" || e.ValueFrom != nil {
					t.Errorf("pod %s/%s env %s kept its value", p.Namespace, p.Name, e.Name)
				}
			}
		}
	}
}

// TestFiles: a snapshot survives JSON and .tar.gz files unchanged; other files are refused
// with a clear error.
func TestFiles(t *testing.T) {
	s, err := snapshot.ReadFile(fixtures.Path())
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := s.Encode(&want); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"cluster.json", "cluster.tar.gz"} {
		path := filepath.Join(dir, name)
		if err := s.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		back, err := snapshot.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got bytes.Buffer
		if err := back.Encode(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: the snapshot changed on the way through", name)
		}
	}
	bad := filepath.Join(dir, "pod.json")
	if err := os.WriteFile(bad, []byte(`{"apiVersion":"v1","kind":"Pod"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.ReadFile(bad); err == nil || !strings.Contains(err.Error(), "not a joinery snapshot") {
		t.Errorf("reading a Pod as a snapshot: %v, want 'not a joinery snapshot'", err)
	}
}

// TestCatalogRoundTrip: instance types rebuilt from the file equal the provider's: the same
// requirements, offerings, prices and allocatable.
func TestCatalogRoundTrip(t *testing.T) {
	s, err := snapshot.ReadFile(fixtures.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Catalogs {
		rebuilt := snapshot.FromInstanceTypes(snapshot.Build(c.InstanceTypes))
		for i, it := range snapshot.Build(c.InstanceTypes) {
			if got, want := it.Requirements.String(), snapshot.Build(rebuilt)[i].Requirements.String(); got != want {
				t.Errorf("%s requirements %s, after a round trip %s", it.Name, want, got)
			}
			if len(it.Offerings) != len(c.InstanceTypes[i].Offerings) || allocatableCPU(it.Allocatable()).IsZero() {
				t.Errorf("%s lost offerings or allocatable", it.Name)
			}
		}
	}
}

func allocatableCPU(list corev1.ResourceList) *resource.Quantity {
	q := list[corev1.ResourceCPU]
	return &q
}

// TestCatalogByNodeClass: a NodePool the snapshot did not see gets the catalog of its node
// class; one whose node class has no catalog is refused, naming the class.
func TestCatalogByNodeClass(t *testing.T) {
	s, err := snapshot.ReadFile(fixtures.Path())
	if err != nil {
		t.Fatal(err)
	}
	src := s.Catalog()
	pool := s.NodePools[0].DeepCopy()
	pool.Name = "added"
	its, err := src.GetInstanceTypes(context.Background(), pool)
	if err != nil || len(its) != len(fixtures.InstanceTypes) {
		t.Fatalf("a new NodePool on a recorded class: %d types, %v; want %d", len(its), err, len(fixtures.InstanceTypes))
	}
	pool.Spec.Template.Spec.NodeClassRef.Name = "elsewhere"
	if _, err := src.GetInstanceTypes(context.Background(), pool); err == nil || !strings.Contains(err.Error(), "KWOKNodeClass elsewhere") {
		t.Errorf("a NodePool on an unrecorded class: %v, want an error naming it", err)
	}
}
