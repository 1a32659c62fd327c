package version

import (
	"strings"
	"testing"
)

func TestStringNamesBinaryAndVersion(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v1.2.3"
	got := String("joinery-controller")
	for _, want := range []string{"joinery-controller", "v1.2.3", "kubernetes "} {
		if !strings.Contains(got, want) {
			t.Errorf("String() = %q, want it to contain %q", got, want)
		}
	}
}
