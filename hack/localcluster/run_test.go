package main

import (
	"strings"
	"testing"
)

// TestScaleDownNote: after the scale-down the view says empty nodes go after the sample
// NodePool's consolidateAfter, read from the cluster, and that underutilized ones stay.
func TestScaleDownNote(t *testing.T) {
	tests := []struct {
		consolidateAfter string
		want             string
	}{
		{"30s", "nodes left empty are removed once 30s have passed since their last pod left"},
		{"", "nodes left empty are removed once the NodePool's consolidateAfter has passed"},
		{"Never", "nodes left empty stay (the NodePool's consolidateAfter is Never)"},
	}
	for _, tt := range tests {
		got := scaleDownNote(tt.consolidateAfter)
		if !strings.Contains(got, tt.want) {
			t.Errorf("scaleDownNote(%q) = %q, want it to say %q", tt.consolidateAfter, got, tt.want)
		}
		if !strings.Contains(got, "underutilized stay until consolidation is built") {
			t.Errorf("scaleDownNote(%q) = %q, want it to say underutilized nodes stay", tt.consolidateAfter, got)
		}
	}
}
