package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/joinery-dev/joinery/apis"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/internal/localcluster"
	"github.com/joinery-dev/joinery/internal/testcluster"
	"github.com/joinery-dev/joinery/simulation"
)

var (
	cluster *localcluster.Cluster
	scheme  = runtime.NewScheme()
	admin   client.Client
)

// awaitTimeout bounds each wait for the loop; it reacts within a second, the rest is room for
// a loaded machine.
const awaitTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, &cluster, testcluster.Options{
		Name: "disruption-integration",
		Setup: func(ctx context.Context, _ *localcluster.Cluster) error {
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				return err
			}
			if err := apis.AddToScheme(scheme); err != nil {
				return err
			}
			var err error
			if admin, err = client.New(cluster.RESTConfig(), client.Options{Scheme: scheme}); err != nil {
				return err
			}
			logFile, err := os.Create(filepath.Join(cluster.LogsDir(), "disruption.log"))
			if err != nil {
				return err
			}
			ctrl.SetLogger(zap.New(zap.WriteTo(logFile), zap.UseDevMode(true)))
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: metav1.NamespaceDefault}}
			return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				err := admin.Create(ctx, sa)
				return err == nil || apierrors.IsAlreadyExists(err), nil
			})
		},
	}))
}

// staticTypes serves the kwok catalog to every NodePool.
type staticTypes cloudprovider.InstanceTypes

func (s staticTypes) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	return s, nil
}

// startLoop runs the disruption loop (Drift, Emptiness, multi- and single-node consolidation) with the solver as its simulation in
// a manager of its own until the returned stop is called.
func startLoop(t *testing.T) (stop func()) {
	t.Helper()
	f, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	its, err := f.Build(catalog.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cluster.RESTConfig(), ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	profile, err := simulation.DefaultProfile()
	if err != nil {
		t.Fatal(err)
	}
	clientset := kubernetes.NewForConfigOrDie(cluster.RESTConfig())
	factory := informers.NewSharedInformerFactory(clientset, 0)
	sim, err := disruption.NewSimulation(ctx, disruption.SimulationOptions{Profile: profile, InstanceTypes: staticTypes(its), Client: clientset, InformerFactory: factory})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: clientset.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	loop := disruption.New(mgr.GetClient(), mgr.GetAPIReader(), broadcaster.NewRecorder(scheme, "karpenter"), clock.RealClock{},
		[]disruption.Method{&disruption.Drift{Simulator: sim}, &disruption.Emptiness{},
			&disruption.MultiNodeConsolidation{Consolidation: disruption.Consolidation{Simulator: sim, InstanceTypes: staticTypes(its)}},
			&disruption.SingleNodeConsolidation{Consolidation: disruption.Consolidation{Simulator: sim, InstanceTypes: staticTypes(its)}}},
		disruption.Options{ValidationDelay: 100 * time.Millisecond, ConsolidationValidationDelay: 100 * time.Millisecond, PollInterval: 500 * time.Millisecond, ReplacementPoll: 200 * time.Millisecond})
	if err := mgr.Add(loop); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		broadcaster.Shutdown()
	}
	t.Cleanup(stop)
	return stop
}

// world is one test's NodePool and objects, labelled so tests do not see each other's.
type world struct {
	t    *testing.T
	pool string
}

// newWorld's NodePool does not consolidate (consolidateAfter: Never).
func newWorld(t *testing.T) *world {
	return newWorldWith(t, karpv1.Disruption{ConsolidateAfter: karpv1.NeverDuration(), Budgets: []karpv1.Budget{{Nodes: "100%"}}})
}

func newWorldWith(t *testing.T, d karpv1.Disruption) *world {
	w := &world{t: t, pool: "disr-" + rand.String(5)}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: w.pool}, Spec: karpv1.NodePoolSpec{
		Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}},
			},
		}},
		Disruption: d,
	}}
	w.create(np)
	return w
}

func (w *world) create(obj client.Object) {
	w.t.Helper()
	if err := admin.Create(context.Background(), obj); err != nil {
		w.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	w.t.Cleanup(func() { _ = admin.Delete(context.Background(), obj) })
}

// node creates an initialized NodeClaim of the world's NodePool and its Ready Node with cpu.
func (w *world) node(name, cpu string, isDrifted bool) *karpv1.NodeClaim {
	w.t.Helper()
	name = w.pool + "-" + name
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		karpv1.NodePoolLabelKey: w.pool, corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		corev1.LabelTopologyZone: "test-zone-a", karpv1.CapacityTypeLabelKey: "on-demand", corev1.LabelInstanceTypeStable: "c5.xlarge",
	}}, Spec: corev1.NodeSpec{ProviderID: "kwok://" + name}}
	w.create(node)
	// The API server's TaintNodesByCondition admission taints a new node not-ready; no node
	// lifecycle controller runs here to lift it once the node is Ready.
	node.Spec.Taints = nil
	if err := admin.Update(ctx, node); err != nil {
		w.t.Fatal(err)
	}
	list := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("58")}
	node.Status = corev1.NodeStatus{Capacity: list, Allocatable: list, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
	if err := admin.Status().Update(ctx, node); err != nil {
		w.t.Fatal(err)
	}
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: w.pool, karpv1.CapacityTypeLabelKey: "on-demand"}},
		Spec: karpv1.NodeClaimSpec{NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{w.pool}}}}}
	w.create(nc)
	nc.Status = karpv1.NodeClaimStatus{NodeName: name, ProviderID: "kwok://" + name, Allocatable: list, Capacity: list}
	conds := []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized, karpv1.ConditionTypeReady}
	if isDrifted {
		conds = append(conds, karpv1.ConditionTypeDrifted)
	}
	for _, c := range conds {
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c})
	}
	if err := admin.Status().Update(ctx, nc); err != nil {
		w.t.Fatal(err)
	}
	return nc
}

// pod creates a running pod bound to node that requests cpu.
func (w *world) pod(name, node, cpu string) {
	w.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: w.pool + "-" + name, Namespace: "default", Labels: map[string]string{"app": w.pool}},
		Spec: corev1.PodSpec{NodeName: w.pool + "-" + node, Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}}}
	w.create(p)
	p.Status.Phase = corev1.PodRunning
	if err := admin.Status().Update(context.Background(), p); err != nil {
		w.t.Fatal(err)
	}
}

// replacements lists the NodeClaims of the world's NodePool that a command launched.
func (w *world) replacements() []karpv1.NodeClaim {
	w.t.Helper()
	var list karpv1.NodeClaimList
	if err := admin.List(context.Background(), &list, client.MatchingLabels{karpv1.NodePoolLabelKey: w.pool}); err != nil {
		w.t.Fatal(err)
	}
	var out []karpv1.NodeClaim
	for _, nc := range list.Items {
		if nc.Annotations[disruption.ReplacementForAnnotationKey] != "" {
			out = append(out, nc)
		}
	}
	return out
}

// consolidatable sets the NodeClaim's Consolidatable condition, as podevents does once
// consolidateAfter has passed.
func (w *world) consolidatable(name string) {
	w.t.Helper()
	nc := &karpv1.NodeClaim{}
	if err := admin.Get(context.Background(), client.ObjectKey{Name: w.pool + "-" + name}, nc); err != nil {
		w.t.Fatal(err)
	}
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue, Reason: "Consolidatable"})
	if err := admin.Status().Update(context.Background(), nc); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) exists(name string) bool {
	err := admin.Get(context.Background(), client.ObjectKey{Name: w.pool + "-" + name}, &karpv1.NodeClaim{})
	if err != nil && !apierrors.IsNotFound(err) {
		w.t.Fatal(err)
	}
	return err == nil
}

func (w *world) tainted(name string) bool {
	node := &corev1.Node{}
	if err := admin.Get(context.Background(), client.ObjectKey{Name: w.pool + "-" + name}, node); err != nil {
		w.t.Fatal(err)
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key == karpv1.DisruptedTaintKey {
			return true
		}
	}
	return false
}

func (w *world) initialize(nc karpv1.NodeClaim) {
	w.t.Helper()
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"})
	if err := admin.Status().Update(context.Background(), &nc); err != nil {
		w.t.Fatal(err)
	}
}

func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, awaitTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
