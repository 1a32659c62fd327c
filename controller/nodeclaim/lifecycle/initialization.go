package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// ephemeralTaints are put on every new node by the kubelet or the node lifecycle controller and
// removed once the node is healthy; a node that has them is not initialized yet.
var ephemeralTaints = []corev1.Taint{
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
	{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: corev1.TaintEffectNoSchedule},
}

// initialize marks the NodeClaim and its Node initialized once the Node is Ready, its startup
// and ephemeral taints are gone and every extended resource the NodeClaim requested is
// allocatable on it.
func (c *Controller) initialize(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node, conds conditionSetter) (stepResult, error) {
	if isTrue(nc, karpv1.ConditionTypeInitialized) {
		return stepResult{}, nil
	}
	if reason, message := notInitializedBecause(nc, node); reason != "" {
		conds.set(karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, reason, message)
		registered := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeRegistered)
		if registered == nil || registered.Status != metav1.ConditionTrue || c.initializationTTL == 0 {
			return stepResult{stop: true}, nil
		}
		deadline := registered.LastTransitionTime.Add(c.initializationTTL)
		if remaining := deadline.Sub(c.clock.Now()); remaining > 0 {
			return stepResult{stop: true, requeueAfter: remaining}, nil
		}
		// Pods planned onto it wait for it: a node that never initializes must not hold them.
		log.FromContext(ctx).Info("deleting nodeclaim: node did not initialize", "Node", map[string]string{"name": node.Name}, "ttl", c.initializationTTL.String(), "reason", message)
		c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, reasonInitializationTimeout, "Initialize",
			"Node %s did not initialize within %s of registering (%s); deleting the NodeClaim", node.Name, c.initializationTTL, message)
		timedOutTotal.WithLabelValues(phaseInitialization, nc.Labels[karpv1.NodePoolLabelKey]).Inc()
		return stepResult{deleted: true}, c.deleteNodeClaim(ctx, nc)
	}
	if node.Labels[karpv1.NodeInitializedLabelKey] != "true" {
		stored := node.DeepCopy()
		node.Labels[karpv1.NodeInitializedLabelKey] = "true"
		if err := c.client.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return stepResult{stop: true}, fmt.Errorf("labelling node %s initialized: %w", node.Name, err)
		}
	}
	conds.set(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, karpv1.ConditionTypeInitialized, "")
	log.FromContext(ctx).Info("initialized nodeclaim", "provider-id", nc.Status.ProviderID,
		"Node", map[string]string{"name": node.Name}, "allocatable", node.Status.Allocatable)
	return stepResult{}, nil
}

// notInitializedBecause returns the reason and message of the first check node fails, or "".
func notInitializedBecause(nc *karpv1.NodeClaim, node *corev1.Node) (reason, message string) {
	if !nodeReady(node) {
		return reasonNodeNotReady, "Node status is NotReady"
	}
	for _, t := range nc.Spec.StartupTaints {
		if hasTaint(node, t) {
			return reasonStartupTaints, fmt.Sprintf("StartupTaint %q still exists", t.ToString())
		}
	}
	for _, t := range ephemeralTaints {
		if hasTaint(node, t) {
			return reasonEphemeralTaints, fmt.Sprintf("KnownEphemeralTaint %q still exists", t.ToString())
		}
	}
	for _, name := range sortedResourceNames(nc.Spec.Resources.Requests) {
		if !isExtendedResource(name) {
			continue
		}
		if q, ok := node.Status.Allocatable[name]; !ok || q.IsZero() {
			return reasonResourceMissing, fmt.Sprintf("Resource %q was requested but not registered", name)
		}
	}
	return "", ""
}

func nodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasTaint(node *corev1.Node, t corev1.Taint) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(have corev1.Taint) bool { return have.MatchTaint(&t) })
}

// isExtendedResource reports whether name is a resource a device plugin or operator registers
// (a domain-qualified name outside kubernetes.io), as opposed to one the kubelet always reports.
func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.Contains(s, "kubernetes.io/") && !strings.HasPrefix(s, corev1.ResourceHugePagesPrefix)
}

func sortedResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
