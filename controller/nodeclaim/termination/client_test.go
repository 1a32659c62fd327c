package termination

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/joinery-dev/joinery/controller/nodeclaim/internal/fixtures"
)

// newClient is fixtures.NewClient plus the pod and VolumeAttachment indexes the drain lists by and, when funcs is not
// nil, interceptors (to refuse evictions as a PodDisruptionBudget would).
func newClient(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	builder := fixtures.NewClientBuilder(t, objs...).WithIndex(&corev1.Pod{}, PodNodeNameField, podNodeName).
		WithIndex(&storagev1.VolumeAttachment{}, VolumeAttachmentNodeNameField, volumeAttachmentNodeName)
	if funcs != nil {
		builder = builder.WithInterceptorFuncs(*funcs)
	}
	return builder.Build()
}
