package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/apis"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/plugin"
	"github.com/joinery-dev/joinery/simulation"
)

const (
	profileName = "joinery"
	namespace   = "provisioning"
	// Labels that tell the fake planner what to do with a pod.
	inFlightLabel = "test.joinery.dev/in-flight" // plan onto the first NodeClaim
	noFitLabel    = "test.joinery.dev/no-fit"    // no NodePool fits
	noFitReason   = "no NodePool fits: the test says so"
	await         = 60 * time.Second
)

var testInstanceTypes = []string{"t1", "t2", "t3", "t4", "t5", "t6", "t7"}

// fakePlanner plans one new NodeClaim of NodePool "default" per batch for every pod, except
// pods labelled to go onto an in-flight NodeClaim or to fit nowhere. It records each batch.
type fakePlanner struct {
	mu       sync.Mutex
	batches  [][]string
	consumed int // batches awaitPlanned has looked at
	inFlight string
	called   chan struct{}
}

func newFakePlanner() *fakePlanner { return &fakePlanner{called: make(chan struct{}, 16)} }

func (f *fakePlanner) Plan(_ context.Context, pods []*corev1.Pod) (*simulation.Plan, error) {
	f.mu.Lock()
	defer func() {
		f.mu.Unlock()
		f.called <- struct{}{}
	}()
	plan := &simulation.Plan{InFlight: map[types.UID]string{}, Unschedulable: map[types.UID]string{}}
	var names []string
	var fresh []*corev1.Pod
	for _, pod := range pods {
		names = append(names, pod.Name)
		switch {
		case pod.Labels[noFitLabel] != "":
			plan.Unschedulable[pod.UID] = noFitReason
		case pod.Labels[inFlightLabel] != "" && f.inFlight != "":
			plan.InFlight[pod.UID] = f.inFlight
		default:
			fresh = append(fresh, pod)
		}
	}
	slices.Sort(names)
	f.batches = append(f.batches, names)
	if len(fresh) > 0 {
		plan.NewNodeClaims = append(plan.NewNodeClaims, &simulation.PlannedNodeClaim{NodeClaim: nodeClaimFor("default"), Pods: fresh})
	}
	return plan, nil
}

// awaitPlanned waits until the batches planned since the last call, together, hold exactly
// want (pod names): how pods split into batches depends on timing, what is planned does not.
func (f *fakePlanner) awaitPlanned(t *testing.T, want ...string) {
	t.Helper()
	slices.Sort(want)
	var seen []string
	deadline := time.After(await)
	for {
		select {
		case <-f.called:
		case <-deadline:
			t.Fatalf("planned %v, want %v", seen, want)
		}
		f.mu.Lock()
		for _, batch := range f.batches[f.consumed:] {
			seen = append(seen, batch...)
		}
		f.consumed = len(f.batches)
		f.mu.Unlock()
		slices.Sort(seen)
		seen = slices.Compact(seen)
		for _, name := range seen {
			if !slices.Contains(want, name) {
				t.Fatalf("planned %v, want only %v", seen, want)
			}
		}
		if slices.Equal(seen, want) {
			return
		}
	}
}

func nodeClaimFor(pool string) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{karpv1.NodePoolLabelKey: pool}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: testInstanceTypes},
			},
			Resources: karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}},
		},
	}
}

// schedulerInstance is one plugin built the way kube-scheduler builds it: by the framework,
// from a profile, with its own informers; stopping it is a scheduler shutdown.
type schedulerInstance struct {
	plugin *plugin.Plugin
	stop   context.CancelFunc
}

func startScheduler(t *testing.T, kube kubernetes.Interface, newPlanner plugin.PlannerFactory) *schedulerInstance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ctx = klog.NewContext(ctx, klog.Background())
	t.Cleanup(cancel)

	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	recorder := broadcaster.NewRecorder(scheme.Scheme, profileName)
	factory := informers.NewSharedInformerFactory(kube, 0)

	var built *plugin.Plugin
	registry := plugins.NewInTreeRegistry()
	newPlugin := plugin.New(plugin.Options{NewPlanner: newPlanner})
	err := registry.Register(plugin.Name, func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		p, err := newPlugin(ctx, obj, h)
		if err == nil {
			built = p.(*plugin.Plugin)
		}
		return p, err
	})
	if err != nil {
		t.Fatal(err)
	}
	profile := &config.KubeSchedulerProfile{
		SchedulerName: profileName,
		Plugins: &config.Plugins{
			QueueSort:  config.PluginSet{Enabled: []config.Plugin{{Name: "PrioritySort"}}},
			Bind:       config.PluginSet{Enabled: []config.Plugin{{Name: "DefaultBinder"}}},
			PostFilter: config.PluginSet{Enabled: []config.Plugin{{Name: plugin.Name}}},
			Reserve:    config.PluginSet{Enabled: []config.Plugin{{Name: plugin.Name}}},
		},
		PluginConfig: []config.PluginConfig{{Name: plugin.Name, Args: &runtime.Unknown{
			ContentType: runtime.ContentTypeJSON,
			Raw:         []byte(`{"batchIdleDuration":"200ms","batchMaxDuration":"2s"}`),
		}}},
	}
	metrics.Register()
	_, err = frameworkruntime.NewFramework(ctx, registry, profile,
		frameworkruntime.WithClientSet(kube),
		frameworkruntime.WithKubeConfig(restConfig()),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithEventRecorder(recorder),
		frameworkruntime.WithSnapshotSharedLister(schedcache.NewEmptySnapshot()),
		frameworkruntime.WithPodActivator(noActivation{}),
	)
	if err != nil {
		t.Fatalf("building the framework: %v", err)
	}
	if built == nil {
		t.Fatal("the framework did not build the plugin")
	}
	factory.Start(ctx.Done())
	return &schedulerInstance{plugin: built, stop: func() {
		cancel()
		broadcaster.Shutdown()
		factory.Shutdown()
	}}
}

type noActivation struct{}

func (noActivation) Activate(klog.Logger, map[string]*corev1.Pod) {}

func TestProvisioning(t *testing.T) {
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(restConfig())
	crScheme := runtime.NewScheme()
	if err := apis.AddToScheme(crScheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restConfig(), client.Options{Scheme: crScheme})
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(t, kube)
	pool := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{},
		}}},
	}
	if err := c.Create(ctx, pool); err != nil {
		t.Fatalf("creating the NodePool: %v", err)
	}

	planner := newFakePlanner()
	newPlanner := func(context.Context, plugin.PlannerOptions) (simulation.Planner, error) { return planner, nil }

	first := startScheduler(t, kube, newPlanner)
	a, b := createPendingPod(t, kube, "a", nil), createPendingPod(t, kube, "b", nil)

	// Batch 1: both pods, one NodeClaim, owned by the NodePool and listing both pods.
	planner.awaitPlanned(t, "a", "b")
	claims := awaitNodeClaims(t, c, 1)
	nc := claims[0]
	checkPublished(t, &nc, pool, a, b)
	planner.mu.Lock()
	planner.inFlight = nc.Name
	planner.mu.Unlock()
	awaitEvent(t, kube, a, "Nominated", "Pod should schedule on: nodeclaim/"+nc.Name)
	awaitEvent(t, kube, b, "Nominated", "Pod should schedule on: nodeclaim/"+nc.Name)
	if got, want := postFilterMessage(t, first.plugin, a), "waiting for NodeClaim "+nc.Name; got != want {
		t.Errorf("PostFilter of a waiting pod: %q, want %q", got, want)
	}

	// Batch 2: a and b are retried by the scheduler but wait for their NodeClaim; only the
	// new pods are planned. c goes onto the in-flight NodeClaim, d fits nowhere.
	postFilterMessage(t, first.plugin, b)
	cPod := createPendingPod(t, kube, "c", map[string]string{inFlightLabel: "yes"})
	d := createPendingPod(t, kube, "d", map[string]string{noFitLabel: "yes"})
	planner.awaitPlanned(t, "c", "d") // a and b must not be planned again
	awaitNodeClaims(t, c, 1)
	awaitPlannedPods(t, c, nc.Name, a, b, cPod)
	awaitEvent(t, kube, cPod, "Nominated", "Pod should schedule on: nodeclaim/"+nc.Name)
	awaitEvent(t, kube, d, "FailedScheduling", "Failed to schedule pod, "+noFitReason)
	if got := postFilterMessage(t, first.plugin, d); got != noFitReason {
		t.Errorf("PostFilter of an unschedulable pod: %q, want %q", got, noFitReason)
	}
	planner.awaitPlanned(t, "d") // the retried d is planned again; nothing new comes of it
	if got := len(listNodeClaims(t, c)); got != 1 {
		t.Errorf("%d NodeClaims after replanning an unschedulable pod, want 1", got)
	}

	// Restart: a new plugin knows nothing but the cluster. a, b and c wait for the launching
	// NodeClaim; the next batch plans only d (still unschedulable) and the new pod e.
	first.stop()
	second := startScheduler(t, kube, newPlanner)
	e := createPendingPod(t, kube, "e", nil)
	planner.awaitPlanned(t, "d", "e") // a, b and c must not be planned again
	for _, pod := range []*corev1.Pod{a, b, cPod} {
		if got, want := postFilterMessage(t, second.plugin, pod), "waiting for NodeClaim "+nc.Name; got != want {
			t.Errorf("after a restart, PostFilter of %s: %q, want %q", pod.Name, got, want)
		}
	}
	claims = awaitNodeClaims(t, c, 2)
	for _, claim := range claims {
		if claim.Name != nc.Name {
			checkPublished(t, &claim, pool, e)
		}
	}
}

// createNamespace creates the test namespace with its default ServiceAccount, which
// admission requires of pods and which no controller creates on this control plane.
func createNamespace(t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "default"}}
	if _, err := kube.CoreV1().ServiceAccounts(namespace).Create(t.Context(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating service account: %v", err)
	}
}

// createPendingPod creates a pod of the joinery profile and marks it the way kube-scheduler
// does when the cluster has no nodes, which is how the plugin learns of it.
func createPendingPod(t *testing.T, kube kubernetes.Interface, name string, labels map[string]string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			SchedulerName: profileName,
			Containers:    []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	created, err := kube.CoreV1().Pods(namespace).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Pods(namespace).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	created.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "no nodes available to schedule pods",
	}}
	updated, err := kube.CoreV1().Pods(namespace).UpdateStatus(t.Context(), created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("marking pod %s unschedulable: %v", name, err)
	}
	return updated
}

func postFilterMessage(t *testing.T, p *plugin.Plugin, pod *corev1.Pod) string {
	t.Helper()
	_, status := p.PostFilter(t.Context(), nil, pod, nil)
	if status.Code() != fwk.Unschedulable {
		t.Fatalf("PostFilter of %s: code %v, want Unschedulable", pod.Name, status.Code())
	}
	return status.Message()
}

func listNodeClaims(t *testing.T, c client.Client) []karpv1.NodeClaim {
	t.Helper()
	var list karpv1.NodeClaimList
	if err := c.List(t.Context(), &list); err != nil {
		t.Fatalf("listing NodeClaims: %v", err)
	}
	return list.Items
}

func awaitNodeClaims(t *testing.T, c client.Client, want int) []karpv1.NodeClaim {
	t.Helper()
	var claims []karpv1.NodeClaim
	poll(t, fmt.Sprintf("%d NodeClaim(s)", want), func() (bool, string) {
		claims = listNodeClaims(t, c)
		return len(claims) == want, fmt.Sprintf("%d NodeClaim(s)", len(claims))
	})
	return claims
}

func awaitPlannedPods(t *testing.T, c client.Client, name string, pods ...*corev1.Pod) {
	t.Helper()
	poll(t, "NodeClaim "+name+" lists its pods", func() (bool, string) {
		nc := &karpv1.NodeClaim{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, nc); err != nil {
			return false, err.Error()
		}
		planned := simulation.PlannedPods(nc)
		for _, pod := range pods {
			if !slices.Contains(planned, pod.UID) {
				return false, fmt.Sprintf("planned pods %v", planned)
			}
		}
		return len(planned) == len(pods), fmt.Sprintf("planned pods %v", planned)
	})
}

// checkPublished checks a created NodeClaim: generated name, owner, annotation and the
// planner's requirements.
func checkPublished(t *testing.T, nc *karpv1.NodeClaim, pool *karpv1.NodePool, pods ...*corev1.Pod) {
	t.Helper()
	if !strings.HasPrefix(nc.Name, "default-") || nc.GenerateName != "default-" {
		t.Errorf("NodeClaim name %q (generateName %q), want default-<suffix>", nc.Name, nc.GenerateName)
	}
	owners := nc.OwnerReferences
	if len(owners) != 1 || owners[0].Kind != "NodePool" || owners[0].APIVersion != "karpenter.sh/v1" ||
		owners[0].Name != pool.Name || owners[0].UID != pool.UID {
		t.Errorf("NodeClaim %s owners %+v, want the NodePool %s (%s)", nc.Name, owners, pool.Name, pool.UID)
	}
	var want []types.UID
	for _, pod := range pods {
		want = append(want, pod.UID)
	}
	slices.Sort(want)
	if got := simulation.PlannedPods(nc); !slices.Equal(got, want) {
		t.Errorf("NodeClaim %s plans pods %v, want %v", nc.Name, got, want)
	}
	if len(nc.Spec.Requirements) != 1 || !slices.Equal(nc.Spec.Requirements[0].Values, testInstanceTypes) {
		t.Errorf("NodeClaim %s requirements %+v, want the planner's", nc.Name, nc.Spec.Requirements)
	}
}

func awaitEvent(t *testing.T, kube kubernetes.Interface, pod *corev1.Pod, reason, note string) {
	t.Helper()
	poll(t, fmt.Sprintf("%s event on pod %s", reason, pod.Name), func() (bool, string) {
		list, err := kube.EventsV1().Events(namespace).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, ev := range list.Items {
			if ev.Regarding.UID == pod.UID && ev.Reason == reason {
				if ev.Note == note {
					return true, ""
				}
				seen = append(seen, describe(ev))
			}
		}
		return false, fmt.Sprintf("events %v", seen)
	})
}

func describe(ev eventsv1.Event) string { return ev.Reason + ": " + ev.Note }

// poll retries check until it holds or await passes, and fails with its last detail.
func poll(t *testing.T, what string, check func() (bool, string)) {
	t.Helper()
	var detail string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, await, true, func(context.Context) (bool, error) {
		var ok bool
		ok, detail = check()
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (%s)", what, err, detail)
	}
}
