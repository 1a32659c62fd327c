package plugin

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/joinery-dev/joinery/apis"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation"
)

// TestPodWaitsWhileItsNodeClaimIsBeingCreated (issue 24): a batch creates its NodeClaims one
// after the other, and the first ones register at once. A pod planned onto a NodeClaim not
// created yet is held by PreFilter meanwhile; before, it was bound to the first roomy node,
// its zone spread counted it in the wrong zone, and a planned pod was rejected elsewhere (the
// mixed-affinity benchmark's empty NodeClaims). Once the batch is published the held pods are
// retried, and each waits for its own NodeClaim.
func TestPodWaitsWhileItsNodeClaimIsBeingCreated(t *testing.T) {
	first, second, other := testPod("ns", "first"), testPod("ns", "second"), testPod("ns", "other")
	env := newTestPlugin(t, true, first, second, other)
	p := env.plugin
	scheme := runtime.NewScheme()
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	type verdict struct {
		code fwk.Code
		msg  string
	}
	during := map[string]verdict{}
	p.client = fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetName() == "default-b" {
				// What PreFilter says while the batch creates its second NodeClaim.
				for _, pod := range []*corev1.Pod{first, second, other} {
					_, status := p.PreFilter(ctx, framework.NewCycleState(), pod, nil)
					during[pod.Name] = verdict{status.Code(), status.Message()}
				}
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	claim := func(name string) *karpv1.NodeClaim {
		return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Labels:          map[string]string{karpv1.NodePoolLabelKey: "default"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodePool", Name: "default", UID: "uid-default"}},
		}}
	}
	p.planner = plannerFunc(func(context.Context, []*corev1.Pod) (*simulation.Plan, error) {
		return &simulation.Plan{NewNodeClaims: []*simulation.PlannedNodeClaim{
			{NodeClaim: claim("default-a"), Pods: []*corev1.Pod{first}},
			{NodeClaim: claim("default-b"), Pods: []*corev1.Pod{second}},
		}}, nil
	})
	postFilterMessage(t, p, first)
	postFilterMessage(t, p, second)
	p.provisionBatch(t.Context())

	want := map[string]verdict{
		"second": {fwk.UnschedulableAndUnresolvable, unpublishedMessage},
		"other":  {fwk.Success, ""},
	}
	for name, w := range want {
		if got := during[name]; got != w {
			t.Errorf("PreFilter for %s while default-b is created: %v %q, want %v %q", name, got.code, got.msg, w.code, w.msg)
		}
	}
	if got := env.activator.keys(); !slices.Contains(got, "ns/second") {
		t.Errorf("retried %v once the batch was published, want ns/second among them", got)
	}
	for pod, nodeClaim := range map[*corev1.Pod]string{first: "default-a", second: "default-b"} {
		if _, status := p.PreFilter(t.Context(), framework.NewCycleState(), pod, nil); status.Message() != waitingMessage(nodeClaim) {
			t.Errorf("after the batch, PreFilter for %s: %q, want it waiting for %s", pod.Name, status.Message(), nodeClaim)
		}
	}
}
