package static

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joinery-dev/joinery/apis"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
	"github.com/joinery-dev/joinery/controller/disruption"
)

type catalogTypes cloudprovider.InstanceTypes

func (c catalogTypes) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	return c, nil
}

func kwokTypes(t *testing.T) catalogTypes {
	t.Helper()
	f, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	its, err := f.Build(catalog.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return catalogTypes(its)
}

func staticPool(replicas int64, limitNodes string) *karpv1.NodePool {
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "fixed", UID: "np-fixed", Annotations: map[string]string{karpv1.NodePoolHashAnnotationKey: "hash"}},
		Spec: karpv1.NodePoolSpec{
			Replicas: &replicas,
			Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			}},
		},
		Status: karpv1.NodePoolStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}},
	}
	if limitNodes != "" {
		np.Spec.Limits = corev1.ResourceList{resourceNodes: resource.MustParse(limitNodes)}
	}
	return np
}

// claim is a launched, initialized NodeClaim of the pool on node name, created age ago.
func claim(name string, age time.Duration, mods ...func(*karpv1.NodeClaim)) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "fixed"},
			CreationTimestamp: metav1.NewTime(time.Now().Add(-age))},
		Status: karpv1.NodeClaimStatus{NodeName: name, Conditions: []metav1.Condition{
			{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.Now()}}},
	}
	for _, m := range mods {
		m(nc)
	}
	return nc
}

func marked(nc *karpv1.NodeClaim) {
	nc.Annotations = map[string]string{disruption.CommandAnnotationKey: "cmd-1"}
}

func replacing(id string) func(*karpv1.NodeClaim) {
	return func(nc *karpv1.NodeClaim) {
		nc.Annotations = map[string]string{disruption.ReplacementForAnnotationKey: id}
	}
}

func deleting(nc *karpv1.NodeClaim) {
	now := metav1.Now()
	nc.DeletionTimestamp = &now
	nc.Finalizers = []string{"karpenter.sh/termination"}
}

func notLaunched(nc *karpv1.NodeClaim) {
	nc.Status = karpv1.NodeClaimStatus{}
}

func podOn(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
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

func TestReconcile(t *testing.T) {
	cases := []struct {
		name    string
		enabled bool
		pool    *karpv1.NodePool
		objects []client.Object
		// want are the names of the NodeClaims left not deleting (created ones start with
		// "fixed-"), by count when wantNew > 0.
		wantKept  []string
		wantNew   int
		wantEvent string
	}{{
		name: "scales up from nothing", enabled: true, pool: staticPool(3, ""),
		wantNew: 3,
	}, {
		name: "limits.nodes caps the count", enabled: true, pool: staticPool(3, "2"),
		objects:  []client.Object{claim("a", time.Hour)},
		wantKept: []string{"a"}, wantNew: 1, wantEvent: ReasonLimited,
	}, {
		name: "a disruption candidate counts, its replacement does not", enabled: true, pool: staticPool(2, ""),
		objects:  []client.Object{claim("a", time.Hour), claim("b", time.Hour, marked), claim("r", 0, replacing("cmd-1"), notLaunched)},
		wantKept: []string{"a", "b", "r"},
	}, {
		name: "a replacement counts once its candidate is being deleted", enabled: true, pool: staticPool(2, ""),
		objects:  []client.Object{claim("a", time.Hour), claim("b", time.Hour, marked, deleting), claim("r", 0, replacing("cmd-1"), notLaunched)},
		wantKept: []string{"a", "r"},
	}, {
		name: "NodeClaims being deleted do not count, but count against limits.nodes", enabled: true, pool: staticPool(2, "2"),
		objects:  []client.Object{claim("a", time.Hour), claim("b", time.Hour, deleting)},
		wantKept: []string{"a"}, wantEvent: ReasonLimited,
	}, {
		name: "scales down the unlaunched, then the emptiest, then the newest", enabled: true, pool: staticPool(1, ""),
		objects: []client.Object{
			claim("busy", 3*time.Hour), claim("quiet-old", 2*time.Hour), claim("quiet-new", time.Hour), claim("pending", time.Minute, notLaunched),
			podOn("p1", "busy"), podOn("p2", "busy"), podOn("p3", "quiet-old"), podOn("p4", "quiet-new"),
		},
		wantKept: []string{"busy"},
	}, {
		name: "at its replicas nothing changes", enabled: true, pool: staticPool(2, ""),
		objects:  []client.Object{claim("a", time.Hour), claim("b", time.Hour)},
		wantKept: []string{"a", "b"},
	}, {
		name: "with the gate off replicas are not acted on, and an event says so", enabled: false, pool: staticPool(3, ""),
		objects:  []client.Object{claim("a", time.Hour)},
		wantKept: []string{"a"}, wantEvent: ReasonGateDisabled,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := append([]client.Object{tc.pool}, tc.objects...)
			c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(objs...).
				WithStatusSubresource(&karpv1.NodePool{}, &karpv1.NodeClaim{}).Build()
			recorder := events.NewFakeRecorder(10)
			ctl := New(c, kwokTypes(t), recorder, Options{Enabled: tc.enabled})
			if _, err := ctl.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "fixed"}}); err != nil {
				t.Fatal(err)
			}
			list := &karpv1.NodeClaimList{}
			if err := c.List(t.Context(), list); err != nil {
				t.Fatal(err)
			}
			kept := map[string]bool{}
			created := 0
			for _, nc := range list.Items {
				if nc.DeletionTimestamp != nil {
					continue
				}
				if strings.HasPrefix(nc.Name, "fixed-") {
					created++
					if nc.OwnerReferences[0].Name != "fixed" || len(nc.Spec.Requirements) == 0 {
						t.Errorf("created NodeClaim %s: %+v", nc.Name, nc)
					}
					continue
				}
				kept[nc.Name] = true
			}
			if created != tc.wantNew {
				t.Errorf("created %d NodeClaims, want %d", created, tc.wantNew)
			}
			if len(kept) != len(tc.wantKept) {
				t.Errorf("kept %v, want %v", kept, tc.wantKept)
			}
			for _, name := range tc.wantKept {
				if !kept[name] {
					t.Errorf("kept %v, want %v", kept, tc.wantKept)
				}
			}
			var got []string
			for len(recorder.Events) > 0 {
				got = append(got, <-recorder.Events)
			}
			if tc.wantEvent != "" && !strings.Contains(strings.Join(got, "\n"), tc.wantEvent) {
				t.Errorf("events %q, want one with reason %s", got, tc.wantEvent)
			}
			if tc.wantEvent == "" && len(got) > 0 {
				t.Errorf("events %q, want none", got)
			}
		})
	}
}

// TestWaitsForTheCache checks that a second reconcile before the cache shows the first one's
// NodeClaims creates nothing more.
func TestWaitsForTheCache(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(staticPool(2, "")).Build()
	ctl := New(c, kwokTypes(t), events.NewFakeRecorder(10), Options{Enabled: true})
	req := ctrl.Request{NamespacedName: client.ObjectKey{Name: "fixed"}}
	if _, err := ctl.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	// The cache lags: a NodeClaim just created is not listed yet.
	list := &karpv1.NodeClaimList{}
	if err := c.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("created %d, want 2", len(list.Items))
	}
	ctl.expect("fixed", "not-yet-listed", false)
	res, err := ctl.Reconcile(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter == 0 {
		t.Error("a reconcile with an unseen creation did not wait")
	}
	if err := c.List(t.Context(), list); err != nil || len(list.Items) != 2 {
		t.Errorf("NodeClaims %d (%v), want still 2", len(list.Items), err)
	}
}
