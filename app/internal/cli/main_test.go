package cli

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cli/fixtures"
	"github.com/joinery-dev/joinery/cli/snapshot"
	"github.com/joinery-dev/joinery/internal/featuregates"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestCommands runs each command on the recorded snapshot (cli/fixtures) and compares its
// output and exit code with a golden file. The goldens are reviewed by hand: `-update`
// rewrites them, the diff is the review.
func TestCommands(t *testing.T) {
	snap := fixtures.Path()
	pools := morePools(t)
	legacy := legacySnapshot(t)
	tests := []struct {
		name string
		args []string
		// env is FEATURE_GATES, read as the binaries read it.
		env string
	}{
		{"simulate-overlay-gate-off", []string{"simulate", "--snapshot", snap, "-f", "testdata/overlay.yaml"}, ""},
		{"simulate-overlay-gate-env", []string{"simulate", "--snapshot", snap, "-f", "testdata/overlay.yaml"}, "NodeOverlay=true"},
		{"simulate-overlay-flag-wins", []string{"simulate", "--snapshot", snap, "-f", "testdata/overlay.yaml", "--feature-gates", "CapacityBuffer=true"}, "NodeOverlay=true"},
		{"simulate-overlay-legacy", []string{"simulate", "--snapshot", legacy, "-f", "testdata/overlay.yaml"}, "NodeOverlay=true"},
		{"simulate-buffer", []string{"simulate", "--snapshot", snap, "-f", "testdata/buffer.yaml", "--feature-gates", "CapacityBuffer=true"}, ""},
		{"simulate-bad-gate-env", []string{"simulate", "--snapshot", snap}, "NodeOverlay=maybe"},
		{"simulate", []string{"simulate", "--snapshot", snap}, ""},
		{"simulate-json", []string{"simulate", "--snapshot", snap, "-o", "json"}, ""},
		{"simulate-scale", []string{"simulate", "--snapshot", snap, "-f", "testdata/scale.yaml"}, ""},
		{"simulate-quiet", []string{"simulate", "--snapshot", snap, "-f", "testdata/quiet.yaml"}, ""},
		{"simulate-bad-kind", []string{"simulate", "--snapshot", snap, "-f", "testdata/bad-kind.yaml"}, ""},
		{"simulate-bad-budget", []string{"simulate", "--snapshot", snap, "-f", "testdata/bad-budget.yaml"}, ""},
		{"simulate-no-snapshot", []string{"simulate"}, ""},
		{"simulate-bad-format", []string{"simulate", "--snapshot", snap, "-o", "xml"}, ""},
		{"explain-pod-limits", []string{"explain", "pod", "default/inflate-1", "--snapshot", snap}, ""},
		{"explain-pod-too-large", []string{"explain", "pod", "default/huge", "--snapshot", snap}, ""},
		{"explain-pod-taint", []string{"explain", "pod", "default/batch-job", "--snapshot", snap}, ""},
		{"explain-pod-new-nodeclaim", []string{"explain", "pod", "default/inflate-0", "--snapshot", snap, "-o", "yaml"}, ""},
		{"explain-pod-other-pools", []string{"explain", "pod", "default/inflate-0", "--snapshot", pools}, ""},
		{"explain-pod-missing", []string{"explain", "pod", "default/nope", "--snapshot", snap}, ""},
		{"explain-pod-no-namespace", []string{"explain", "pod", "nope", "--snapshot", snap}, ""},
		{"explain-node-pdb", []string{"explain", "node", "node-a", "--snapshot", snap}, ""},
		{"explain-node-consolidated", []string{"explain", "node", "node-b", "--snapshot", snap}, ""},
		{"cost", []string{"cost", "--snapshot", snap}, ""},
		{"cost-json", []string{"cost", "--snapshot", snap, "-o", "json"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(featuregates.EnvVar, tt.env)
			var stdout, stderr bytes.Buffer
			code := Run(tt.args, &stdout, &stderr, nil)
			cmdline := strings.NewReplacer(snap, "cluster.json", pools, "cluster-pools.json", legacy, "cluster-legacy.json").Replace(strings.Join(tt.args, " "))
			if tt.env != "" {
				cmdline = featuregates.EnvVar + "=" + tt.env + " joinery " + cmdline
			} else {
				cmdline = "joinery " + cmdline
			}
			got := fmt.Sprintf("$ %s\n%s--- stderr\n%s--- exit %d\n", cmdline, stdout.String(), stderr.String(), code)
			path := filepath.Join("testdata", "golden", tt.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s:\n%s", path, got)
			}
		})
	}
}

// legacySnapshot writes the recorded snapshot as a joinery before snapshot.Format 2 wrote it.
func legacySnapshot(t *testing.T) string {
	t.Helper()
	s, err := snapshot.ReadFile(fixtures.Path())
	if err != nil {
		t.Fatal(err)
	}
	s.Format = 0
	path := filepath.Join(t.TempDir(), "cluster-legacy.json")
	if err := s.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// morePools writes the recorded snapshot with three more NodePools beside default, which
// serves inflate-0: "arm" (heavier, but no instance type of the catalog is arm64), "full" (its
// cpu limit holds no node) and "spare" (default's twin, tried after it by name).
func morePools(t *testing.T) string {
	t.Helper()
	s, err := snapshot.ReadFile(fixtures.Path())
	if err != nil {
		t.Fatal(err)
	}
	var base *karpv1.NodePool
	for i := range s.NodePools {
		if s.NodePools[i].Name == "default" {
			base = &s.NodePools[i]
		}
	}
	if base == nil {
		t.Fatal("the fixture has no NodePool default")
	}
	derive := func(name string, change func(*karpv1.NodePool)) karpv1.NodePool {
		np := base.DeepCopy()
		np.Name, np.UID = name, types.UID("np-"+name)
		change(np)
		return *np
	}
	s.NodePools = append(s.NodePools,
		derive("arm", func(np *karpv1.NodePool) {
			np.Spec.Weight = ptr.To[int32](50)
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
				Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}})
		}),
		derive("full", func(np *karpv1.NodePool) {
			np.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}),
		derive("spare", func(*karpv1.NodePool) {}),
	)
	path := filepath.Join(t.TempDir(), "cluster-pools.json")
	if err := s.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUnknownPlugin: a --scheduler-config that enables a plugin this binary does not register
// is an error (exit 2) naming the plugin and how to register it, before anything is simulated.
func TestUnknownPlugin(t *testing.T) {
	config := filepath.Join(t.TempDir(), "config.yaml")
	data := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: joinery
  plugins:
    filter:
      enabled:
      - name: MaxPerLabel
`
	if err := os.WriteFile(config, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Run([]string{"simulate", "--snapshot", fixtures.Path(), "--scheduler-config", config}, &stdout, &stderr, nil)
	if code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	for _, want := range []string{`"MaxPerLabel"`, "app.WithPlugin"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q does not name %s", stderr.String(), want)
		}
	}
}
