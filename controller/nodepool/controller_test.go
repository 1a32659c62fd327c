package nodepool

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/joinery-dev/joinery/apis"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	kwokv1alpha1 "github.com/joinery-dev/joinery/apis/kwok/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

const poolName = "default"

// kwokKinds are the kwok provider's node classes, the provider these tests stand on; the
// controller knows no kind of its own.
var kwokKinds = []cloudprovider.NodeClass{&kwokv1alpha1.KWOKNodeClass{}}

// An AWS node class as a NodePool names it; the kwok provider does not launch it.
const (
	ec2NodeClassKind  = "EC2NodeClass"
	ec2NodeClassGroup = "karpenter.k8s.aws"
)

func nodePool(classKind, classGroup, className string) *karpv1.NodePool {
	return &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: poolName, Generation: 3},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
			NodeClassRef: &karpv1.NodeClassReference{Group: classGroup, Kind: classKind, Name: className},
		}}},
	}
}

func kwokPool() *karpv1.NodePool {
	return nodePool(kwokv1alpha1.KWOKNodeClassKind, kwokv1alpha1.Group, "kwok")
}

func kwokClass(name string, ready metav1.ConditionStatus) *kwokv1alpha1.KWOKNodeClass {
	return &kwokv1alpha1.KWOKNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: kwokv1alpha1.KWOKNodeClassStatus{Conditions: []metav1.Condition{{
			Type: kwokv1alpha1.ConditionTypeReady, Status: ready, Reason: "Checked", Message: "checked by test", LastTransitionTime: metav1.Now(),
		}}},
	}
}

func nodeClaim(name, pool, cpu, memory string, deleting bool) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: pool}},
		Status: karpv1.NodeClaimStatus{Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
		}},
	}
	if deleting {
		nc.DeletionTimestamp = &metav1.Time{Time: time.Unix(1000, 0)}
		nc.Finalizers = []string{karpv1.TerminationFinalizer}
	}
	return nc
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// writeCounter counts the writes that reach the fake API server.
type writeCounter struct{ patches, statusPatches int }

func newClient(t *testing.T, writes *writeCounter, objs ...client.Object) client.Client {
	t.Helper()
	return fake.NewClientBuilder().
		WithScheme(newScheme(t)).
		WithObjects(objs...).
		WithStatusSubresource(&karpv1.NodePool{}, &karpv1.NodeClaim{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				writes.patches++
				return c.Patch(ctx, obj, patch, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				writes.statusPatches++
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).
		Build()
}

func reconcileAndGet(t *testing.T, c client.Client, ctl *Controller) *karpv1.NodePool {
	t.Helper()
	if _, err := ctl.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: poolName}}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	np := &karpv1.NodePool{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: poolName}, np); err != nil {
		t.Fatal(err)
	}
	return np
}

func newController(t *testing.T, c client.Client, classes []cloudprovider.NodeClass) *Controller {
	t.Helper()
	ctl, err := New(c, classes, clocktesting.NewFakePassiveClock(time.Unix(2000, 0)))
	if err != nil {
		t.Fatal(err)
	}
	return ctl
}

func TestResourcesSumLiveNodeClaimsOfThePool(t *testing.T) {
	writes := &writeCounter{}
	c := newClient(t, writes, kwokPool(), kwokClass("kwok", metav1.ConditionTrue),
		nodeClaim("a", poolName, "2", "4Gi", false),
		nodeClaim("b", poolName, "8", "32Gi", false),
		nodeClaim("leaving", poolName, "16", "64Gi", true),
		nodeClaim("other-pool", "other", "4", "8Gi", false),
	)
	np := reconcileAndGet(t, c, newController(t, c, kwokKinds))

	want := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("10"),
		corev1.ResourceMemory: resource.MustParse("36Gi"),
		ResourceNodes:         resource.MustParse("2"),
	}
	if len(np.Status.Resources) != len(want) {
		t.Errorf("resources = %v, want %v", np.Status.Resources, want)
	}
	for name, quantity := range want {
		if got := np.Status.Resources[name]; got.Cmp(quantity) != 0 {
			t.Errorf("resources[%s] = %s, want %s", name, got.String(), quantity.String())
		}
	}
	if np.Status.Nodes == nil || *np.Status.Nodes != 2 {
		t.Errorf("nodes = %v, want 2", np.Status.Nodes)
	}
}

func TestEmptyPoolCountsZeroNodes(t *testing.T) {
	c := newClient(t, &writeCounter{}, kwokPool(), kwokClass("kwok", metav1.ConditionTrue))
	np := reconcileAndGet(t, c, newController(t, c, kwokKinds))
	if np.Status.Nodes == nil || *np.Status.Nodes != 0 {
		t.Errorf("nodes = %v, want 0", np.Status.Nodes)
	}
	if got := np.Status.Resources[ResourceNodes]; got.Value() != 0 || len(np.Status.Resources) != 1 {
		t.Errorf("resources = %v, want only nodes: 0", np.Status.Resources)
	}
}

func TestConditions(t *testing.T) {
	classWithoutConditions := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "kwok"}}
	tests := []struct {
		name           string
		pool           *karpv1.NodePool
		objs           []client.Object
		kinds          []cloudprovider.NodeClass
		wantStatus     metav1.ConditionStatus
		wantReason     string
		wantMessageHas string
	}{{
		name: "ready class", pool: kwokPool(), objs: []client.Object{kwokClass("kwok", metav1.ConditionTrue)}, kinds: kwokKinds,
		wantStatus: metav1.ConditionTrue, wantReason: karpv1.ConditionTypeNodeClassReady,
	}, {
		name: "missing class", pool: kwokPool(), kinds: kwokKinds,
		wantStatus: metav1.ConditionFalse, wantReason: reasonNodeClassNotFound, wantMessageHas: "KWOKNodeClass kwok not found",
	}, {
		name: "class not ready", pool: kwokPool(), objs: []client.Object{kwokClass("kwok", metav1.ConditionFalse)}, kinds: kwokKinds,
		wantStatus: metav1.ConditionFalse, wantReason: reasonNodeClassNotReady, wantMessageHas: "KWOKNodeClass kwok is not ready: Ready=False (Checked: checked by test)",
	}, {
		name: "class without conditions", pool: kwokPool(), objs: []client.Object{classWithoutConditions}, kinds: kwokKinds,
		wantStatus: metav1.ConditionFalse, wantReason: reasonNodeClassNotReady, wantMessageHas: "KWOKNodeClass kwok has no Ready condition",
	}, {
		name: "kind the provider does not launch", pool: nodePool(ec2NodeClassKind, ec2NodeClassGroup, "ec2"), kinds: kwokKinds,
		wantStatus: metav1.ConditionFalse, wantReason: reasonUnsupportedNodeClass, wantMessageHas: "EC2NodeClass.karpenter.k8s.aws",
	}, {
		name: "unknown kind", pool: nodePool("FooNodeClass", "example.com", "foo"), kinds: kwokKinds,
		wantStatus: metav1.ConditionFalse, wantReason: reasonUnsupportedNodeClass, wantMessageHas: "FooNodeClass.example.com",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, &writeCounter{}, append([]client.Object{tt.pool}, tt.objs...)...)
			np := reconcileAndGet(t, c, newController(t, c, tt.kinds))

			classReady := meta.FindStatusCondition(np.Status.Conditions, karpv1.ConditionTypeNodeClassReady)
			if classReady == nil || classReady.Status != tt.wantStatus || classReady.Reason != tt.wantReason {
				t.Fatalf("NodeClassReady = %+v, want status %s reason %s", classReady, tt.wantStatus, tt.wantReason)
			}
			if !contains(classReady.Message, tt.wantMessageHas) {
				t.Errorf("NodeClassReady message %q lacks %q", classReady.Message, tt.wantMessageHas)
			}
			validation := meta.FindStatusCondition(np.Status.Conditions, karpv1.ConditionTypeValidationSucceeded)
			if validation == nil || validation.Status != metav1.ConditionTrue {
				t.Errorf("ValidationSucceeded = %+v, want True", validation)
			}
			ready := meta.FindStatusCondition(np.Status.Conditions, karpv1.ConditionTypeReady)
			if ready == nil || ready.Status != tt.wantStatus {
				t.Fatalf("Ready = %+v, want %s", ready, tt.wantStatus)
			}
			if tt.wantStatus != metav1.ConditionTrue && (ready.Reason != tt.wantReason || !contains(ready.Message, tt.wantMessageHas)) {
				t.Errorf("Ready = %+v, want reason %s and message naming the class", ready, tt.wantReason)
			}
			for _, cond := range np.Status.Conditions {
				if cond.ObservedGeneration != tt.pool.Generation {
					t.Errorf("%s observedGeneration = %d, want %d", cond.Type, cond.ObservedGeneration, tt.pool.Generation)
				}
			}
		})
	}
}

func TestReadyFollowsTheNodeClass(t *testing.T) {
	class := kwokClass("kwok", metav1.ConditionFalse)
	c := newClient(t, &writeCounter{}, kwokPool(), class)
	ctl := newController(t, c, kwokKinds)
	if np := reconcileAndGet(t, c, ctl); meta.IsStatusConditionTrue(np.Status.Conditions, karpv1.ConditionTypeReady) {
		t.Fatal("Ready before the class is")
	}
	class.Status.Conditions[0].Status = metav1.ConditionTrue
	if err := c.Update(context.Background(), class); err != nil {
		t.Fatal(err)
	}
	if np := reconcileAndGet(t, c, ctl); !meta.IsStatusConditionTrue(np.Status.Conditions, karpv1.ConditionTypeReady) {
		t.Fatalf("not Ready once the class is: %+v", np.Status.Conditions)
	}
}

func TestHashAnnotations(t *testing.T) {
	c := newClient(t, &writeCounter{}, kwokPool(), kwokClass("kwok", metav1.ConditionTrue))
	ctl := newController(t, c, kwokKinds)
	first := reconcileAndGet(t, c, ctl)
	hash := first.Annotations[karpv1.NodePoolHashAnnotationKey]
	if hash == "" || first.Annotations[karpv1.NodePoolHashVersionAnnotationKey] != HashVersion {
		t.Fatalf("annotations = %v, want a hash and version %s", first.Annotations, HashVersion)
	}
	if again := reconcileAndGet(t, c, ctl); again.Annotations[karpv1.NodePoolHashAnnotationKey] != hash {
		t.Errorf("hash changed across reconciles: %s then %s", hash, again.Annotations[karpv1.NodePoolHashAnnotationKey])
	}

	// Behavioural fields and requirements leave the hash alone.
	first.Spec.Weight = new(int32(50))
	first.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}
	first.Spec.Template.Spec.Requirements[0].Values = []string{"amd64", "arm64"}
	if err := c.Update(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	unchanged := reconcileAndGet(t, c, ctl)
	if got := unchanged.Annotations[karpv1.NodePoolHashAnnotationKey]; got != hash {
		t.Errorf("hash changed with weight, limits and requirements: %s then %s", hash, got)
	}

	// A template change drifts.
	unchanged.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "a"}
	if err := c.Update(context.Background(), unchanged); err != nil {
		t.Fatal(err)
	}
	if got := reconcileAndGet(t, c, ctl).Annotations[karpv1.NodePoolHashAnnotationKey]; got == hash {
		t.Errorf("hash %s did not change with the template's labels", got)
	}
}

func TestHashRestoresStaleVersion(t *testing.T) {
	pool := kwokPool()
	pool.Annotations = map[string]string{karpv1.NodePoolHashAnnotationKey: "1", karpv1.NodePoolHashVersionAnnotationKey: "v3"}
	c := newClient(t, &writeCounter{}, pool, kwokClass("kwok", metav1.ConditionTrue))
	np := reconcileAndGet(t, c, newController(t, c, kwokKinds))
	want, err := Hash(pool)
	if err != nil {
		t.Fatal(err)
	}
	if np.Annotations[karpv1.NodePoolHashAnnotationKey] != want || np.Annotations[karpv1.NodePoolHashVersionAnnotationKey] != HashVersion {
		t.Errorf("annotations = %v, want hash %s version %s", np.Annotations, want, HashVersion)
	}
}

func TestNoWriteWhenNothingChanged(t *testing.T) {
	writes := &writeCounter{}
	c := newClient(t, writes, kwokPool(), kwokClass("kwok", metav1.ConditionTrue), nodeClaim("a", poolName, "2", "4Gi", false))
	ctl := newController(t, c, kwokKinds)
	reconcileAndGet(t, c, ctl)
	if writes.patches != 1 || writes.statusPatches != 1 {
		t.Fatalf("first reconcile wrote %+v, want one metadata and one status patch", *writes)
	}
	*writes = writeCounter{}
	reconcileAndGet(t, c, ctl)
	if writes.patches != 0 || writes.statusPatches != 0 {
		t.Errorf("second reconcile wrote %+v, want nothing", *writes)
	}

	// A new NodeClaim changes the status only.
	if err := c.Create(context.Background(), nodeClaim("b", poolName, "2", "4Gi", false)); err != nil {
		t.Fatal(err)
	}
	np := reconcileAndGet(t, c, ctl)
	if writes.patches != 0 || writes.statusPatches != 1 || *np.Status.Nodes != 2 {
		t.Errorf("after a new nodeclaim: writes %+v, nodes %d; want one status patch and 2 nodes", *writes, *np.Status.Nodes)
	}
}

func TestMissingNodePoolIsNotAnError(t *testing.T) {
	c := newClient(t, &writeCounter{})
	if _, err := newController(t, c, kwokKinds).Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "gone"}}); err != nil {
		t.Fatalf("reconcile of a deleted nodepool: %v", err)
	}
}

func TestNodePoolOfNodeClaim(t *testing.T) {
	if got := nodePoolOfNodeClaim(context.Background(), nodeClaim("a", "pool-a", "1", "1Gi", false)); len(got) != 1 || got[0].Name != "pool-a" {
		t.Errorf("requests = %v, want pool-a", got)
	}
	unlabelled := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	if got := nodePoolOfNodeClaim(context.Background(), unlabelled); len(got) != 0 {
		t.Errorf("requests = %v, want none for a nodeclaim without a nodepool", got)
	}
}

func TestNodePoolsOfNodeClass(t *testing.T) {
	other := nodePool(kwokv1alpha1.KWOKNodeClassKind, kwokv1alpha1.Group, "other")
	other.Name = "uses-other"
	c := newClient(t, &writeCounter{}, kwokPool(), other)
	mapper := newController(t, c, kwokKinds).nodePoolsOfNodeClass(kwokv1alpha1.Group, kwokv1alpha1.KWOKNodeClassKind)
	got := mapper(context.Background(), kwokClass("kwok", metav1.ConditionTrue))
	if len(got) != 1 || got[0].Name != poolName {
		t.Errorf("requests = %v, want only %s", got, poolName)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestNewRefusesNodeClassesTheSchemeLacks(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	if _, err := New(c, kwokKinds, nil); err == nil || !strings.Contains(err.Error(), "KWOKNodeClass") {
		t.Errorf("New with a node class the scheme does not know = %v, want an error naming it", err)
	}
	if _, err := New(newClient(t, &writeCounter{}), kwokKinds, nil); err != nil {
		t.Errorf("New = %v", err)
	}
}
