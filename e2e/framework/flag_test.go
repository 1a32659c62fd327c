package framework

import (
	"flag"
	"testing"
)

// TestKubeconfigFlagShared: with -kubeconfig registered before (as controller-runtime's
// client/config does), the framework reads that flag instead of panicking on a second one.
func TestKubeconfigFlagShared(t *testing.T) {
	for _, registered := range []bool{false, true} {
		fs := flag.NewFlagSet("suite", flag.ContinueOnError)
		var other string
		if registered {
			fs.StringVar(&other, "kubeconfig", "", "registered by another package")
		}
		v := kubeconfigFlagOn(fs)
		if err := fs.Parse([]string{"-kubeconfig", "/tmp/kc"}); err != nil {
			t.Fatal(err)
		}
		if v.String() != "/tmp/kc" {
			t.Errorf("registered before = %v: flag reads %q, want /tmp/kc", registered, v.String())
		}
	}
}
