package provisioning

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/internal/testpods"
)

// teamLabel labels the anchor's namespace, for namespaceSelector terms.
const teamLabel = "example.com/team"

// TestCrossNamespaceAffinity: a pod with required hostname affinity to a pod of another
// namespace, named by the term's namespaces or selected by the namespace's labels, both
// pending in one batch, is planned onto its partner's NodeClaim, which holds both. The
// follower's namespace sorts before the anchor's, so the solver meets it first.
func TestCrossNamespaceAffinity(t *testing.T) {
	e := testEnv(t)
	cases := []struct {
		name string
		term func(anchorNS string) corev1.PodAffinityTerm
	}{{
		name: "by namespaces",
		term: func(anchorNS string) corev1.PodAffinityTerm {
			return corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: testpods.AppSelector("anchor"), Namespaces: []string{anchorNS}}
		},
	}, {
		name: "by namespaceSelector",
		term: func(anchorNS string) corev1.PodAffinityTerm {
			return corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: testpods.AppSelector("anchor"),
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{teamLabel: anchorNS}}}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := e.newNamespace(t)
			anchorNS := ns + "-anchor"
			e.otherNamespace(t, anchorNS, map[string]string{teamLabel: anchorNS})
			e.create(t, ns, nodePool("default"))
			term := tc.term(anchorNS)
			anchor := e.createPods(t, anchorNS, pod("anchor", "3", "3Gi", labelled("app", "anchor")))
			follower := e.createPods(t, ns, pod("follower", "3", "3Gi", func(p *corev1.Pod) {
				testpods.Affinity(p).PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}
			}))
			e.startScheduler(t, ns, nil)
			a := e.awaitOutcome(t, anchorNS, anchor, nil)
			f := e.awaitOutcome(t, ns, follower, nil)
			e.verifyFidelity(t)
			nc, other := a.claimOf["anchor"], f.claimOf["follower"]
			if nc == nil || other == nil || nc.Name != other.Name {
				t.Fatalf("anchor on %v, follower on %v, want one NodeClaim: %s", nameOf(nc), nameOf(other), f.describe())
			}
			wantRequests(t, nc, "6", "6Gi", 2)
		})
	}
}

func nameOf(nc *karpv1.NodeClaim) string {
	if nc == nil {
		return "<none>"
	}
	return nc.Name
}

// otherNamespace creates a second namespace for a case, labelled, with its default
// ServiceAccount, and deletes its pods when the case ends.
func (e *env) otherNamespace(t *testing.T, ns string, labels map[string]string) {
	t.Helper()
	ctx := t.Context()
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}
	if _, err := e.kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating service account: %v", err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		if err := e.kube.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
			t.Errorf("deleting the pods of %s: %v", ns, err)
		}
	})
}
