package cluster

import (
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
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
		as        localcluster.Component
		verb      string
		group     string
		resource  string
		namespace string
		name      string
		want      bool
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
				Verb: tt.verb, Group: tt.group, Resource: tt.resource, Namespace: tt.namespace, Name: tt.name,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectAccessReview as %s: %v", tt.as, err)
		}
		if review.Status.Allowed != tt.want {
			t.Errorf("%s may %s %s.%s %s/%s: %t, want %t (%s)", tt.as, tt.verb, tt.resource, tt.group, tt.namespace, tt.name,
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
