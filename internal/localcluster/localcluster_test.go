package localcluster

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.tests.joinery.dev
spec:
  group: tests.joinery.dev
  scope: Namespaced
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
`

// gadgetCRD claims the kind Widget a second time, so the API server refuses its names.
const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.tests.joinery.dev
spec:
  group: tests.joinery.dev
  scope: Namespaced
  names: {kind: Widget, listKind: WidgetList, plural: gadgets, singular: gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object}
`

// misnamedCRD's name does not match plural.group, which the API server rejects on create.
const misnamedCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: doohickeys.wrong.joinery.dev
spec:
  group: tests.joinery.dev
  scope: Cluster
  names: {kind: Doohickey, plural: doohickeys}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object}
`

func TestClusterLifecycle(t *testing.T) {
	binDir := requireBinaries(t)
	ctx := t.Context()
	dir := t.TempDir()
	c := startCluster(t, binDir, dir)

	t.Run("namespaces are listed with the admin REST config", func(t *testing.T) {
		client := kubernetes.NewForConfigOrDie(c.RESTConfig())
		assertNamespaces(t, client, "default", "kube-system")
	})

	t.Run("the kubeconfig file reaches the same server", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
		if err != nil {
			t.Fatalf("load kubeconfig: %v", err)
		}
		assertNamespaces(t, kubernetes.NewForConfigOrDie(cfg), "default")
	})

	t.Run("a second cluster in the same dir is refused", func(t *testing.T) {
		_, err := Start(ctx, Options{BinDir: binDir, Dir: dir})
		if err == nil || !strings.Contains(err.Error(), "in use") {
			t.Fatalf("Start in a busy dir: got %v, want an error saying the dir is in use", err)
		}
	})

	t.Run("a CRD is installed, reinstalled and served", func(t *testing.T) {
		crdDir := writeFiles(t, map[string]string{"widgets.yaml": widgetCRD})
		for range 2 { // the second round takes the update path
			if err := c.InstallCRDs(ctx, crdDir); err != nil {
				t.Fatalf("InstallCRDs: %v", err)
			}
		}
		widgets := dynamic.NewForConfigOrDie(c.RESTConfig()).
			Resource(schema.GroupVersionResource{Group: "tests.joinery.dev", Version: "v1", Resource: "widgets"}).
			Namespace("default")
		widget := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "tests.joinery.dev/v1",
			"kind":       "Widget",
			"metadata":   map[string]any{"name": "w"},
			"spec":       map[string]any{"size": int64(2)},
		}}
		if _, err := widgets.Create(ctx, widget, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create Widget: %v", err)
		}
		widget.Object["metadata"] = map[string]any{"name": "too-small"}
		widget.Object["spec"] = map[string]any{"size": int64(0)}
		if _, err := widgets.Create(ctx, widget, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "spec.size") {
			t.Fatalf("create Widget with size 0: got %v, want a schema error naming spec.size", err)
		}
	})

	t.Run("refused CRDs are named in the error", func(t *testing.T) {
		cases := []struct {
			name     string
			manifest string
			want     []string
		}{
			{"invalid on create", misnamedCRD, []string{"doohickeys.wrong.joinery.dev", "metadata.name"}},
			{"names not accepted", gadgetCRD, []string{"gadgets.tests.joinery.dev", "NamesAccepted", "Widget"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				err := c.InstallCRDs(ctx, writeFiles(t, map[string]string{"crd.yaml": tc.manifest}))
				if err == nil {
					t.Fatal("InstallCRDs succeeded, want an error")
				}
				t.Logf("InstallCRDs: %v", err)
				for _, want := range tc.want {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not mention %q", err, want)
					}
				}
			})
		}
	})

	pids, ports := c.pids(), c.ports()
	if running := processesUsing(t, dir); !slices.Equal(sorted(running), sorted(pids)) {
		t.Errorf("processes using %s: %v, want the cluster's %v", dir, running, pids)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	assertStopped(t, pids, ports)
	if running := processesUsing(t, dir); len(running) > 0 {
		t.Errorf("processes %v still use %s after Stop", running, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("etcd data dir still present after Stop (err=%v)", err)
	}
	for _, name := range Binaries {
		if _, err := os.Stat(filepath.Join(c.LogsDir(), name+".log")); err != nil {
			t.Errorf("log of %s: %v", name, err)
		}
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestTwoClustersSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two control planes")
	}
	binDir := requireBinaries(t)
	clusters := make([]*Cluster, 2)
	var wg sync.WaitGroup
	for i := range clusters {
		dir := t.TempDir()
		wg.Go(func() { clusters[i] = startCluster(t, binDir, dir) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	if a, b := clusters[0].ports(), clusters[1].ports(); slices.ContainsFunc(a, func(p int) bool { return slices.Contains(b, p) }) {
		t.Fatalf("clusters share a port: %v and %v", a, b)
	}
	for i, c := range clusters {
		client := kubernetes.NewForConfigOrDie(c.RESTConfig())
		name := []string{"only-in-first", "only-in-second"}[i]
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
			t.Fatalf("cluster %d: create namespace: %v", i, err)
		}
	}
	// Each cluster has its own etcd: a namespace created in one is absent from the other.
	assertNamespaces(t, kubernetes.NewForConfigOrDie(clusters[0].RESTConfig()), "only-in-first")
	assertNoNamespace(t, kubernetes.NewForConfigOrDie(clusters[0].RESTConfig()), "only-in-second")

	for _, c := range clusters {
		pids, ports := c.pids(), c.ports()
		if err := c.Stop(); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		assertStopped(t, pids, ports)
	}
}

func TestStartReportsCrashedComponent(t *testing.T) {
	binDir := requireBinaries(t)
	cases := []struct {
		name         string
		output       string
		wantAttempts int
	}{
		{"crash is reported with the log tail", "E0101 run.go:72] something broke", 1},
		{"lost port race is retried", "listen tcp 127.0.0.1:1: bind: address already in use", portAttempts},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A real etcd, and a kube-apiserver that fails the way the case says.
			fakeBin := t.TempDir()
			if err := os.Symlink(filepath.Join(binDir, "etcd"), filepath.Join(fakeBin, "etcd")); err != nil {
				t.Fatal(err)
			}
			script := "#!/bin/sh\necho '" + tc.output + "' >&2\nexit 1\n"
			if err := os.WriteFile(filepath.Join(fakeBin, "kube-apiserver"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()

			_, err := Start(t.Context(), Options{BinDir: fakeBin, Dir: dir})
			if err == nil {
				t.Fatal("Start succeeded with a failing kube-apiserver")
			}
			for _, want := range []string{"kube-apiserver exited unexpectedly", tc.output} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not contain %q:\n%v", want, err)
				}
			}
			log, readErr := os.ReadFile(filepath.Join(dir, "logs", "kube-apiserver.log"))
			if readErr != nil {
				t.Fatal(readErr)
			}
			if got := strings.Count(string(log), "=== "); got != tc.wantAttempts {
				t.Errorf("kube-apiserver started %d times, want %d", got, tc.wantAttempts)
			}
			if pids := processesUsing(t, dir); len(pids) > 0 {
				t.Errorf("processes %v still use %s after the failed Start", pids, dir)
			}
		})
	}
}

func sorted(ints []int) []int {
	ints = slices.Clone(ints)
	slices.Sort(ints)
	return ints
}

// processesUsing lists the processes whose command line mentions dir.
func processesUsing(t *testing.T, dir string) []int {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, path := range cmdlines {
		cmdline, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(cmdline), dir) {
			continue // gone meanwhile, or not ours
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// requireBinaries returns the directory holding the component binaries. Outside CI a missing
// binary skips the test; in CI (CI=true) it fails it, so a broken `make tools` is noticed.
func requireBinaries(t *testing.T) string {
	t.Helper()
	dir, err := DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	err = CheckBinaries(dir)
	switch {
	case err == nil:
		return dir
	case errors.Is(err, ErrMissingBinary) && os.Getenv("CI") == "":
		t.Skipf("component binaries missing (run `make tools`, or set JOINERY_TOOLS_DIR): %v", err)
	default:
		t.Fatalf("component binaries unusable: %v", err)
	}
	return ""
}

// startCluster starts a cluster in dir and stops it when the test ends.
func startCluster(t *testing.T, binDir, dir string) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	begin := time.Now()
	c, err := Start(ctx, Options{
		BinDir: binDir,
		Dir:    dir,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	if err != nil {
		t.Errorf("Start: %v", err)
		return nil
	}
	t.Logf("etcd + kube-apiserver ready in %s", time.Since(begin).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return c
}

func (c *Cluster) pids() []int {
	var pids []int
	for _, p := range c.processes {
		pids = append(pids, p.pid())
	}
	return pids
}

func (c *Cluster) ports() []int {
	return []int{c.etcdClientPort, c.etcdPeerPort, c.apiserverPort}
}

// assertStopped checks that no process of the cluster is left and its ports are free again.
func assertStopped(t *testing.T, pids, ports []int) {
	t.Helper()
	if len(pids) != len(Binaries) {
		t.Errorf("cluster ran %d processes, want %d", len(pids), len(Binaries))
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after Stop (kill -0: %v)", pid, err)
		}
	}
	for _, port := range ports {
		if PortInUse(port) {
			t.Errorf("port %d still in use after Stop", port)
		}
	}
}

func assertNamespaces(t *testing.T, client kubernetes.Interface, want ...string) {
	t.Helper()
	list, err := client.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list namespaces: %v", err)
	}
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	for _, name := range want {
		if !slices.Contains(names, name) {
			t.Errorf("namespace %q missing; have %v", name, names)
		}
	}
}

func assertNoNamespace(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	_, err := client.CoreV1().Namespaces().Get(t.Context(), name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("get namespace %q: got %v, want NotFound", name, err)
	}
}

// writeFiles writes name → content into a new temporary directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
