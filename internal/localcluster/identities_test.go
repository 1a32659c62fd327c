package localcluster

import (
	"slices"
	"strings"
	"testing"
)

// TestSchedulerRunsWithItsOwnIdentities: with the chart, the scheduler finds the controller's
// record in the chart's namespace; with the AWS provider it signs with the key the emulator
// lets only read (the last AWS_ACCESS_KEY_ID wins), which the emulator is told about.
func TestSchedulerRunsWithItsOwnIdentities(t *testing.T) {
	tests := []struct {
		name          string
		opts          Options
		wantNamespace string
		wantKey       string
	}{
		{"kwok as admin", Options{}, "kube-system", ""},
		{"kwok with the chart", Options{ChartDir: "/charts/joinery"}, ControllerNamespace, ""},
		{"aws with the chart", Options{ChartDir: "/charts/joinery", CloudProvider: CloudProviderAWS}, ControllerNamespace, SchedulerAWSAccessKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Dir = t.TempDir()
			c := &Cluster{opts: tt.opts}
			comp, err := c.joineryScheduler()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(comp.env, "JOINERY_CONTROLLER_NAMESPACE="+tt.wantNamespace) {
				t.Errorf("scheduler env %v: want JOINERY_CONTROLLER_NAMESPACE=%s", comp.env, tt.wantNamespace)
			}
			var key string
			for _, kv := range comp.env {
				if v, ok := strings.CutPrefix(kv, "AWS_ACCESS_KEY_ID="); ok {
					key = v
				}
			}
			if key != tt.wantKey {
				t.Errorf("scheduler signs with %q, want %q", key, tt.wantKey)
			}
			if tt.wantKey == "" {
				return
			}
			args, err := c.awsEmulator().configure()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(args, "--read-only-access-keys="+tt.wantKey) {
				t.Errorf("emulator args %v do not make the scheduler's key read-only", args)
			}
			if slices.Contains(c.joineryController().env, "AWS_ACCESS_KEY_ID="+tt.wantKey) {
				t.Error("the controller signs with the scheduler's read-only key")
			}
		})
	}
}
