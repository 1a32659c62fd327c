package framework

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// logTailLines is how much of each component's log a failure prints.
const logTailLines = 40

// Dump prints what explains a failure: the namespace's events and pods, all nodes and
// NodeClaims, and on the local cluster each component's log tail.
func (e *Env) Dump(t *testing.T, namespace string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "=== state of the cluster when %s failed\n", t.Name())

	if events, err := e.Client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "events: %v\n", err)
	} else {
		slices.SortFunc(events.Items, func(a, b corev1.Event) int { return a.LastTimestamp.Compare(b.LastTimestamp.Time) })
		fmt.Fprintf(&b, "--- events in %s (%d)\n", namespace, len(events.Items))
		for _, ev := range events.Items {
			fmt.Fprintf(&b, "%s %s %s/%s %s: %s\n", ev.LastTimestamp.Format(time.TimeOnly), ev.Type,
				ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Message)
		}
	}
	if pods, err := e.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "pods: %v\n", err)
	} else {
		fmt.Fprintf(&b, "--- pods in %s (%d)\n", namespace, len(pods.Items))
		for _, pod := range pods.Items {
			fmt.Fprintf(&b, "%s phase=%s node=%q ip=%q deleting=%v\n", pod.Name, pod.Status.Phase, pod.Spec.NodeName,
				pod.Status.PodIP, pod.DeletionTimestamp != nil)
		}
	}
	if nodes, err := e.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "nodes: %v\n", err)
	} else {
		fmt.Fprintf(&b, "--- nodes (%d)\n", len(nodes.Items))
		for _, node := range nodes.Items {
			var conds []string
			for _, c := range node.Status.Conditions {
				conds = append(conds, string(c.Type)+"="+string(c.Status))
			}
			fmt.Fprintf(&b, "%s %v taints=%v allocatable=%v\n", node.Name, conds, node.Spec.Taints, node.Status.Allocatable)
		}
	}
	if claims, err := e.Dynamic.Resource(NodeClaims).List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "nodeclaims: %v\n", err)
	} else {
		fmt.Fprintf(&b, "--- NodeClaims (%d)\n", len(claims.Items))
		for _, nc := range claims.Items {
			status, _, _ := unstructuredString(nc.Object, "status")
			fmt.Fprintf(&b, "%s labels=%v status=%s\n", nc.GetName(), nc.GetLabels(), status)
		}
	}
	if e.Local() {
		for _, p := range e.Cluster.Processes() {
			fmt.Fprintf(&b, "--- last %d lines of %s (%s)\n", logTailLines, p.Name, p.Log)
			b.WriteString(tail(p.Log, logTailLines))
		}
	}
	t.Log(b.String())
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read: %v)\n", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}
