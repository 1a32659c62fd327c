package provisioning

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/localcluster"
	"github.com/joinery-dev/joinery/simulation"
)

// unservedScheduler is a schedulerName no scheduler serves in these tests; the replicas'
// joinery profile provisions for it (schedulerNames), and the test marks its pods
// Unschedulable the way the scheduler that serves it would. Every replica, leader or not,
// then sees the same pods need capacity at the same moment.
const unservedScheduler = "e2e-unserved"

// replica is one joinery-scheduler process the test runs itself.
type replica struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

// logHas reports whether the replica's log holds msg.
func (r *replica) logHas(t *testing.T, msg string) bool {
	t.Helper()
	data, err := os.ReadFile(r.log)
	if err != nil {
		t.Fatalf("reading %s's log: %v", r.name, err)
	}
	return strings.Contains(string(data), msg)
}

func (r *replica) kill(t *testing.T) {
	t.Helper()
	if r.cmd.ProcessState != nil {
		return
	}
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("killing %s: %v", r.name, err)
	}
	<-r.done
}

// haSchedulerConfig is the local cluster's scheduler configuration with leader election on
// (a short lease, so a takeover is quick) and the joinery profile also provisioning for
// unservedScheduler.
func haSchedulerConfig(t *testing.T, lease string) string {
	t.Helper()
	base, err := localcluster.SchedulerConfig(env.Cluster.KubeconfigPath(), false)
	if err != nil {
		t.Fatal(err)
	}
	config := strings.Replace(string(base), "leaderElect: false", fmt.Sprintf(`leaderElect: true
  resourceName: %s
  resourceNamespace: kube-system
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 1s`, lease), 1)
	if config == string(base) {
		t.Fatal("the local cluster's scheduler config has no leaderElect: false to replace")
	}
	// The joinery profile, the first, also provisions for unservedScheduler.
	args := fmt.Sprintf(`  pluginConfig:
  - name: JoineryProvisioner
    args:
      schedulerNames: [%s, %s]
- schedulerName: default-scheduler`, localcluster.JoinerySchedulerName, unservedScheduler)
	if !strings.Contains(config, "\n- schedulerName: default-scheduler") {
		t.Fatal("the local cluster's scheduler config has no default-scheduler profile after joinery's")
	}
	config = strings.Replace(config, "- schedulerName: default-scheduler", args, 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startReplica runs bin/joinery-scheduler with config, logging to a file, until the test ends.
func startReplica(t *testing.T, name, config string) *replica {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	port, err := freeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	logPath := filepath.Join(env.Cluster.LogsDir(), t.Name()[strings.LastIndex(t.Name(), "/")+1:]+"-"+name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := env.Cluster.KubeconfigPath()
	cmd := exec.Command(filepath.Join(root, "bin", "joinery-scheduler"),
		"--config="+config,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+dir,
		"--logging-format=json",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	r := &replica{name: name, cmd: cmd, log: logPath, done: make(chan error, 1)}
	go func() {
		r.done <- cmd.Wait()
		logFile.Close()
	}()
	t.Cleanup(func() { r.kill(t) })
	return r
}

func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Log lines of the plugin (plugin/provision.go) that tell a leader from a standby.
const (
	standbyLog = "provisioning waits for this scheduler to lead"
	leaderLog  = "this scheduler leads: provisioning"
	plannedLog = "found provisionable pod(s)"
)

// createUnservedPods creates n pods of unservedScheduler for the NodePool group, and marks them
// Unschedulable as their scheduler would.
func createUnservedPods(t *testing.T, ns, group, prefix string, n int, cpu string) []types.UID {
	t.Helper()
	var out []types.UID
	for i := range n {
		spec := framework.GroupPodSpec(group, cpu, "256Mi")
		spec.SchedulerName = unservedScheduler
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i), Namespace: ns, Labels: map[string]string{framework.GroupLabel: group}}, Spec: spec}
		created, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod %s: %v", pod.Name, err)
		}
		created.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/1 nodes are available: 1 Insufficient cpu.",
		}}
		if _, err := env.Client.CoreV1().Pods(ns).UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("marking pod %s unschedulable: %v", pod.Name, err)
		}
		out = append(out, created.UID)
	}
	return out
}

// awaitPlanned waits until every pod in uids is planned onto a NodeClaim of pool, failing at
// once when a pod is planned onto two (capacity bought twice).
func awaitPlanned(t *testing.T, pool string, uids []types.UID) []unstructured.Unstructured {
	t.Helper()
	var claims []unstructured.Unstructured
	framework.Eventually(t, 2*time.Minute, "pods planned onto NodeClaims of "+pool, func(ctx context.Context) (bool, error) {
		list, err := env.Dynamic.Resource(framework.NodeClaims).List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=" + pool})
		if err != nil {
			return false, err
		}
		claims = list.Items
		onto := map[types.UID]string{}
		for _, nc := range claims {
			for _, uid := range plannedPods(nc) {
				if other, ok := onto[uid]; ok {
					t.Fatalf("pod %s is planned onto NodeClaims %s and %s", uid, other, nc.GetName())
				}
				onto[uid] = nc.GetName()
			}
		}
		for _, uid := range uids {
			if _, ok := onto[uid]; !ok {
				return false, fmt.Errorf("pod %s is not planned yet (%d NodeClaims)", uid, len(claims))
			}
		}
		return true, nil
	})
	return claims
}

func plannedPods(nc unstructured.Unstructured) []types.UID {
	return simulation.PlannedPods(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: nc.GetAnnotations()}})
}

// TestOnlyTheLeaderProvisions (issue 17, defect 5): two joinery-scheduler replicas with leader
// election run against one API server. Both see the same pods need capacity, but only the
// leader plans and publishes: no pod is planned twice, the standby plans nothing, and the
// NodePool's cpu limit holds. When the leader is killed, the standby takes the lease and
// provisions the next pods.
func TestOnlyTheLeaderProvisions(t *testing.T) {
	env.RequireLocal(t)
	if err := env.Cluster.KillComponent(localcluster.JoineryScheduler); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Cluster.StartComponent(context.Background(), localcluster.JoineryScheduler); err != nil {
			t.Errorf("restarting the suite's joinery-scheduler: %v", err)
		}
	})
	pool := framework.UniqueName("ha")
	createGroupNodePool(t, pool, nodePool{name: pool, cpu: "16"})
	ns := env.Namespace(t)

	config := haSchedulerConfig(t, pool)
	replicas := []*replica{startReplica(t, "a", config), startReplica(t, "b", config)}
	var leader, standby *replica
	framework.Eventually(t, time.Minute, "one replica leading and the other standing by", func(context.Context) (bool, error) {
		for i, r := range replicas {
			other := replicas[1-i]
			if r.logHas(t, leaderLog) && other.logHas(t, standbyLog) && !other.logHas(t, leaderLog) {
				leader, standby = r, other
				return true, nil
			}
		}
		return false, errors.New("no leader yet")
	})
	t.Logf("replica %s leads, %s stands by", leader.name, standby.name)

	// 12 pods of 1 cpu; the NodePool's 16 cpu hold them.
	first := createUnservedPods(t, ns, pool, "first", 12, "1")
	claims := awaitPlanned(t, pool, first)
	if standby.logHas(t, plannedLog) {
		t.Errorf("the standby replica %s planned pods", standby.name)
	}
	checkWithinLimit(t, pool, claims, 16)

	// The leader dies; the standby takes over and provisions the next pods.
	leader.kill(t)
	framework.Eventually(t, time.Minute, "replica "+standby.name+" taking over", func(context.Context) (bool, error) {
		return standby.logHas(t, leaderLog), nil
	})
	second := createUnservedPods(t, ns, pool, "second", 2, "1")
	claims = awaitPlanned(t, pool, append(first, second...))
	checkWithinLimit(t, pool, claims, 16)
}

// checkWithinLimit waits until the NodeClaims of pool are launched and fails when their cpu
// capacity adds up to more than limit.
func checkWithinLimit(t *testing.T, pool string, claims []unstructured.Unstructured, limit int64) {
	t.Helper()
	framework.Eventually(t, 2*time.Minute, "NodeClaims of "+pool+" launched", func(ctx context.Context) (bool, error) {
		var total resource.Quantity
		for _, planned := range claims {
			nc, err := env.Dynamic.Resource(framework.NodeClaims).Get(ctx, planned.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			cpu, _, _ := unstructured.NestedString(nc.Object, "status", "capacity", "cpu")
			if cpu == "" {
				return false, fmt.Errorf("NodeClaim %s is not launched yet", nc.GetName())
			}
			q, err := resource.ParseQuantity(cpu)
			if err != nil {
				return false, fmt.Errorf("NodeClaim %s capacity cpu %q: %w", nc.GetName(), cpu, err)
			}
			total.Add(q)
		}
		if total.Cmp(*resource.NewQuantity(limit, resource.DecimalSI)) > 0 {
			t.Fatalf("NodeClaims of %s have %s cpu, over the NodePool's limit of %d", pool, total.String(), limit)
		}
		return true, nil
	})
}
