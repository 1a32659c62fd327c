package main

import (
	"strings"
	"testing"
)

// TestScaleDownNote: after the scale-down the view says empty nodes go after the sample
// NodePool's consolidateAfter, read from the cluster, and underutilized ones are consolidated.
func TestScaleDownNote(t *testing.T) {
	tests := []struct {
		consolidateAfter string
		want             string
	}{
		{"30s", "once 30s have passed since a node's last pod change (the NodePool's consolidateAfter), nodes left empty are removed and underutilized ones are consolidated"},
		{"", "once the NodePool's consolidateAfter has passed, nodes left empty are removed and underutilized ones are consolidated"},
		{"Never", "every node stays (the NodePool's consolidateAfter is Never)"},
	}
	for _, tt := range tests {
		got := scaleDownNote(tt.consolidateAfter)
		if !strings.Contains(got, tt.want) {
			t.Errorf("scaleDownNote(%q) = %q, want it to say %q", tt.consolidateAfter, got, tt.want)
		}
	}
}
