package plugin

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// The PostFilter status messages: kube-scheduler appends them to the pod's PodScheduled
// condition ("0/3 nodes are available: 3 Insufficient cpu. waiting for NodeClaim default-x7k2p"),
// which is where a user looking at a Pending pod reads what joinery is doing.

func waitingMessage(nodeClaim string) string { return "waiting for NodeClaim " + nodeClaim }

func quarantinedMessage(until time.Time) string {
	return "provisioning quarantined until " + until.UTC().Format(time.RFC3339) + ": planning its batch panicked (see joinery-scheduler's log)"
}

func batchingMessage(pods int) string { return fmt.Sprintf("provisioning: batching %d pod(s)", pods) }

// disabledMessage is what a plugin built without a planner factory says (Options.NewPlanner).
const disabledMessage = "provisioning disabled: no solver is registered in this joinery-scheduler"

// shownInstanceTypes is how many instance types a log line names before summarising.
const shownInstanceTypes = 5

// formatInstanceTypes renders names as Karpenter's logs do: "a, b, c, d, e and 55 other(s)".
func formatInstanceTypes(names []string) string {
	if len(names) <= shownInstanceTypes {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d other(s)", strings.Join(names[:shownInstanceTypes], ", "), len(names)-shownInstanceTypes)
}

// formatPods renders pods as "namespace/name, namespace/name" for logs.
func formatPods(pods []*corev1.Pod) string {
	keys := make([]string, len(pods))
	for i, pod := range pods {
		keys[i] = pod.Namespace + "/" + pod.Name
	}
	return strings.Join(keys, ", ")
}

// filterReasons summarises why the Filters rejected a pod, like kube-scheduler's own
// message: "1 node(s) had untolerated taint, 2 Insufficient cpu". Empty when unknown.
func filterReasons(statuses fwk.NodeToStatusReader, nodes fwk.NodeInfoLister) string {
	if statuses == nil || nodes == nil {
		return ""
	}
	counts := map[string]int{}
	for _, code := range []fwk.Code{fwk.Unschedulable, fwk.UnschedulableAndUnresolvable} {
		infos, err := statuses.NodesForStatusCode(nodes, code)
		if err != nil {
			continue
		}
		for _, info := range infos {
			for _, reason := range statuses.Get(info.Node().Name).Reasons() {
				counts[reason]++
			}
		}
	}
	parts := make([]string, 0, len(counts))
	for reason, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, reason))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
