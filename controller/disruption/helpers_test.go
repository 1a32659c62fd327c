package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joinery-dev/joinery/apis"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

var epoch = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func newScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func newClient(t testing.TB, objs ...client.Object) client.WithWatch {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(objs...).
		WithStatusSubresource(&karpv1.NodeClaim{}, &corev1.Node{}, &karpv1.NodePool{}).Build()
}

type npOption func(*karpv1.NodePool)

func testNodePool(name string, opts ...npOption) *karpv1.NodePool {
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("np-" + name)},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			}},
			Disruption: karpv1.Disruption{ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, ConsolidateAfter: karpv1.DurationOf(0)},
		},
	}
	for _, o := range opts {
		o(np)
	}
	return np
}

func budgets(b ...karpv1.Budget) npOption {
	return func(np *karpv1.NodePool) { np.Spec.Disruption.Budgets = b }
}

type ncOption func(*karpv1.NodeClaim, *corev1.Node)

// testNode returns an initialized NodeClaim of nodepool with its Ready Node ("node-<name>").
func testNode(name, nodepool string, opts ...ncOption) (*karpv1.NodeClaim, *corev1.Node) {
	nodeName := "node-" + name
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("nc-" + name), Labels: map[string]string{
			karpv1.NodePoolLabelKey: nodepool, karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand,
		}},
		Spec: karpv1.NodeClaimSpec{NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}},
		Status: karpv1.NodeClaimStatus{NodeName: nodeName, ProviderID: "kwok://" + name, Conditions: []metav1.Condition{
			{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(epoch)},
			{Type: karpv1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue, Reason: "Consolidatable", LastTransitionTime: metav1.NewTime(epoch)},
		}},
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{karpv1.NodePoolLabelKey: nodepool, corev1.LabelHostname: nodeName}},
		Spec:       corev1.NodeSpec{ProviderID: "kwok://" + name},
		Status: corev1.NodeStatus{
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
		},
	}
	for _, o := range opts {
		o(nc, node)
	}
	return nc, node
}

func drifted(nc *karpv1.NodeClaim, _ *corev1.Node) {
	nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: "NodePoolDrifted", LastTransitionTime: metav1.NewTime(epoch)})
}

func nodeAnnotated(nc *karpv1.NodeClaim, n *corev1.Node) {
	n.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
}

func claimAnnotated(nc *karpv1.NodeClaim, _ *corev1.Node) {
	nc.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
}

func withTGP(nc *karpv1.NodeClaim, _ *corev1.Node) {
	nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
}

func notInitialized(nc *karpv1.NodeClaim, _ *corev1.Node) {
	nc.Status.Conditions = nc.Status.Conditions[1:]
}

func deleting(nc *karpv1.NodeClaim, _ *corev1.Node) {
	nc.DeletionTimestamp = ptr.To(metav1.NewTime(epoch))
	nc.Finalizers = []string{karpv1.TerminationFinalizer}
}

func notReadyNode(_ *karpv1.NodeClaim, n *corev1.Node) {
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}
}

type podOption func(*corev1.Pod)

func testPod(name, node string, opts ...podOption) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("pod-" + name), Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func labelled(k, v string) podOption { return func(p *corev1.Pod) { p.Labels[k] = v } }

func podDoNotDisrupt(p *corev1.Pod) {
	p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
}

func daemon(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds", Controller: ptr.To(true)}}
}

func succeeded(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }

func pdb(name string, allowed int32, selector map[string]string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(allowed)), Selector: &metav1.LabelSelector{MatchLabels: selector}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

// objects flattens NodeClaim/Node pairs and other objects.
func objects(items ...any) []client.Object {
	var out []client.Object
	for _, it := range items {
		switch v := it.(type) {
		case client.Object:
			out = append(out, v)
		case []client.Object:
			out = append(out, v...)
		default:
			panic(fmt.Sprintf("unexpected %T", it))
		}
	}
	return out
}

func pair(nc *karpv1.NodeClaim, n *corev1.Node) []client.Object { return []client.Object{nc, n} }

func loadCluster(t testing.TB, objs ...client.Object) (*Cluster, client.WithWatch) {
	t.Helper()
	c := newClient(t, objs...)
	cluster, err := LoadCluster(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return cluster, c
}

// fakeSimulator answers with one replacement per candidate that has pods, or refuses the
// pods named in unschedulable.
type fakeSimulator struct {
	unschedulable map[string]string // pod name → why
	calls         int
}

func (f *fakeSimulator) Simulate(_ context.Context, _ *Cluster, cands []*Candidate) (*Simulation, error) {
	f.calls++
	out := &Simulation{Destinations: map[types.UID]string{}, Unschedulable: map[types.UID]string{}}
	for _, c := range cands {
		if len(c.Pods) == 0 {
			continue
		}
		for _, p := range c.Pods {
			if why, ok := f.unschedulable[p.Name]; ok {
				out.Unschedulable[p.UID] = why
			} else {
				out.Destinations[p.UID] = fmt.Sprintf("replacement-%d", len(out.Replacements))
			}
		}
		out.Replacements = append(out.Replacements, &karpv1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{GenerateName: c.NodePool.Name + "-", Labels: map[string]string{karpv1.NodePoolLabelKey: c.NodePool.Name}},
			Spec:       karpv1.NodeClaimSpec{NodeClassRef: c.NodePool.Spec.Template.Spec.NodeClassRef, Requirements: c.NodePool.Spec.Template.Spec.Requirements},
		})
	}
	return out, nil
}

func keyOf(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

// consolidationDryRun runs one pass of the graceful methods, with the solver over its, on
// cluster, and returns it with the methods and its commands as strings.
func consolidationDryRun(t testing.TB, cluster *Cluster, its cloudprovider.InstanceTypes, opts ...func(*Consolidation)) (*Pass, []Method, []string) {
	t.Helper()
	c := Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its)}
	for _, opt := range opts {
		opt(&c)
	}
	methods := GracefulMethods(c)
	pass, err := DryRun(context.Background(), cluster, methods, epoch)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cmd := range pass.Commands {
		got = append(got, cmd.String())
	}
	return pass, methods, got
}
