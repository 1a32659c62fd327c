package main

import (
	"strings"
	"testing"
)

// TestScaleDownNote (issue 26): after the scale-down the view says empty nodes go after the
// sample NodePool's consolidateAfter, read from the cluster, and what may happen to underused
// ones, pointing at the NEXT column; it promises no "one cheaper node" (spot-to-spot is off by
// default, so the sample's spot node is not replaced).
func TestScaleDownNote(t *testing.T) {
	tests := []struct {
		consolidateAfter string
		want             string
	}{
		{"30s", "once 30s have passed since a node's last pod change (the NodePool's consolidateAfter), nodes left empty are removed, and an underutilized one is deleted when its pods fit on the other nodes"},
		{"", "once the NodePool's consolidateAfter has passed, nodes left empty are removed, and an underutilized one"},
		{"Never", "every node stays (the NodePool's consolidateAfter is Never)"},
	}
	for _, tt := range tests {
		got := scaleDownNote(tt.consolidateAfter)
		if !strings.Contains(got, tt.want) {
			t.Errorf("scaleDownNote(%q) = %q, want it to say %q", tt.consolidateAfter, got, tt.want)
		}
		if strings.Contains(got, "one cheaper node") {
			t.Errorf("scaleDownNote(%q) = %q promises one cheaper node", tt.consolidateAfter, got)
		}
		if tt.consolidateAfter != "Never" && !strings.Contains(got, "NEXT") {
			t.Errorf("scaleDownNote(%q) = %q does not point at the NEXT column", tt.consolidateAfter, got)
		}
	}
}
