package cluster

import (
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/joinery-dev/joinery/internal/localcluster"
)

var nodeClaims = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}

// TestJoineryRunsWithLeastPrivilege asks the API server, as each of joinery's binaries (the
// ServiceAccount token the local cluster runs it with), what it may do: the scheduler
// publishes NodeClaims but cannot delete them or touch the cloud (with the kwok provider the
// cloud is Nodes), and the controller cannot create NodePools or read ConfigMaps outside its
// namespace. The allowed rows show the identities are the binaries' and not the admin.
func TestJoineryRunsWithLeastPrivilege(t *testing.T) {
	env.RequireLocal(t)
	ns := env.Cluster.ControllerNamespace()
	tests := []struct {
		as          localcluster.Component
		verb        string
		group       string
		resource    string
		subresource string
		namespace   string
		name        string
		want        bool
	}{
		{as: localcluster.JoineryScheduler, verb: "create", group: "karpenter.sh", resource: "nodeclaims", want: true},
		{as: localcluster.JoineryScheduler, verb: "patch", group: "karpenter.sh", resource: "nodeclaims", want: true},
		{as: localcluster.JoineryScheduler, verb: "delete", group: "karpenter.sh", resource: "nodeclaims", want: false},
		{as: localcluster.JoineryScheduler, verb: "update", group: "karpenter.sh", resource: "nodepools", want: false},
		{as: localcluster.JoineryScheduler, verb: "create", resource: "nodes", want: false},
		{as: localcluster.JoineryScheduler, verb: "delete", resource: "nodes", want: false},
		{as: localcluster.JoineryScheduler, verb: "get", resource: "configmaps", namespace: ns, name: "joinery-unavailable-offerings", want: true},
		{as: localcluster.JoineryScheduler, verb: "get", resource: "configmaps", namespace: ns, name: "other", want: false},
		{as: localcluster.JoineryScheduler, verb: "get", resource: "secrets", namespace: ns, want: false},
		{as: localcluster.JoineryController, verb: "delete", group: "karpenter.sh", resource: "nodeclaims", want: true},
		{as: localcluster.JoineryController, verb: "create", group: "karpenter.sh", resource: "nodepools", want: false},
		{as: localcluster.JoineryController, verb: "delete", group: "karpenter.sh", resource: "nodepools", want: false},
		{as: localcluster.JoineryController, verb: "create", resource: "nodes", want: true}, // the kwok provider's instances
		{as: localcluster.JoineryController, verb: "patch", resource: "configmaps", namespace: ns, want: true},
		{as: localcluster.JoineryController, verb: "get", resource: "configmaps", namespace: "default", want: false},
		{as: localcluster.JoineryController, verb: "get", resource: "secrets", namespace: ns, want: false},
		// Only the verbs the code uses: status is patched, never updated; PodTemplates are
		// updated, never patched.
		{as: localcluster.JoineryController, verb: "update", group: "karpenter.sh", resource: "nodeoverlays", subresource: "status", want: false},
		{as: localcluster.JoineryController, verb: "patch", group: "karpenter.sh", resource: "nodeoverlays", subresource: "status", want: true},
		{as: localcluster.JoineryController, verb: "get", group: "autoscaling.x-k8s.io", resource: "capacitybuffers", subresource: "status", want: false},
		{as: localcluster.JoineryController, verb: "update", group: "autoscaling.x-k8s.io", resource: "capacitybuffers", subresource: "status", want: false},
		{as: localcluster.JoineryController, verb: "patch", resource: "podtemplates", namespace: "default", want: false},
		{as: localcluster.JoineryScheduler, verb: "update", group: "autoscaling.x-k8s.io", resource: "capacitybuffers", subresource: "status", want: false},
		// blockOwnerDeletion under OwnerReferencesPermissionEnforcement (enabled on the local
		// cluster): NodeClaims owned by NodePools, Nodes by NodeClaims, PodTemplates by buffers.
		{as: localcluster.JoineryScheduler, verb: "update", group: "karpenter.sh", resource: "nodepools", subresource: "finalizers", want: true},
		{as: localcluster.JoineryController, verb: "update", group: "karpenter.sh", resource: "nodepools", subresource: "finalizers", want: true},
		{as: localcluster.JoineryController, verb: "update", group: "karpenter.sh", resource: "nodeclaims", subresource: "finalizers", want: true},
		{as: localcluster.JoineryScheduler, verb: "update", group: "karpenter.sh", resource: "nodeclaims", subresource: "finalizers", want: false},
		{as: localcluster.JoineryController, verb: "update", group: "autoscaling.x-k8s.io", resource: "capacitybuffers", subresource: "finalizers", want: true},
	}
	clients := map[localcluster.Component]*kubernetes.Clientset{}
	for _, tt := range tests {
		client, ok := clients[tt.as]
		if !ok {
			client = kubernetes.NewForConfigOrDie(identityConfig(t, tt.as))
			clients[tt.as] = client
		}
		review, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(), &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: tt.verb, Group: tt.group, Resource: tt.resource, Subresource: tt.subresource, Namespace: tt.namespace, Name: tt.name,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectAccessReview as %s: %v", tt.as, err)
		}
		if review.Status.Allowed != tt.want {
			t.Errorf("%s may %s %s.%s/%s %s/%s: %t, want %t (%s)", tt.as, tt.verb, tt.resource, tt.group, tt.subresource, tt.namespace, tt.name,
				review.Status.Allowed, tt.want, review.Status.Reason)
		}
	}

	// And for real: the API server refuses the scheduler's delete before it looks the
	// NodeClaim up, so a name that does not exist still shows the refusal.
	dyn := dynamic.NewForConfigOrDie(identityConfig(t, localcluster.JoineryScheduler))
	err := dyn.Resource(nodeClaims).Delete(t.Context(), "rbac-probe", metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("joinery-scheduler deleting a NodeClaim: %v, want Forbidden", err)
	}
}

// TestControllerCreatesPodsOnlyAsDryRuns: RBAC lets joinery-controller create pods (it
// dry-runs volatile templates through admission) and the chart's ValidatingAdmissionPolicy
// refuses it every create that is not a dry-run.
func TestControllerCreatesPodsOnlyAsDryRuns(t *testing.T) {
	env.RequireLocal(t)
	client := kubernetes.NewForConfigOrDie(identityConfig(t, localcluster.JoineryController))
	pod := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "dry-run-probe-", Namespace: "default"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
		}
	}
	if _, err := client.CoreV1().Pods("default").Create(t.Context(), pod(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("joinery-controller's dry-run pod create: %v", err)
	}
	// The policy is applied with the chart's roles, before joinery starts; the API server may
	// still be loading it, so a create that got through is removed and tried again.
	admin := kubernetes.NewForConfigOrDie(env.Cluster.RESTConfig())
	var err error
	for range 60 {
		var created *corev1.Pod
		created, err = client.CoreV1().Pods("default").Create(t.Context(), pod(), metav1.CreateOptions{})
		if err != nil {
			break
		}
		_ = admin.CoreV1().Pods("default").Delete(t.Context(), created.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		time.Sleep(time.Second)
	}
	if err == nil {
		t.Fatal("joinery-controller created a real pod: the ValidatingAdmissionPolicy did not refuse it")
	}
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "only as dry-runs") {
		t.Errorf("joinery-controller's pod create: %v, want a refusal by the policy", err)
	}
}

func identityConfig(t *testing.T, comp localcluster.Component) *rest.Config {
	t.Helper()
	path := env.Cluster.KubeconfigOf(comp)
	if path == env.Cluster.KubeconfigPath() {
		t.Fatalf("%s runs with the admin kubeconfig: the local cluster was started without Options.ChartDir", comp)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("%s's kubeconfig: %v", comp, err)
	}
	return cfg
}
