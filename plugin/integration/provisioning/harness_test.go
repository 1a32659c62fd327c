package provisioning

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/apis"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	kwokv1alpha1 "github.com/joinery-dev/joinery/apis/kwok/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/plugin"
	"github.com/joinery-dev/joinery/plugin/planner"
	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/solver"
)

const (
	profileName = "joinery"
	nodeClass   = "default"
	await       = 60 * time.Second
	// noNodesMessage is what kube-scheduler writes on a pod when the cluster has no node, which
	// is how the plugin learns of pods here (no node ever registers in these tests).
	noNodesMessage = "0/0 nodes are available: no nodes available to schedule pods"
)

// schedulerConfig is the KubeSchedulerConfiguration the planner reads, as joinery-scheduler's
// --config: one profile with kube-scheduler's default plugins and the Provisioner.
const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: joinery
  plugins:
    postFilter:
      enabled:
      - name: JoineryProvisioner
    reserve:
      enabled:
      - name: JoineryProvisioner
`

// env is what every case shares: clients of the one API server, the catalog, the scheduler
// configuration.
type env struct {
	restConfig *rest.Config
	kube       kubernetes.Interface
	client     client.Client
	its        cloudprovider.InstanceTypes
	configPath string
	profile    *config.KubeSchedulerProfile
	cases      int
}

var (
	sharedEnv  *env
	sharedOnce sync.Once
)

// testEnv builds the shared env once: clients, the scheduler config file and the KWOKNodeClass
// every NodePool refers to.
func testEnv(t *testing.T) *env {
	t.Helper()
	sharedOnce.Do(func() {
		e := &env{its: buildCatalog(t)}
		// client-go's default 5 requests/s would pace every case; the API server is ours.
		cfg := cluster.RESTConfig()
		cfg.QPS, cfg.Burst = 500, 1000
		e.restConfig = cfg
		e.kube = kubernetes.NewForConfigOrDie(cfg)
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			t.Fatal(err)
		}
		if err := apis.AddToScheme(scheme); err != nil {
			t.Fatal(err)
		}
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		e.client = c
		e.configPath = filepath.Join(clusterDir, "scheduler.yaml")
		if err := os.WriteFile(e.configPath, []byte(schedulerConfig), 0o600); err != nil {
			t.Fatal(err)
		}
		if e.profile, err = simulation.LoadProfile(e.configPath, profileName); err != nil {
			t.Fatal(err)
		}
		class := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: nodeClass}}
		if err := c.Create(context.Background(), class); err != nil {
			t.Fatalf("creating the KWOKNodeClass: %v", err)
		}
		sharedEnv = e
	})
	if sharedEnv == nil {
		t.Fatal("the shared test environment failed to build")
	}
	return sharedEnv
}

// scenario is one behaviour: what is in the cluster, the pods, and what must come of them.
type scenario struct {
	name string
	// args are plugin args besides the batch windows (preferencePolicy, minValuesPolicy, ...).
	args      map[string]any
	nodePools []*karpv1.NodePool
	// objects are created before the pods, in order; namespaced ones in the case's namespace,
	// which objects is given.
	objects func(ns string) []client.Object
	pods    []*corev1.Pod
	// unschedulable maps the pods no NodePool may take to what their FailedScheduling event
	// must say; every other pod must be planned onto a NodeClaim.
	unschedulable map[string]string
	check         func(t *testing.T, o *outcome)
}

// outcome is what the plugin published for a scenario.
type outcome struct {
	namespace string
	claims    []*karpv1.NodeClaim // every NodeClaim in the cluster, by name
	pods      map[string]*corev1.Pod
	claimOf   map[string]*karpv1.NodeClaim // pod name to the NodeClaim it is planned onto
	reasons   map[string]string            // pod name to its FailedScheduling note
}

// run plays sc: creates its objects and pods, starts a scheduler with the real planner, waits
// until every pod is planned or reported unschedulable, runs the fidelity check, then sc.check.
func (e *env) run(t *testing.T, sc scenario) *outcome {
	t.Helper()
	ns := e.newNamespace(t)
	for _, np := range sc.nodePools {
		e.create(t, ns, np)
	}
	if sc.objects != nil {
		for _, obj := range sc.objects(ns) {
			e.create(t, ns, obj)
		}
	}
	pods := e.createPods(t, ns, sc.pods...)
	e.startScheduler(t, ns, sc.args)
	o := e.awaitOutcome(t, ns, pods, sc.unschedulable)
	e.verifyFidelity(t)
	if sc.check != nil {
		sc.check(t, o)
	}
	return o
}

// newNamespace creates a namespace for one case, with the default ServiceAccount admission
// requires of pods (no controller creates it here), and removes what the case leaves behind
// in the cluster once it ends.
func (e *env) newNamespace(t *testing.T) string {
	t.Helper()
	e.cases++
	ns := fmt.Sprintf("case-%02d", e.cases)
	ctx := t.Context()
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}
	if _, err := e.kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating service account: %v", err)
	}
	t.Cleanup(func() { e.cleanUp(t, ns) })
	return ns
}

// cleanUp deletes the case's pods and daemonsets and every NodeClaim, NodePool and Node, so
// the next case starts from an empty cluster. Namespaces, volumes and StorageClasses stay (no
// controller would finish their deletion here); cases name them after their namespace.
func (e *env) cleanUp(t *testing.T, ns string) {
	ctx := context.Background()
	zero := int64(0)
	errs := []error{
		e.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}),
		e.kube.AppsV1().DaemonSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}),
		e.kube.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}),
		e.client.DeleteAllOf(ctx, &karpv1.NodeClaim{}),
		e.client.DeleteAllOf(ctx, &karpv1.NodePool{}),
	}
	for _, err := range errs {
		if err != nil {
			t.Errorf("cleaning up after the case: %v", err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, await, true, func(ctx context.Context) (bool, error) {
		pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var claims karpv1.NodeClaimList
		if err := e.client.List(ctx, &claims); err != nil {
			return false, err
		}
		var pools karpv1.NodePoolList
		if err := e.client.List(ctx, &pools); err != nil {
			return false, err
		}
		return len(pods.Items)+len(claims.Items)+len(pools.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("waiting for the case's objects to go: %v", err)
	}
}

// create creates obj (in ns when it is namespaced) and then writes the status it was given,
// which create requests ignore: a NodePool that is not Ready, a bound volume.
func (e *env) create(t *testing.T, ns string, obj client.Object) {
	t.Helper()
	ctx := t.Context()
	if namespaced(obj) {
		obj.SetNamespace(ns)
	}
	desired := obj.DeepCopyObject().(client.Object)
	if err := e.client.Create(ctx, obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	withStatus := false
	switch want := desired.(type) {
	case *karpv1.NodePool:
		withStatus = len(want.Status.Conditions) > 0
		obj.(*karpv1.NodePool).Status = want.Status
	case *karpv1.NodeClaim:
		withStatus = len(want.Status.Conditions) > 0 || len(want.Status.Capacity) > 0
		obj.(*karpv1.NodeClaim).Status = want.Status
	case *corev1.Node:
		withStatus = len(want.Status.Allocatable) > 0
		obj.(*corev1.Node).Status = want.Status
	case *corev1.PersistentVolume:
		withStatus = want.Status.Phase != ""
		obj.(*corev1.PersistentVolume).Status = want.Status
	case *corev1.PersistentVolumeClaim:
		withStatus = want.Status.Phase != ""
		obj.(*corev1.PersistentVolumeClaim).Status = want.Status
	}
	if withStatus {
		if err := e.client.Status().Update(ctx, obj); err != nil {
			t.Fatalf("writing the status of %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

func namespaced(obj client.Object) bool {
	switch obj.(type) {
	case *karpv1.NodePool, *karpv1.NodeClaim, *corev1.PersistentVolume, *storagev1.StorageClass, *corev1.Node, *kwokv1alpha1.KWOKNodeClass:
		return false
	}
	return true
}

// createPods creates pods of the joinery profile in ns and marks them the way kube-scheduler
// does when the cluster has no nodes.
func (e *env) createPods(t *testing.T, ns string, pods ...*corev1.Pod) []*corev1.Pod {
	t.Helper()
	out := make([]*corev1.Pod, 0, len(pods))
	for _, pod := range pods {
		pod = pod.DeepCopy()
		pod.Namespace = ns
		created, err := e.kube.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod %s: %v", pod.Name, err)
		}
		created.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: noNodesMessage,
		}}
		updated, err := e.kube.CoreV1().Pods(ns).UpdateStatus(t.Context(), created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("marking pod %s unschedulable: %v", pod.Name, err)
		}
		out = append(out, updated)
	}
	return out
}

// startScheduler builds the Provisioner the way kube-scheduler does (by the framework, from a
// profile, with its own informers) with the real planner over the test catalog; the
// unavailable-offerings record is read from ns. It stops when the test ends.
func (e *env) startScheduler(t *testing.T, ns string, args map[string]any) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ctx = klog.NewContext(ctx, klog.Background())

	planners := &planner.Config{
		InstanceTypes: func(c client.Client, overlay cloudprovider.Overlay) (cloudprovider.InstanceTypeLister, error) {
			return kwok.NewWithOverlay(c, e.its, overlay), nil
		},
		SchedulerConfigPath:           e.configPath,
		UnavailableOfferingsNamespace: ns,
	}
	all := map[string]any{"batchIdleDuration": "200ms", "batchMaxDuration": "2s"}
	for k, v := range args {
		all[k] = v
	}
	raw, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: e.kube.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, profileName)
	factory := informers.NewSharedInformerFactory(e.kube, 0)
	profile := &config.KubeSchedulerProfile{
		SchedulerName: profileName,
		Plugins: &config.Plugins{
			QueueSort:  config.PluginSet{Enabled: []config.Plugin{{Name: "PrioritySort"}}},
			Bind:       config.PluginSet{Enabled: []config.Plugin{{Name: "DefaultBinder"}}},
			PostFilter: config.PluginSet{Enabled: []config.Plugin{{Name: plugin.Name}}},
			Reserve:    config.PluginSet{Enabled: []config.Plugin{{Name: plugin.Name}}},
		},
		PluginConfig: []config.PluginConfig{{Name: plugin.Name, Args: &runtime.Unknown{ContentType: runtime.ContentTypeJSON, Raw: raw}}},
	}
	registry := plugins.NewInTreeRegistry()
	if err := registry.Register(plugin.Name, plugin.New(plugin.Options{NewPlanner: planners.New})); err != nil {
		t.Fatal(err)
	}
	metrics.Register()
	_, err = frameworkruntime.NewFramework(ctx, registry, profile,
		frameworkruntime.WithClientSet(e.kube),
		frameworkruntime.WithKubeConfig(e.restConfig),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithEventRecorder(recorder),
		frameworkruntime.WithSnapshotSharedLister(schedcache.NewEmptySnapshot()),
		frameworkruntime.WithPodActivator(noActivation{}),
	)
	if err != nil {
		cancel()
		t.Fatalf("building the scheduler framework: %v", err)
	}
	factory.Start(ctx.Done())
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			broadcaster.Shutdown()
			factory.Shutdown()
		})
	}
	t.Cleanup(stop)
	return stop
}

type noActivation struct{}

func (noActivation) Activate(klog.Logger, map[string]*corev1.Pod) {}

// awaitOutcome waits until every pod is planned onto a NodeClaim or, if unschedulable names
// it, reported unschedulable with the expected reason; a pod that ends the other way fails the
// test at once.
func (e *env) awaitOutcome(t *testing.T, ns string, pods []*corev1.Pod, unschedulable map[string]string) *outcome {
	t.Helper()
	var o *outcome
	var failure error
	var detail string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, await, true, func(ctx context.Context) (bool, error) {
		o, detail, failure = e.observe(ctx, ns, pods, unschedulable)
		return o != nil || failure != nil, nil
	})
	if failure != nil {
		t.Fatal(failure)
	}
	if err != nil {
		t.Fatalf("waiting for every pod to be planned or reported: %v (%s)", err, detail)
	}
	return o
}

// observe returns the outcome once every pod is accounted for, otherwise what is missing, or
// an error when a pod came out other than expected.
func (e *env) observe(ctx context.Context, ns string, pods []*corev1.Pod, unschedulable map[string]string) (*outcome, string, error) {
	claims, err := e.nodeClaims(ctx)
	if err != nil {
		return nil, err.Error(), nil
	}
	list, err := e.kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err.Error(), nil
	}
	notes := map[types.UID]string{}
	for _, ev := range list.Items {
		if ev.Reason == "FailedScheduling" {
			notes[ev.Regarding.UID] = ev.Note
		}
	}
	o := &outcome{namespace: ns, claims: claims, pods: map[string]*corev1.Pod{}, claimOf: map[string]*karpv1.NodeClaim{}, reasons: map[string]string{}}
	onto := map[types.UID]*karpv1.NodeClaim{}
	for _, nc := range claims {
		for _, uid := range simulation.PlannedPods(nc) {
			onto[uid] = nc
		}
	}
	var missing []string
	for _, pod := range pods {
		o.pods[pod.Name] = pod
		want, wantUnschedulable := unschedulable[pod.Name]
		nc, planned := onto[pod.UID]
		note, reported := notes[pod.UID]
		switch {
		case planned && wantUnschedulable:
			return nil, "", fmt.Errorf("pod %s is planned onto NodeClaim %s, want it unschedulable (%q)", pod.Name, nc.Name, want)
		case reported && !wantUnschedulable:
			return nil, "", fmt.Errorf("pod %s is unschedulable: %s", pod.Name, note)
		case reported && !strings.Contains(note, want):
			return nil, "", fmt.Errorf("pod %s is unschedulable with %q, want a reason mentioning %q", pod.Name, note, want)
		case planned:
			o.claimOf[pod.Name] = nc
		case reported:
			o.reasons[pod.Name] = note
		default:
			missing = append(missing, pod.Name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Sprintf("pods not yet planned or reported: %v", missing), nil
	}
	return o, "", nil
}

// nodeClaims lists every NodeClaim, by name.
func (e *env) nodeClaims(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	var list karpv1.NodeClaimList
	if err := e.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	out := make([]*karpv1.NodeClaim, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	slices.SortFunc(out, func(a, b *karpv1.NodeClaim) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// verifyFidelity fails the test when the NodeClaims in the cluster fail the fidelity check.
func (e *env) verifyFidelity(t *testing.T) {
	t.Helper()
	if err := e.fidelity(t.Context()); err != nil {
		t.Errorf("fidelity check: %v", err)
	}
}

// fidelity is the fidelity check on what is in the cluster: each NodeClaim becomes a Node of
// its cheapest instance type (with its taints and the daemons the Filters let onto it), and
// every pod its planned-pods annotation lists must pass the real Filters of the scheduler's
// profile there, against the cluster's volumes, storage classes and pods; no pod may be
// planned onto two NodeClaims, and every planned pod must exist.
func (e *env) fidelity(ctx context.Context) error {
	claims, err := e.nodeClaims(ctx)
	if err != nil {
		return err
	}
	pods, err := e.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	nodes, err := e.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	daemonSets, err := e.kube.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	state := &solver.StaticState{}
	byUID := map[types.UID]*corev1.Pod{}
	for i := range pods.Items {
		state.PodList = append(state.PodList, &pods.Items[i])
		byUID[pods.Items[i].UID] = &pods.Items[i]
	}
	for i := range nodes.Items {
		state.NodeList = append(state.NodeList, &nodes.Items[i])
	}
	for i := range daemonSets.Items {
		state.DaemonSetList = append(state.DaemonSetList, &daemonSets.Items[i])
	}
	plan := &simulation.Plan{}
	var errs []error
	for _, nc := range claims {
		planned := &simulation.PlannedNodeClaim{NodeClaim: nc}
		for _, uid := range simulation.PlannedPods(nc) {
			pod, ok := byUID[uid]
			if !ok {
				errs = append(errs, fmt.Errorf("NodeClaim %s plans pod %s, which does not exist", nc.Name, uid))
				continue
			}
			planned.Pods = append(planned.Pods, pod)
		}
		plan.NewNodeClaims = append(plan.NewNodeClaims, planned)
	}
	factory := informers.NewSharedInformerFactory(e.kube, 0)
	defer factory.Shutdown()
	opts := simulation.FrameworkOptions{Client: e.kube, InformerFactory: factory}
	errs = append(errs, solver.VerifyPlan(ctx, plan, state, e.its, e.profile, nil, nil, opts))
	return errors.Join(errs...)
}

// Checks on an outcome.

func (o *outcome) wantClaims(t *testing.T, n int) {
	t.Helper()
	if len(o.claims) != n {
		t.Fatalf("%d NodeClaims, want %d: %s", len(o.claims), n, o.describe())
	}
}

// describe summarizes the NodeClaims for failure messages.
func (o *outcome) describe() string {
	var parts []string
	for _, nc := range o.claims {
		var names []string
		for name, c := range o.claimOf {
			if c == nc {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		types := instanceTypes(nc)
		if len(types) > 3 {
			types = append(types[:3:3], fmt.Sprintf("and %d more", len(types)-3))
		}
		parts = append(parts, fmt.Sprintf("%s%v pods %v types %v", nc.Name, nc.Labels, names, types))
	}
	return strings.Join(parts, "; ")
}

// claim returns the NodeClaim pod is planned onto.
func (o *outcome) claim(t *testing.T, pod string) *karpv1.NodeClaim {
	t.Helper()
	nc, ok := o.claimOf[pod]
	if !ok {
		t.Fatalf("pod %s is not planned onto a NodeClaim", pod)
	}
	return nc
}

// podsOn returns the names of the case's pods planned onto nc, sorted.
func (o *outcome) podsOn(nc *karpv1.NodeClaim) []string {
	var names []string
	for name, c := range o.claimOf {
		if c == nc {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// instanceTypes returns nc's node.kubernetes.io/instance-type values in the order it lists
// them.
func instanceTypes(nc *karpv1.NodeClaim) []string {
	if r := requirement(nc, corev1.LabelInstanceTypeStable); r != nil && r.Operator == corev1.NodeSelectorOpIn {
		return r.Values
	}
	return nil
}

// requirement returns nc's requirement on key, or nil.
func requirement(nc *karpv1.NodeClaim, key string) *karpv1.NodeSelectorRequirementWithMinValues {
	for i := range nc.Spec.Requirements {
		if nc.Spec.Requirements[i].Key == key {
			return &nc.Spec.Requirements[i]
		}
	}
	return nil
}

// wantRequirement checks nc requires key In exactly values (in any order).
func wantRequirement(t *testing.T, nc *karpv1.NodeClaim, key string, values ...string) {
	t.Helper()
	r := requirement(nc, key)
	if r == nil {
		t.Errorf("NodeClaim %s has no requirement on %s, want In %v", nc.Name, key, values)
		return
	}
	got := slices.Sorted(slices.Values(r.Values))
	want := slices.Sorted(slices.Values(values))
	if r.Operator != corev1.NodeSelectorOpIn || !slices.Equal(got, want) {
		t.Errorf("NodeClaim %s requires %s %s %v, want In %v", nc.Name, key, r.Operator, r.Values, values)
	}
}

func wantLabel(t *testing.T, nc *karpv1.NodeClaim, key, value string) {
	t.Helper()
	if got, ok := nc.Labels[key]; !ok || got != value {
		t.Errorf("NodeClaim %s label %s = %q (set %v), want %q", nc.Name, key, got, ok, value)
	}
}

func wantNoLabel(t *testing.T, nc *karpv1.NodeClaim, key string) {
	t.Helper()
	if got, ok := nc.Labels[key]; ok {
		t.Errorf("NodeClaim %s has label %s=%q, want none", nc.Name, key, got)
	}
}

func wantTypes(t *testing.T, nc *karpv1.NodeClaim, want ...string) {
	t.Helper()
	if got := instanceTypes(nc); !slices.Equal(got, want) {
		t.Errorf("NodeClaim %s instance types %v, want %v", nc.Name, got, want)
	}
}

// distinctLabels returns the values of key over the NodeClaims, failing on a NodeClaim
// without it.
func (o *outcome) distinctLabels(t *testing.T, key string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, nc := range o.claims {
		v, ok := nc.Labels[key]
		if !ok {
			t.Errorf("NodeClaim %s has no %s label", nc.Name, key)
		}
		out[v]++
	}
	return out
}

// Objects of the cases.

func nodePool(name string, opts ...func(*karpv1.NodePool)) *karpv1.NodePool {
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.SchemeGroupVersion.Group, Kind: kwokv1alpha1.KWOKNodeClassKind, Name: nodeClass},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand}},
			},
		}}},
	}
	for _, opt := range opts {
		opt(np)
	}
	return np
}

func weight(w int32) func(*karpv1.NodePool) { return func(np *karpv1.NodePool) { np.Spec.Weight = &w } }

// requires adds a template requirement, replacing one on the same key.
func requires(key string, op corev1.NodeSelectorOperator, minValues *int, values ...string) func(*karpv1.NodePool) {
	return func(np *karpv1.NodePool) {
		reqs := slices.DeleteFunc(np.Spec.Template.Spec.Requirements, func(r karpv1.NodeSelectorRequirementWithMinValues) bool { return r.Key == key })
		np.Spec.Template.Spec.Requirements = append(reqs, karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values, MinValues: minValues})
	}
}

func templateLabels(labels map[string]string) func(*karpv1.NodePool) {
	return func(np *karpv1.NodePool) { np.Spec.Template.ObjectMeta.Labels = labels }
}

func taints(taints ...corev1.Taint) func(*karpv1.NodePool) {
	return func(np *karpv1.NodePool) { np.Spec.Template.Spec.Taints = taints }
}

func startupTaints(taints ...corev1.Taint) func(*karpv1.NodePool) {
	return func(np *karpv1.NodePool) { np.Spec.Template.Spec.StartupTaints = taints }
}

func limits(list corev1.ResourceList) func(*karpv1.NodePool) {
	return func(np *karpv1.NodePool) { np.Spec.Limits = list }
}

func notReady(np *karpv1.NodePool) {
	np.Status.Conditions = []metav1.Condition{{
		Type: "Ready", Status: metav1.ConditionFalse, Reason: "NodeClassNotReady", Message: "the test says so",
		LastTransitionTime: metav1.Now(),
	}}
}
