package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joinery-dev/joinery/cli/fixtures"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestCommands runs each command on the recorded snapshot (cli/fixtures) and compares its
// output and exit code with a golden file. The goldens are reviewed by hand: `-update`
// rewrites them, the diff is the review.
func TestCommands(t *testing.T) {
	snap := fixtures.Path()
	tests := []struct {
		name string
		args []string
	}{
		{"simulate", []string{"simulate", "--snapshot", snap}},
		{"simulate-json", []string{"simulate", "--snapshot", snap, "-o", "json"}},
		{"simulate-scale", []string{"simulate", "--snapshot", snap, "-f", "testdata/scale.yaml"}},
		{"simulate-quiet", []string{"simulate", "--snapshot", snap, "-f", "testdata/quiet.yaml"}},
		{"simulate-bad-kind", []string{"simulate", "--snapshot", snap, "-f", "testdata/bad-kind.yaml"}},
		{"simulate-no-snapshot", []string{"simulate"}},
		{"simulate-bad-format", []string{"simulate", "--snapshot", snap, "-o", "xml"}},
		{"explain-pod-limits", []string{"explain", "pod", "default/inflate-1", "--snapshot", snap}},
		{"explain-pod-too-large", []string{"explain", "pod", "default/huge", "--snapshot", snap}},
		{"explain-pod-taint", []string{"explain", "pod", "default/batch-job", "--snapshot", snap}},
		{"explain-pod-new-nodeclaim", []string{"explain", "pod", "default/inflate-0", "--snapshot", snap, "-o", "yaml"}},
		{"explain-pod-missing", []string{"explain", "pod", "default/nope", "--snapshot", snap}},
		{"explain-pod-no-namespace", []string{"explain", "pod", "nope", "--snapshot", snap}},
		{"explain-node-pdb", []string{"explain", "node", "node-a", "--snapshot", snap}},
		{"explain-node-consolidated", []string{"explain", "node", "node-b", "--snapshot", snap}},
		{"cost", []string{"cost", "--snapshot", snap}},
		{"cost-json", []string{"cost", "--snapshot", snap, "-o", "json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			got := fmt.Sprintf("$ joinery %s\n%s--- stderr\n%s--- exit %d\n",
				strings.ReplaceAll(strings.Join(tt.args, " "), snap, "cluster.json"), stdout.String(), stderr.String(), code)
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
