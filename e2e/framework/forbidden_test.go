package framework

import (
	"os"
	"path/filepath"
	"testing"
)

func TestForbiddenRequests(t *testing.T) {
	refused := `E1201 reflector.go:200] "Failed to watch" err="failed to list *v1.DaemonSet: daemonsets.apps is forbidden: User \"system:serviceaccount:joinery:joinery-scheduler\" cannot list resource \"daemonsets\" in API group \"apps\" at the cluster scope"`
	tests := []struct {
		name string
		logs map[string]string
		want int
	}{
		{"clean logs", map[string]string{"joinery-scheduler.log": "I1201 started\n", "joinery-controller.log": `{"msg":"starting"}` + "\n"}, 0},
		{"a refused list", map[string]string{"joinery-scheduler.log": "I1201 started\n" + refused + "\n"}, 1},
		{"at most five lines a binary", map[string]string{"joinery-controller.log": refused + "\n" + refused + "\n" + refused + "\n" + refused + "\n" + refused + "\n" + refused + "\n"}, 5},
		{"another component's refusals are not joinery's", map[string]string{"kube-controller-manager.log": refused + "\n"}, 0},
		{"a JSON log", map[string]string{"joinery-controller.log": `{"level":"error","msg":"Reconciler error","error":"nodes \"a\" is forbidden: User \"system:serviceaccount:joinery:joinery-controller\" cannot patch resource \"nodes\""}` + "\n"}, 1},
		{"a user's refusal is not a ServiceAccount's", map[string]string{"joinery-controller.log": `nodes is forbidden: User "alice" cannot create resource` + "\n"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.logs {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := forbiddenRequests(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Errorf("found %d lines, want %d: %q", len(got), tt.want, got)
			}
		})
	}
}
