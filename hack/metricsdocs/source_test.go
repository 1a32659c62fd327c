package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestScan: definitions resolve constants across packages and label variables, and each
// registration names its registry; a metric with labels no one can read statically fails.
func TestScan(t *testing.T) {
	dir := t.TempDir()
	names := write(t, dir, "names.go", `package names
const Namespace = "karpenter"
`)
	defs := write(t, dir, "defs.go", `package defs

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"example.com/m/names"
)

const sub = "nodes"

var labels = []string{"nodepool", zone}

const zone = "zone"

var (
	created = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: names.Namespace, Subsystem: sub, Name: "created_total", Help: "Nodes " + "created."}, labels)
	depth = metrics.NewGauge(&metrics.GaugeOpts{Namespace: "karpenter", Name: "queue_depth", Help: "Depth."})
)

func init() {
	crmetrics.Registry.MustRegister(created, prometheus.NewHistogram(prometheus.HistogramOpts{Name: "inline_seconds"}))
	legacyregistry.MustRegister(depth)
}
`)
	src := newSource()
	if err := src.parse("example.com/m/names", []string{names}); err != nil {
		t.Fatal(err)
	}
	if err := src.parse("example.com/m/defs", []string{defs}); err != nil {
		t.Fatal(err)
	}
	found, regs, err := src.scan("example.com/m/defs")
	if err != nil {
		t.Fatal(err)
	}
	got := found[key{"example.com/m/defs", "created"}]
	if got.name != "karpenter_nodes_created_total" || got.kind != "counter" || got.help != "Nodes created." || !slices.Equal(got.labels, []string{"nodepool", "zone"}) {
		t.Errorf("created = %+v", got)
	}
	if d := found[key{"example.com/m/defs", "depth"}]; d.name != "karpenter_queue_depth" || d.kind != "gauge" {
		t.Errorf("depth = %+v", d)
	}
	var summary []string
	for _, r := range regs {
		name := r.collector.name
		if r.inline != nil {
			name = r.inline.name
		}
		summary = append(summary, r.registry+" "+name)
	}
	want := []string{controllerRuntimeRegistry + " created", controllerRuntimeRegistry + " inline_seconds", legacyRegistry + " depth"}
	if !slices.Equal(summary, want) {
		t.Errorf("registrations = %v, want %v", summary, want)
	}

	bad := write(t, dir, "bad.go", `package bad
import "github.com/prometheus/client_golang/prometheus"
var v = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "x"}, labelNames())
`)
	if err := src.parse("example.com/m/bad", []string{bad}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := src.scan("example.com/m/bad"); err == nil || !strings.Contains(err.Error(), "cannot evaluate") {
		t.Errorf("labels from a call: %v, want an error saying they cannot be evaluated", err)
	}
}
