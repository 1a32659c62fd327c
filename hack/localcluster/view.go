package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// snapshot is what the live view shows at one moment.
type snapshot struct {
	pods       []corev1.Pod
	nodes      []corev1.Node
	nodeClaims []unstructured.Unstructured
	note       string // what is happening: waiting, scaled down, ...
	prices     pricer
	next       map[string]nextStep // by node: what the next disruption pass does with it, and why
}

// render writes the live view: pending pods, NodeClaims, nodes, running pods, cost per hour.
func render(w io.Writer, s snapshot) {
	var pending, running []corev1.Pod
	for _, pod := range s.pods {
		switch {
		case pod.DeletionTimestamp != nil:
		case pod.Status.Phase == corev1.PodRunning:
			running = append(running, pod)
		case pod.Status.Phase == corev1.PodPending || pod.Status.Phase == "":
			pending = append(pending, pod)
		}
	}
	if s.note != "" {
		fmt.Fprintf(w, "%s\n\n", s.note)
	}

	fmt.Fprintf(w, "PENDING PODS (%d)\n", len(pending))
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tCPU\tMEMORY\tREASON")
	for _, pod := range pending {
		cpu, mem := requests(pod)
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", pod.Name, cpu, mem, pendingReason(pod))
	}
	tw.Flush()

	fmt.Fprintf(w, "\nNODECLAIMS (%d)\n", len(s.nodeClaims))
	tw = tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tINSTANCE TYPE\tCAPACITY\tZONE\tNODE\tREADY\tPRICE/H")
	for _, nc := range s.nodeClaims {
		labels := nc.GetLabels()
		node, _, _ := unstructured.NestedString(nc.Object, "status", "nodeName")
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", nc.GetName(), orDash(labels[corev1.LabelInstanceTypeStable]),
			orDash(labels[karpv1.CapacityTypeLabelKey]), orDash(labels[corev1.LabelTopologyZone]), orDash(node),
			conditionStatus(nc, "Ready"), formatPrice(s.prices.price(nc.GetLabels())))
	}
	tw.Flush()

	podsOnNode := map[string]int{}
	for _, pod := range running {
		podsOnNode[pod.Spec.NodeName]++
	}
	fmt.Fprintf(w, "\nNODES (%d)\n", len(s.nodes))
	tw = tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tREADY\tINSTANCE TYPE\tPODS\tPRICE/H\tNEXT")
	for _, node := range s.nodes {
		next := "…" // not explained yet
		if step, ok := s.next[node.Name]; ok {
			next = step.verdict
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\n", node.Name, nodeReady(node), orDash(node.Labels[corev1.LabelInstanceTypeStable]),
			podsOnNode[node.Name], formatPrice(s.prices.price(node.Labels)), next)
	}
	tw.Flush()
	// Why, in `joinery explain node`'s words: the checks that did not pass.
	for _, node := range s.nodes {
		if step, ok := s.next[node.Name]; ok && len(step.reasons) > 0 {
			fmt.Fprintf(w, "  why %s (joinery explain node %s):\n", node.Name, node.Name)
			for _, r := range step.reasons {
				fmt.Fprintf(w, "    - %s\n", r)
			}
		}
	}

	fmt.Fprintf(w, "\nRUNNING PODS: %d\n", len(running))
	fmt.Fprintf(w, "COST PER HOUR: %s\n", clusterCost(s.nodes, s.prices))
}

// clusterCost sums the nodes' hourly prices; n/a when any node has no known price, since a
// partial sum would understate the bill.
func clusterCost(nodes []corev1.Node, prices pricer) string {
	var total float64
	for _, node := range nodes {
		price, ok := prices.price(node.Labels)
		if !ok {
			return "n/a"
		}
		total += price
	}
	return fmt.Sprintf("$%.3f", total)
}

func formatPrice(price float64, known bool) string {
	if !known {
		return "n/a"
	}
	return fmt.Sprintf("$%.3f", price)
}

func requests(pod corev1.Pod) (cpu, memory string) {
	total := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		for name, q := range c.Resources.Requests {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	c, m := total[corev1.ResourceCPU], total[corev1.ResourceMemory]
	return c.String(), m.String()
}

func pendingReason(pod corev1.Pod) string {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
			return cond.Reason
		}
	}
	if pod.Spec.NodeName != "" {
		return "starting"
	}
	return "-"
}

func nodeReady(node corev1.Node) string {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return string(cond.Status)
		}
	}
	return "Unknown"
}

func conditionStatus(obj unstructured.Unstructured, condType string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		cond, ok := c.(map[string]any)
		if ok && cond["type"] == condType {
			if s, ok := cond["status"].(string); ok {
				return s
			}
		}
	}
	return "Unknown"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// sortByName keeps the view stable between refreshes.
func sortByName[T any](items []T, name func(T) string) {
	slices.SortFunc(items, func(a, b T) int { return strings.Compare(name(a), name(b)) })
}
