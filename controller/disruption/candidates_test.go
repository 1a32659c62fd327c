package disruption

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

func TestCandidates(t *testing.T) {
	np := testNodePool("default")
	tests := []struct {
		name    string
		reason  string
		objs    []client.Object
		want    bool   // node-a is a candidate
		blocked string // else the DisruptionBlocked message, "" when silently skipped
		pods    int    // pods to move when a candidate
	}{
		{name: "plain node", reason: karpv1.DisruptionReasonEmpty, objs: objects(pair(testNode("a", "default"))), want: true},
		{name: "pods to move exclude DaemonSet, finished and static pods", reason: karpv1.DisruptionReasonDrifted, objs: objects(pair(testNode("a", "default")),
			testPod("web", "node-a"), testPod("ds", "node-a", daemon), testPod("done", "node-a", succeeded),
			testPod("static", "node-a", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} })), want: true, pods: 1},
		{name: "standalone NodeClaim", reason: karpv1.DisruptionReasonEmpty, objs: objects(pair(testNode("a", "gone"))), want: false},
		{name: "not initialized", reason: karpv1.DisruptionReasonEmpty, objs: objects(pair(testNode("a", "default", notInitialized))), want: false},
		{name: "being deleted", reason: karpv1.DisruptionReasonEmpty, objs: objects(pair(testNode("a", "default", deleting))), want: false},
		{name: "node annotated do-not-disrupt", reason: karpv1.DisruptionReasonEmpty, objs: objects(pair(testNode("a", "default", nodeAnnotated))),
			blocked: "Cannot disrupt Node: node is annotated with karpenter.sh/do-not-disrupt"},
		{name: "nodeclaim annotated do-not-disrupt", reason: karpv1.DisruptionReasonEmpty, objs: objects(pair(testNode("a", "default", claimAnnotated))),
			blocked: "Cannot disrupt Node: nodeclaim is annotated with karpenter.sh/do-not-disrupt"},
		{name: "do-not-disrupt pod", reason: karpv1.DisruptionReasonDrifted, objs: objects(pair(testNode("a", "default")), testPod("precious", "node-a", podDoNotDisrupt)),
			blocked: "Cannot disrupt Node: pod default/precious has karpenter.sh/do-not-disrupt annotation"},
		{name: "the first do-not-disrupt pod by name is named", reason: karpv1.DisruptionReasonDrifted, objs: objects(pair(testNode("a", "default")),
			testPod("zeta", "node-a", podDoNotDisrupt), testPod("beta", "node-a", podDoNotDisrupt), testPod("alpha", "node-a")),
			blocked: "Cannot disrupt Node: pod default/beta has karpenter.sh/do-not-disrupt annotation"},
		{name: "finished do-not-disrupt pod does not block", reason: karpv1.DisruptionReasonDrifted, objs: objects(pair(testNode("a", "default")), testPod("precious", "node-a", podDoNotDisrupt, succeeded)), want: true},
		{name: "PDB allowing a disruption", reason: karpv1.DisruptionReasonDrifted, objs: objects(pair(testNode("a", "default")), testPod("web", "node-a"), pdb("ok", 1, map[string]string{"app": "web"})), want: true, pods: 1},
		{name: "blocking PDB", reason: karpv1.DisruptionReasonDrifted, objs: objects(pair(testNode("a", "default")), testPod("web", "node-a"), pdb("x", 0, map[string]string{"app": "web"})),
			blocked: "Cannot disrupt Node: pdb default/x prevents pod evictions"},
		// The seeds' example: pod A matches PDB-1 (none allowed) and PDB-2 (one allowed); pod B
		// matches PDB-3 (none allowed); pod C has none. PDB-1 blocks although PDB-2 allows.
		{name: "every PDB of a pod must allow", reason: karpv1.DisruptionReasonDrifted, objs: objects(pair(testNode("a", "default")),
			testPod("a", "node-a", labelled("tier", "x")), testPod("b", "node-a", labelled("tier", "y")), testPod("c", "node-a"),
			pdb("pdb-2", 1, map[string]string{"tier": "x"}), pdb("pdb-1", 0, map[string]string{"app": "a"}), pdb("pdb-3", 0, map[string]string{"tier": "y"})),
			blocked: "Cannot disrupt Node: pdb default/pdb-1 prevents pod evictions"},
		{name: "PDBs of different pods: any blocking one blocks", reason: karpv1.DisruptionReasonDrifted, objs: objects(pair(testNode("a", "default")),
			testPod("a", "node-a"), testPod("b", "node-a"), pdb("for-a", 1, map[string]string{"app": "a"}), pdb("for-b", 0, map[string]string{"app": "b"})),
			blocked: "Cannot disrupt Node: pdb default/for-b prevents pod evictions"},
		{name: "PDB in another namespace does not apply", reason: karpv1.DisruptionReasonDrifted, objs: objects(pair(testNode("a", "default")), testPod("web", "node-a"),
			func() client.Object {
				p := pdb("x", 0, map[string]string{"app": "web"})
				p.Namespace = "other"
				return p
			}()), want: true, pods: 1},
		{name: "blocking PDB on a DaemonSet pod blocks (drain evicts it)", reason: karpv1.DisruptionReasonEmpty, objs: objects(pair(testNode("a", "default")), testPod("ds", "node-a", daemon), pdb("ds", 0, map[string]string{"app": "ds"})),
			blocked: "Cannot disrupt Node: pdb default/ds prevents pod evictions"},
		{name: "drift with terminationGracePeriod ignores a do-not-disrupt pod", reason: karpv1.DisruptionReasonDrifted, objs: objects(pair(testNode("a", "default", withTGP)), testPod("precious", "node-a", podDoNotDisrupt)), want: true, pods: 1},
		{name: "drift with terminationGracePeriod ignores a blocking PDB", reason: karpv1.DisruptionReasonDrifted, objs: objects(pair(testNode("a", "default", withTGP)), testPod("web", "node-a"), pdb("x", 0, map[string]string{"app": "web"})), want: true, pods: 1},
		{name: "emptiness does not get the terminationGracePeriod exception", reason: karpv1.DisruptionReasonEmpty, objs: objects(pair(testNode("a", "default", withTGP)), testPod("precious", "node-a", podDoNotDisrupt)),
			blocked: "Cannot disrupt Node: pod default/precious has karpenter.sh/do-not-disrupt annotation"},
		{name: "a pending pod nominated to the node blocks it (a slow scale-up's empty node)", reason: karpv1.DisruptionReasonEmpty, objs: objects(pair(testNode("a", "default")),
			testPod("coming", "", nominatedTo("node-a"))),
			blocked: "Cannot disrupt Node: state node is nominated for a pending pod"},
		{name: "a pod nominated to another node does not", reason: karpv1.DisruptionReasonEmpty, objs: objects(pair(testNode("a", "default")),
			testPod("coming", "", nominatedTo("node-b"))), want: true},
		{name: "nor does a deleted pending pod nominated to it", reason: karpv1.DisruptionReasonEmpty, objs: objects(pair(testNode("a", "default")),
			testPod("gone", "", nominatedTo("node-a"), func(p *corev1.Pod) {
				p.DeletionTimestamp = ptr.To(metav1.NewTime(epoch))
				p.Finalizers = []string{"test"}
			})), want: true},
		{name: "drift with terminationGracePeriod still honours the node's annotation", reason: karpv1.DisruptionReasonDrifted, objs: objects(pair(testNode("a", "default", withTGP, nodeAnnotated))),
			blocked: "Cannot disrupt Node: node is annotated with karpenter.sh/do-not-disrupt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster, _ := loadCluster(t, append(tt.objs, np)...)
			cands, blocked := cluster.Candidates(tt.reason, classOf(tt.reason))
			if got := len(cands) == 1; got != tt.want {
				t.Fatalf("candidate = %t (%d candidates), want %t; blocked %v", got, len(cands), tt.want, blocked)
			}
			if tt.want && len(cands[0].Pods) != tt.pods {
				t.Errorf("pods to move = %d, want %d", len(cands[0].Pods), tt.pods)
			}
			switch {
			case tt.blocked == "" && len(blocked) > 0:
				t.Errorf("blocked = %v, want none", blocked)
			case tt.blocked != "" && (len(blocked) != 1 || blocked[0].Message != tt.blocked):
				t.Errorf("blocked = %+v, want %q", blocked, tt.blocked)
			}
		})
	}
}

// classOf is the class of the loop's method for reason: drift is eventual, the others graceful.
func classOf(reason string) Class {
	if reason == karpv1.DisruptionReasonDrifted {
		return ClassEventual
	}
	return ClassGraceful
}

func TestComparePodKeysAsJoinedStrings(t *testing.T) {
	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	for _, tc := range []struct{ a, b *corev1.Pod }{
		{pod("a", "x"), pod("a", "y")},
		{pod("a", "x"), pod("a", "x")},
		{pod("a", "x"), pod("a-b", "y")}, // "a/x" > "a-b/y": '/' sorts after '-'
		{pod("a", "xy"), pod("a", "x")},
		{pod("b", ""), pod("a", "zzz")},
		{pod("", "a"), pod("a", "")},
	} {
		want := strings.Compare(tc.a.Namespace+"/"+tc.a.Name, tc.b.Namespace+"/"+tc.b.Name)
		if got := comparePodKeys(tc.a, tc.b); got != want {
			t.Errorf("comparePodKeys(%s/%s, %s/%s) = %d, want %d", tc.a.Namespace, tc.a.Name, tc.b.Namespace, tc.b.Name, got, want)
		}
		if got := comparePodKeys(tc.b, tc.a); got != -want {
			t.Errorf("comparePodKeys(%s/%s, %s/%s) = %d, want %d", tc.b.Namespace, tc.b.Name, tc.a.Namespace, tc.a.Name, got, -want)
		}
	}
}

// nominatedTo makes a pending pod nominated to node.
func nominatedTo(node string) podOption {
	return func(p *corev1.Pod) { p.Status.NominatedNodeName = node }
}
