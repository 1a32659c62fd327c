// Package integration runs the volatile-requests prediction against a real kube-apiserver
// whose admission chain has a MutatingAdmissionPolicy (GA and on by default in 1.36) raising
// the requests of annotated pods, standing in for VPA.
package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/controller/volatile"
	"github.com/joinery-dev/joinery/internal/localcluster"
	"github.com/joinery-dev/joinery/internal/testcluster"
)

var cluster *localcluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, &cluster, testcluster.Options{Name: "volatile-integration"}))
}

// policy raises the first container's requests of pods annotated as volatile to cpu.
func policy(name, cpu string) *admissionv1.MutatingAdmissionPolicy {
	return &admissionv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			MatchConditions: []admissionv1.MatchCondition{{Name: "volatile", Expression: fmt.Sprintf(
				"has(object.metadata.annotations) && %q in object.metadata.annotations && object.metadata.annotations[%q] == 'true'", volatile.Annotation, volatile.Annotation)}},
			FailurePolicy:      ptr.To(admissionv1.Fail),
			ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
			Mutations: []admissionv1.Mutation{{PatchType: admissionv1.PatchTypeJSONPatch, JSONPatch: &admissionv1.JSONPatch{
				Expression: fmt.Sprintf(`[JSONPatch{op: "replace", path: "/spec/containers/0/resources/requests", value: {"cpu": %q}}]`, cpu),
			}}},
		},
	}
}

// TestDryRunThroughMutatingAdmissionPolicy: a pod created before the policy asks 100m; the
// dry-run of its ReplicaSet's template comes back with the policy's 1500m (nothing is
// stored), disruption's check accepts while the policy stands and rejects once it changes.
func TestDryRunThroughMutatingAdmissionPolicy(t *testing.T) {
	ctx := t.Context()
	cfg := cluster.RESTConfig()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "volatile"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// Without kube-controller-manager nobody creates the namespace's default service account,
	// which the ServiceAccount admission plugin looks up.
	if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{volatile.Annotation: "true"}},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "web"},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: template.Labels}, Template: template},
	}
	if err := c.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "web-1", Labels: template.Labels, Annotations: template.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Spec: *template.Spec.DeepCopy(),
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}

	if _, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, policy("raise-volatile", "1500m"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create MutatingAdmissionPolicy (is admissionregistration.k8s.io/v1 served?): %v", err)
	}
	binding := &admissionv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "raise-volatile"},
		Spec: admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "raise-volatile"}}
	if _, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	predictor := &volatile.Predictor{Reader: c, Kube: kube}
	owner, err := predictor.OwnerOf(ctx, pod)
	if err != nil || owner == nil {
		t.Fatalf("OwnerOf = %v, %v", owner, err)
	}
	cache := volatile.NewCache()
	// The policy reaches the admission chain through an informer: poll.
	awaitPrediction := func(want string) volatile.Prediction {
		t.Helper()
		var got volatile.Prediction
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err = predictor.DryRun(ctx, owner)
			if err != nil {
				return false, err
			}
			return got.Ceiling.Cpu().String() == want, nil
		})
		if err != nil {
			t.Fatalf("dry-run predicts cpu %s, want %s: %v", got.Ceiling.Cpu(), want, err)
		}
		return got
	}
	cache.Put(owner.Key, awaitPrediction("1500m"))

	// Nothing was stored: the ReplicaSet still has its one pod, which kept its 100m.
	pods, err := kube.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Spec.Containers[0].Resources.Requests.Cpu().String() != "100m" {
		t.Errorf("pods after the dry-runs: %d, first asks %v; want the one pod with 100m", len(pods.Items), pods.Items[0].Spec.Containers[0].Resources.Requests)
	}

	// Simulation copies of the pod take the prediction.
	sim := pod.DeepCopy()
	if !cache.Predict(sim) || sim.Spec.Containers[0].Resources.Requests.Cpu().String() != "1500m" {
		t.Errorf("simulated pod asks %v, want the predicted 1500m", sim.Spec.Containers[0].Resources.Requests)
	}

	verifier := &volatile.Verifier{Predictor: predictor, Cache: cache}
	if why, err := verifier.Verify(ctx, []*corev1.Pod{pod}); err != nil || why != "" {
		t.Fatalf("Verify while the policy stands = %q, %v; want accepted", why, err)
	}

	// VPA moves on: the policy now gives 2 cpu, and the check refuses the stale prediction.
	cache.Put(owner.Key, awaitPrediction("1500m"))
	current, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Get(ctx, "raise-volatile", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	current.Spec.Mutations = policy("", "2").Spec.Mutations
	if _, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Update(ctx, current, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale, _ := cache.Get(owner.Key)
	var why string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cache.Put(owner.Key, stale) // what the simulation used
		why, err = verifier.Verify(ctx, []*corev1.Pod{pod})
		return why != "", err
	})
	if err != nil {
		t.Fatalf("Verify after the policy changed never rejected: %v", err)
	}
	for _, want := range []string{"ReplicaSet volatile/web", "cpu=1500m", "cpu=2"} {
		if !strings.Contains(why, want) {
			t.Errorf("rejection %q lacks %q", why, want)
		}
	}
}
