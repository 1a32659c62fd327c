package termination

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	kwokv1alpha1 "github.com/joinery-dev/joinery/apis/kwok/v1alpha1"
	"github.com/joinery-dev/joinery/controller/nodeclaim/internal/fixtures"
	"github.com/joinery-dev/joinery/controller/state"
)

// newClient is fixtures.NewClient plus the pod index the drain lists by and, when funcs is not
// nil, interceptors (to refuse evictions as a PodDisruptionBudget would).
func newClient(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	class := &kwokv1alpha1.KWOKNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: fixtures.NodeClassName},
		Status: kwokv1alpha1.KWOKNodeClassStatus{Conditions: []metav1.Condition{{
			Type: kwokv1alpha1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now(),
		}}},
	}
	builder := fake.NewClientBuilder().
		WithScheme(fixtures.Scheme(t)).
		WithObjects(append([]client.Object{class}, objs...)...).
		WithStatusSubresource(&karpv1.NodeClaim{}, &corev1.Node{}).
		WithIndex(&corev1.Node{}, state.NodeProviderIDField, state.NodeProviderID).
		WithIndex(&karpv1.NodeClaim{}, state.NodeClaimProviderIDField, state.NodeClaimProviderID).
		WithIndex(&corev1.Pod{}, PodNodeNameField, podNodeName)
	if funcs != nil {
		builder = builder.WithInterceptorFuncs(*funcs)
	}
	return builder.Build()
}
