package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/chart"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// TestControllerMetricsNeedAuthorization runs a second joinery-controller as the chart
// configures it (--metrics-secure, its ServiceAccount; a standby, since the cluster's
// controller holds the lease) and scrapes its /metrics: refused without a token (401), refused
// to a ServiceAccount without the metrics-reader ClusterRole (403), served to one bound to it.
func TestControllerMetricsNeedAuthorization(t *testing.T) {
	env.RequireLocal(t)
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	metricsPort, probePort := freeLoopbackPort(t), freeLoopbackPort(t)
	logPath := filepath.Join(env.Cluster.LogsDir(), "TestControllerMetricsNeedAuthorization-controller.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "bin", "joinery-controller"),
		"--kubeconfig="+env.Cluster.KubeconfigOf(localcluster.JoineryController),
		"--metrics-secure=true",
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metricsPort),
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probePort),
		"--leader-elect=true",
		"--leader-election-namespace="+env.Cluster.ControllerNamespace(),
		"--cloud-provider=kwok",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
	})

	ns := env.Namespace(t)
	reader := serviceAccountToken(t, ns, "scraper", chart.ReleaseName+"-metrics-reader")
	stranger := serviceAccountToken(t, ns, "stranger", "")
	url := fmt.Sprintf("https://127.0.0.1:%d/metrics", metricsPort)
	// The controller serves a self-signed certificate, as in a pod; Prometheus skips
	// verifying it too (the chart's ServiceMonitor).
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	scrape := func(ctx context.Context, token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	// Wait until it serves: the bound ServiceAccount's scrape succeeds.
	var body string
	framework.Eventually(t, 90*time.Second, "joinery-controller serving metrics to the reader", func(ctx context.Context) (bool, error) {
		code, b, err := scrape(ctx, reader)
		if err != nil {
			return false, err
		}
		body = b
		return code == http.StatusOK, fmt.Errorf("status %d: %.200s", code, b)
	})
	if !strings.Contains(body, "controller_runtime_") && !strings.Contains(body, "go_goroutines") {
		t.Errorf("the reader's scrape has no metrics: %.300s", body)
	}
	for _, tt := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a ServiceAccount without metrics-reader", stranger, http.StatusForbidden},
	} {
		code, b, err := scrape(t.Context(), tt.token)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if code != tt.want {
			t.Errorf("%s: status %d, want %d: %.200s", tt.name, code, tt.want, b)
		}
	}
}

// serviceAccountToken creates ServiceAccount name in ns, binds it to clusterRole unless
// empty, and returns a token for it.
func serviceAccountToken(t *testing.T, ns, name, clusterRole string) string {
	t.Helper()
	ctx := t.Context()
	if _, err := env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if clusterRole != "" {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		}
		if _, err := env.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		})
	}
	token, err := env.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return token.Status.Token
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
