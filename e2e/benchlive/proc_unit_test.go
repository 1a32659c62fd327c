package benchlive

import (
	"os"
	"testing"
)

// TestReadUsage reads this process's own figures: the parser must find both.
func TestReadUsage(t *testing.T) {
	u, err := readUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.peakRSSMiB <= 0 || u.cpuSeconds < 0 {
		t.Fatalf("usage %+v", u)
	}
}
