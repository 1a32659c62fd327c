package provisioning

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/profile"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/internal/testpods"
	"github.com/joinery-dev/joinery/plugin"
	"github.com/joinery-dev/joinery/plugin/planner"
	"github.com/joinery-dev/joinery/simulation"
)

// fullSchedulerConfig is joinery-scheduler's profile as manifests/deploy configures it: the
// Provisioner at PreFilter (the pin), PostFilter (before DefaultPreemption) and Reserve. %s is
// the plugin's args as JSON.
const fullSchedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: joinery
  plugins:
    postFilter:
      disabled:
      - name: DefaultPreemption
      enabled:
      - name: JoineryProvisioner
      - name: DefaultPreemption
    preFilter:
      enabled:
      - name: JoineryProvisioner
    # Filter keeps a pinned pod off its nominated node when that is not the pinned one
    # (kube-scheduler tries the nominated node regardless of PreFilter).
    filter:
      enabled:
      - name: JoineryProvisioner
    reserve:
      enabled:
      - name: JoineryProvisioner
  pluginConfig:
  - name: JoineryProvisioner
    args: %s
`

// startKubeScheduler runs a whole kube-scheduler in the test process — scheduling queue,
// cache, binder — with the Provisioner and the real planner, the way joinery-scheduler does,
// so pods are really scheduled and bound to the nodes a case registers. It stops when the test
// ends.
func (e *env) startKubeScheduler(t *testing.T, ns string) {
	t.Helper()
	e.startKubeSchedulerWith(t, ns, nil)
}

// startKubeSchedulerWith is startKubeScheduler with plugin args besides the batch windows.
func (e *env) startKubeSchedulerWith(t *testing.T, ns string, extra map[string]any) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ctx = klog.NewContext(ctx, klog.Background())

	all := map[string]any{"batchIdleDuration": "200ms", "batchMaxDuration": "2s"}
	for k, v := range extra {
		all[k] = v
	}
	args, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	configPath := filepath.Join(clusterDir, ns+"-scheduler.yaml")
	data := fmt.Appendf(nil, fullSchedulerConfig, args)
	if err := os.WriteFile(configPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := simulation.DecodeConfiguration(data)
	if err != nil {
		t.Fatal(err)
	}
	planners := &planner.Config{
		InstanceTypes: func(c client.Client, overlay cloudprovider.Overlay) (cloudprovider.InstanceTypeLister, error) {
			return kwok.NewWithOverlay(c, e.its, overlay), nil
		},
		SchedulerConfigPath:           configPath,
		UnavailableOfferingsNamespace: ns,
	}
	metrics.Register()
	factory := scheduler.NewInformerFactory(e.kube, 0)
	dynFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(e.restConfig), 0, corev1.NamespaceAll, nil)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: e.kube.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	sched, err := scheduler.New(ctx, e.kube, factory, dynFactory, profile.NewRecorderFactory(broadcaster),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithFrameworkOutOfTreeRegistry(frameworkruntime.Registry{plugin.Name: plugin.New(plugin.Options{NewPlanner: planners.New})}),
		scheduler.WithKubeConfig(e.restConfig),
		scheduler.WithPodInitialBackoffSeconds(1),
		scheduler.WithPodMaxBackoffSeconds(1),
	)
	if err != nil {
		cancel()
		t.Fatalf("building kube-scheduler: %v", err)
	}
	factory.Start(ctx.Done())
	dynFactory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	dynFactory.WaitForCacheSync(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() { sched.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		broadcaster.Shutdown()
		factory.Shutdown()
		dynFactory.Shutdown()
	})
}

// createPlainPods creates pods in ns for a running scheduler to schedule.
func (e *env) createPlainPods(t *testing.T, ns string, pods ...*corev1.Pod) []*corev1.Pod {
	t.Helper()
	out := make([]*corev1.Pod, 0, len(pods))
	for _, pod := range pods {
		pod = pod.DeepCopy()
		pod.Namespace = ns
		created, err := e.kube.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod %s: %v", pod.Name, err)
		}
		out = append(out, created)
	}
	return out
}

// launchAndInitialize does what joinery-controller, a kubelet and the node lifecycle controller
// do for nc: the kwok provider creates its Node (for the requests simulation.LaunchRequests
// reads, as the lifecycle controller launches), which registers and becomes Ready (the
// unregistered and not-ready taints lifted), and the NodeClaim is Launched, Registered and
// Initialized with its node name.
func (e *env) launchAndInitialize(t *testing.T, nc *karpv1.NodeClaim) {
	t.Helper()
	ctx := t.Context()
	provider := kwok.NewWithInstanceTypes(e.client, e.its)
	// As joinery-controller's lifecycle launches it: for every pod planned onto it.
	toLaunch := nc.DeepCopy()
	requests, err := simulation.LaunchRequests(nc)
	if err != nil {
		t.Fatalf("NodeClaim %s: %v", nc.Name, err)
	}
	toLaunch.Spec.Resources.Requests = requests
	if _, err := provider.Create(ctx, toLaunch); err != nil {
		t.Fatalf("launching NodeClaim %s: %v", nc.Name, err)
	}
	var node corev1.Node
	if err := e.client.Get(ctx, client.ObjectKey{Name: nc.Name}, &node); err != nil {
		t.Fatalf("reading the node of NodeClaim %s: %v", nc.Name, err)
	}
	// Registered and Ready: only the NodeClaim's own taints are left.
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(taint corev1.Taint) bool {
		return !slices.ContainsFunc(nc.Spec.Taints, func(own corev1.Taint) bool { return own.MatchTaint(&taint) })
	})
	if err := e.client.Update(ctx, &node); err != nil {
		t.Fatalf("registering node %s: %v", node.Name, err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := e.client.Status().Update(ctx, &node); err != nil {
		t.Fatalf("making node %s Ready: %v", node.Name, err)
	}
	var current karpv1.NodeClaim
	if err := e.client.Get(ctx, client.ObjectKey{Name: nc.Name}, &current); err != nil {
		t.Fatalf("reading NodeClaim %s: %v", nc.Name, err)
	}
	current.Status.NodeName = node.Name
	current.Status.ProviderID = node.Spec.ProviderID
	now := metav1.Now()
	for _, cond := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
		current.Status.Conditions = append(current.Status.Conditions, metav1.Condition{
			Type: cond, Status: metav1.ConditionTrue, Reason: cond, LastTransitionTime: now, ObservedGeneration: current.Generation,
		})
	}
	if err := e.client.Status().Update(ctx, &current); err != nil {
		t.Fatalf("initializing NodeClaim %s: %v", nc.Name, err)
	}
}

// podsPlannedOnto maps each pod UID to the NodeClaim whose planned-pods annotation lists it.
func podsPlannedOnto(claims []*karpv1.NodeClaim) map[types.UID]*karpv1.NodeClaim {
	out := map[types.UID]*karpv1.NodeClaim{}
	for _, nc := range claims {
		for _, uid := range simulation.PlannedPods(nc) {
			out[uid] = nc
		}
	}
	return out
}

// pollUntil polls cond every 50 ms until it reports done, failing the test when it returns
// an error (at once) or the await timeout passes (with what it last reported).
func pollUntil(t *testing.T, what string, cond func(ctx context.Context) (done bool, detail string, err error)) {
	t.Helper()
	var detail string
	var failure error
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, await, true, func(ctx context.Context) (bool, error) {
		var done bool
		done, detail, failure = cond(ctx)
		return done || failure != nil, nil
	})
	if failure != nil {
		t.Fatalf("%s: %v", what, failure)
	}
	if err != nil {
		t.Fatalf("%s: %v (%s)", what, err, detail)
	}
}

// TestZoneSpreadPinHoldsWhileItsPlanArrives (issue 17, defect 1) forces, through the API
// server and a real kube-scheduler, the interleaving that left empty NodeClaims in e2e
// TestMixedWorkloadGetsNodesAndRuns: four zone-spread pods (maxSkew 1, one per node) are
// planned two per zone; zone b already has a node, so it is a spread domain with none of the
// pods. Zone a's two NodeClaims come up first: one pod binds, and PodTopologySpread rejects
// the other on its own node (2 pods in a, 0 in b). That pod must keep its pin — its plan's
// zone-b pods are still on their way — and bind there once they are placed; planning it again
// would leave its node empty.
func TestZoneSpreadPinHoldsWhileItsPlanArrives(t *testing.T) {
	h := holdZoneSpreadPlan(t)
	// Zone b comes up: every pod binds where it was planned, and no NodeClaim was added.
	h.launchZone(t, "test-zone-b")
	h.awaitPlanBound(t)
}

// TestHeldPodsCapacityStaysTheirs (issue 17): while a pod is held on its own node by its
// spread, the node is promised to it. kube-scheduler alone would give it away: the held pod's
// nomination is cleared by DefaultPreemption (no victims), and another pod binds there — one
// that fits the node's free capacity only without the held pod (the held pod, retried once its
// plan arrives, is then rejected for resources and planned onto a new NodeClaim), or one whose
// required anti-affinity the held pod matches (it is then rejected by InterPodAffinity for
// good). Here such a pod, which only that node may take (a label the NodePool cannot give),
// arrives while the pod is held: it must be kept off, and the plan completes as made.
func TestHeldPodsCapacityStaysTheirs(t *testing.T) {
	cases := []struct {
		name string
		// other builds the pod that arrives, given the held pod's node.
		other func(node *corev1.Node) *corev1.Pod
		why   string
	}{
		{
			name: "resources",
			other: func(node *corev1.Node) *corev1.Pod {
				// It fits the node alone (the held pod is not bound), not beside it (500m).
				free := node.Status.Allocatable.Cpu().DeepCopy()
				free.Sub(resource.MustParse("250m"))
				return pod("filler", free.String(), "64Mi")
			},
			why: "insufficient cpu",
		},
		{
			name: "anti-affinity",
			other: func(*corev1.Node) *corev1.Pod {
				// No requests: the node has room for it beside the held pod.
				return pod("avoider", "0", "0", testpods.AntiAffine(corev1.LabelHostname, "web"))
			},
			why: "pod anti-affinity",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := holdZoneSpreadPlan(t)
			e := h.e
			ctx := t.Context()
			var node corev1.Node
			if err := e.client.Get(ctx, client.ObjectKey{Name: h.held}, &node); err != nil {
				t.Fatalf("reading the held pod's node: %v", err)
			}
			before := node.DeepCopy()
			node.Labels["test-only"] = "held"
			if err := e.client.Patch(ctx, &node, client.MergeFrom(before)); err != nil {
				t.Fatalf("labelling node %s: %v", node.Name, err)
			}
			other := tc.other(&node)
			other.Spec.NodeSelector = map[string]string{"test-only": "held"}
			other = e.createPlainPods(t, h.ns, other)[0]
			last := ""
			pollUntil(t, "waiting for "+other.Name+" to be kept off the held pod's node", func(ctx context.Context) (bool, string, error) {
				if err := h.noNewNodeClaim(ctx); err != nil {
					return false, "", err
				}
				got, err := e.kube.CoreV1().Pods(h.ns).Get(ctx, other.Name, metav1.GetOptions{})
				if err != nil {
					return false, last, nil
				}
				if got.Spec.NodeName != "" {
					return false, "", fmt.Errorf("pod %s bound to %s, promised to the held pod", got.Name, got.Spec.NodeName)
				}
				last = scheduledMessage(got)
				return strings.Contains(last, fmt.Sprintf("promised to 1 pod(s) waiting for NodeClaim %s (%s)", h.held, tc.why)), last, nil
			})
			h.launchZone(t, "test-zone-b")
			h.awaitPlanBound(t)
		})
	}
}

// halfUpPlan is a zone-spread plan whose zone-a nodes are up, one pod bound there and the
// other held on its own node by its spread, while zone b's NodeClaims still launch.
type halfUpPlan struct {
	e      *env
	ns     string
	byZone map[string][]*karpv1.NodeClaim
	onto   map[types.UID]*karpv1.NodeClaim
	// held is the NodeClaim (and node) of the held pod.
	held    string
	planned map[string]bool
}

// taintedNodeInZoneB is a node of zone b that takes none of the tests' pods (tainted) but counts
// as a spread domain, so a zone spread sees zone b before any NodeClaim lands there.
func taintedNodeInZoneB(ns string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-existing-b", Labels: map[string]string{
			zone: "test-zone-b", corev1.LabelHostname: ns + "-existing-b", corev1.LabelOSStable: "linux",
		}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "other", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110"),
		}},
	}
}

// holdZoneSpreadPlan plays TestZoneSpreadPinHoldsWhileItsPlanArrives up to the held pod.
func holdZoneSpreadPlan(t *testing.T) *halfUpPlan {
	t.Helper()
	e := testEnv(t)
	ns := e.newNamespace(t)
	zones := []string{"test-zone-a", "test-zone-b"}
	e.create(t, ns, nodePool("default", requires(zone, corev1.NodeSelectorOpIn, nil, zones...)))
	e.create(t, ns, taintedNodeInZoneB(ns))
	pods := e.createPlainPods(t, ns, pods(4, "web", "500m", "512Mi", labelled("app", "web"),
		requireNodeTerms(in(zone, zones...)),
		testpods.Spread(zone, "web", corev1.DoNotSchedule), testpods.AntiAffine(corev1.LabelHostname, "web"))...)
	e.startKubeScheduler(t, ns)

	// The plan: one NodeClaim per pod, two per zone.
	var claims []*karpv1.NodeClaim
	pollUntil(t, "waiting for the plan", func(ctx context.Context) (bool, string, error) {
		var err error
		if claims, err = e.nodeClaims(ctx); err != nil {
			return false, err.Error(), nil
		}
		onto := podsPlannedOnto(claims)
		return len(onto) == len(pods), fmt.Sprintf("%d of %d pods planned onto %d NodeClaims", len(onto), len(pods), len(claims)), nil
	})
	byZone := map[string][]*karpv1.NodeClaim{}
	for _, nc := range claims {
		r := requirement(nc, zone)
		if r == nil || len(r.Values) != 1 || len(simulation.PlannedPods(nc)) != 1 {
			t.Fatalf("NodeClaim %s: zone requirement %v, planned pods %v; want one zone and one pod each", nc.Name, r, simulation.PlannedPods(nc))
		}
		byZone[r.Values[0]] = append(byZone[r.Values[0]], nc)
	}
	if len(claims) != 4 || len(byZone["test-zone-a"]) != 2 || len(byZone["test-zone-b"]) != 2 {
		t.Fatalf("planned %d NodeClaims by zone %v, want two per zone", len(claims), byZone)
	}
	planned := map[string]bool{}
	for _, nc := range claims {
		planned[nc.Name] = true
	}
	h := &halfUpPlan{e: e, ns: ns, byZone: byZone, onto: podsPlannedOnto(claims), planned: planned}
	noNewNodeClaim := h.noNewNodeClaim

	// Zone a comes up first.
	h.launchZone(t, "test-zone-a")
	onto := h.onto
	pollUntil(t, "waiting for one zone-a pod to bind and the other to be held by its spread", func(ctx context.Context) (bool, string, error) {
		if err := noNewNodeClaim(ctx); err != nil {
			return false, "", err
		}
		list, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		bound, held := 0, 0
		var states []string
		for _, pod := range list.Items {
			nc := onto[pod.UID]
			if nc == nil || requirement(nc, zone).Values[0] != "test-zone-a" {
				continue
			}
			if pod.Spec.NodeName != "" {
				if pod.Spec.NodeName != nc.Name {
					return false, "", fmt.Errorf("pod %s bound to %s, planned onto %s", pod.Name, pod.Spec.NodeName, nc.Name)
				}
				bound++
				continue
			}
			msg := scheduledMessage(&pod)
			if strings.Contains(msg, "waiting for NodeClaim "+nc.Name) && strings.Contains(msg, "PodTopologySpread") {
				held++
				h.held = nc.Name
			}
			states = append(states, pod.Name+": "+msg)
		}
		return bound == 1 && held == 1, fmt.Sprintf("%d bound, %d held: %v", bound, held, states), nil
	})
	return h
}

// noNewNodeClaim fails the test at once when a pod was planned again.
func (h *halfUpPlan) noNewNodeClaim(ctx context.Context) error {
	now, err := h.e.nodeClaims(ctx)
	if err != nil {
		return nil
	}
	for _, nc := range now {
		if !h.planned[nc.Name] {
			return fmt.Errorf("NodeClaim %s was created for pods %v after the plan: a pod was planned again", nc.Name, simulation.PlannedPods(nc))
		}
	}
	return nil
}

// launchZone launches and initializes the plan's NodeClaims in zone.
func (h *halfUpPlan) launchZone(t *testing.T, zone string) {
	t.Helper()
	for _, nc := range h.byZone[zone] {
		h.e.launchAndInitialize(t, nc)
	}
}

// awaitPlanBound waits until every pod of the plan is bound where it was planned, failing at
// once when one binds elsewhere or a NodeClaim is added.
func (h *halfUpPlan) awaitPlanBound(t *testing.T) {
	t.Helper()
	pollUntil(t, "waiting for every pod to bind to its planned node", func(ctx context.Context) (bool, string, error) {
		if err := h.noNewNodeClaim(ctx); err != nil {
			return false, "", err
		}
		list, err := h.e.kube.CoreV1().Pods(h.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error(), nil
		}
		var waiting []string
		for _, pod := range list.Items {
			nc := h.onto[pod.UID]
			switch {
			case nc == nil:
				return false, "", fmt.Errorf("pod %s is not in the plan", pod.Name)
			case pod.Spec.NodeName == "":
				waiting = append(waiting, pod.Name+": "+scheduledMessage(&pod))
			case pod.Spec.NodeName != nc.Name:
				return false, "", fmt.Errorf("pod %s bound to %s, planned onto %s", pod.Name, pod.Spec.NodeName, nc.Name)
			}
		}
		return len(waiting) == 0, fmt.Sprintf("unbound: %v", waiting), nil
	})
}

// scheduledMessage is the message of pod's PodScheduled condition.
func scheduledMessage(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Message
		}
	}
	return ""
}
