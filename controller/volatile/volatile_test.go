package volatile

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func replicaSet(ns, name, uid, cpu string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}, Annotations: map[string]string{Annotation: "true"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "pause", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
			}}}},
		}},
	}
}

func podOf(rs *appsv1.ReplicaSet, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: rs.Namespace, Name: name, Annotations: rs.Spec.Template.Annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
		Spec: *rs.Spec.Template.Spec.DeepCopy(),
	}
}

// admission stands in for a mutating admission (VPA) on the fake clientset: every created pod
// gets cpu requests of *cpu; it records whether creates were dry-run.
type admission struct {
	cpu     string
	creates int
	dryRun  bool
}

func (a *admission) install(kube *kubefake.Clientset) {
	kube.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		create := action.(k8stesting.CreateActionImpl)
		a.creates++
		a.dryRun = len(create.CreateOptions.DryRun) == 1 && create.CreateOptions.DryRun[0] == metav1.DryRunAll
		pod := create.GetObject().(*corev1.Pod).DeepCopy()
		for i := range pod.Spec.Containers {
			pod.Spec.Containers[i].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(a.cpu)}
		}
		return true, pod, nil
	})
}

func newPredictor(t *testing.T, objs ...client.Object) (*Predictor, *admission, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	kube := kubefake.NewClientset()
	adm := &admission{cpu: "2"}
	adm.install(kube)
	return &Predictor{Reader: c, Kube: kube}, adm, c
}

// TestCacheKeysAndInvalidation: predictions are keyed by (namespace, owner UID), a template
// change makes one stale, and Predict rewrites only annotated, owned pods with a prediction.
func TestCacheKeysAndInvalidation(t *testing.T) {
	ctx := context.Background()
	rsA := replicaSet("team-a", "web", "uid-a", "500m")
	rsB := replicaSet("team-b", "web", "uid-b", "500m") // same name, another namespace
	p, adm, c := newPredictor(t, rsA, rsB)
	cache := NewCache()
	ctrl := NewController(c, p, cache)
	for _, pod := range []*corev1.Pod{podOf(rsA, "web-1"), podOf(rsB, "web-1")} {
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pod)}); err != nil {
			t.Fatal(err)
		}
	}
	if adm.creates != 2 || !adm.dryRun {
		t.Fatalf("%d creates (dry-run %t), want one dry-run per owner", adm.creates, adm.dryRun)
	}
	for _, key := range []Key{{"team-a", "uid-a"}, {"team-b", "uid-b"}} {
		got, ok := cache.Get(key)
		if q := got.Ceiling[corev1.ResourceCPU]; !ok || q.String() != "2" {
			t.Errorf("prediction for %v = %v (%t), want cpu 2", key, got.Ceiling, ok)
		}
	}
	if _, ok := cache.Get(Key{"team-a", "uid-b"}); ok {
		t.Errorf("a key mixing namespace and owner found a prediction")
	}

	// A second pod of the same owner reuses the prediction.
	second := podOf(rsA, "web-2")
	if err := c.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(second)}); err != nil {
		t.Fatal(err)
	}
	if adm.creates != 2 {
		t.Errorf("%d creates after a second pod of one owner, want still 2", adm.creates)
	}

	// The template changes: the prediction is stale and made again.
	rsA.Spec.Template.Spec.Containers[0].Image = "pause:2"
	if err := c.Update(ctx, rsA); err != nil {
		t.Fatal(err)
	}
	owner, err := p.OwnerOf(ctx, second)
	if err != nil || owner == nil {
		t.Fatalf("OwnerOf = %v, %v", owner, err)
	}
	if _, ok := cache.Fresh(owner); ok {
		t.Errorf("a prediction of the old template is still fresh")
	}
	adm.cpu = "3"
	if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(second)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := cache.Fresh(owner); got.Ceiling.Cpu().String() != "3" {
		t.Errorf("after the template change predicted %v, want cpu 3", got.Ceiling)
	}

	// Predict: only annotated pods of an owner with a prediction change.
	sim := podOf(rsA, "web-2")
	if !cache.Predict(sim) || sim.Spec.Containers[0].Resources.Requests.Cpu().String() != "3" {
		t.Errorf("Predict on an annotated pod: requests %v", sim.Spec.Containers[0].Resources.Requests)
	}
	plain := podOf(rsA, "plain")
	plain.Annotations = nil
	unowned := podOf(rsA, "unowned")
	unowned.OwnerReferences = nil
	unknown := podOf(replicaSet("team-a", "other", "uid-other", "500m"), "other-1")
	for _, pod := range []*corev1.Pod{plain, unowned, unknown} {
		if cache.Predict(pod) || pod.Spec.Containers[0].Resources.Requests.Cpu().String() != "500m" {
			t.Errorf("Predict changed %s", pod.Name)
		}
	}
}

// TestUnownedPodsAreSkipped: a pod without a controller is never dry-run.
func TestUnownedPodsAreSkipped(t *testing.T) {
	ctx := context.Background()
	p, adm, c := newPredictor(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "lonely", Annotations: map[string]string{Annotation: "true"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "pause"}}}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if _, err := NewController(c, p, NewCache()).Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pod)}); err != nil {
		t.Fatal(err)
	}
	if adm.creates != 0 {
		t.Errorf("%d dry-runs for an unowned pod, want 0", adm.creates)
	}
}

// TestVerify: the fresh dry-run agreeing passes; disagreeing rejects naming the owner and
// both predictions, and replaces the cached one.
func TestVerify(t *testing.T) {
	ctx := context.Background()
	rs := replicaSet("default", "web", "uid-web", "500m")
	p, adm, _ := newPredictor(t, rs)
	cache := NewCache()
	v := &Verifier{Predictor: p, Cache: cache}
	pods := []*corev1.Pod{podOf(rs, "web-1"), podOf(rs, "web-2")}

	owner, err := p.OwnerOf(ctx, pods[0])
	if err != nil {
		t.Fatal(err)
	}
	first, err := p.DryRun(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	cache.Put(owner.Key, first)
	if why, err := v.Verify(ctx, pods); err != nil || why != "" {
		t.Errorf("Verify with an unchanged admission = %q, %v; want accepted", why, err)
	}
	if adm.creates != 2 {
		t.Errorf("%d dry-runs, want 2 (one per owner per Verify)", adm.creates)
	}

	adm.cpu = "4"
	why, err := v.Verify(ctx, pods)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ReplicaSet default/web", "cpu=2", "cpu=4"} {
		if !strings.Contains(why, want) {
			t.Errorf("rejection %q lacks %q", why, want)
		}
	}
	if got, _ := cache.Get(owner.Key); got.Ceiling.Cpu().String() != "4" {
		t.Errorf("cache after a rejection predicts %v, want the fresh cpu 4", got.Ceiling)
	}
}
