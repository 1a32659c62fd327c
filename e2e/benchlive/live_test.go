package benchlive

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/apis"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/localcluster"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/solver"
)

const (
	namespace = "bench"
	pool      = "bench"
	// runTimeout bounds a workload's scale-up; the benchmark reports, it does not judge, so
	// this is only there to end a run that hangs.
	runTimeout = 10 * time.Minute
	// quiet is how long the NodeClaims must stay unchanged for the scale-down to count as
	// settled: consolidateAfter (30 s) plus the disruption poll, a decision's 15 s validation
	// and room for a loaded machine.
	quiet = 90 * time.Second
	// settleTimeout bounds waiting for the scale-down to settle.
	settleTimeout = 12 * time.Minute
)

// result is one workload's row.
type result struct {
	workload       string
	pods           int
	load           string // 1-minute load average when the workload was applied
	allRunning     time.Duration
	lastCreated    time.Duration // apply → last pod created
	lastToRunning  time.Duration // last pod created → all Running
	p50, p99       time.Duration // pod created → Running
	created        int           // NodeClaims created during the scale-up
	nodes          int           // NodeClaims at the end
	price          float64       // $/h of those
	empty          int           // NodeClaims at the end with none of the workload's pods
	underUsed      int           // NodeClaims at the end whose node's pods request under lowShare of it
	leastShare     float64       // the smallest requested share of a NodeClaim's node at the end
	offlineClaims  int           // NodeClaims of one offline plan of every pod
	offlinePrice   float64
	usage          map[localcluster.Component]procUsage // CPU during the scale-up, peak RSS
	settled        time.Duration                        // scale-down: scale → last NodeClaim change
	settledNodes   int
	settledPrice   float64
	settledCreated int    // NodeClaims created during the scale-down (replacements)
	trace          string // joinery-scheduler's batches and throttling during the scale-up
}

// measured are the components whose CPU and memory the benchmark reports.
var measured = []localcluster.Component{localcluster.JoineryScheduler, localcluster.JoineryController, localcluster.Component("kube-apiserver")}

// TestLive runs each workload on a fresh local cluster and prints the table.
func TestLive(t *testing.T) {
	if os.Getenv(enableEnv) != "1" {
		t.Skipf("the live benchmark runs with %s=1 (make bench-live)", enableEnv)
	}
	only := map[string]bool{}
	for _, name := range strings.Split(os.Getenv(onlyEnv), ",") {
		if name != "" {
			only[name] = true
		}
	}
	runs := 1
	if v := os.Getenv(runsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of runs", runsEnv, v)
		}
		runs = n
	}
	var results []result
	for _, w := range workloads {
		if len(only) > 0 && !only[w.name] {
			continue
		}
		var runsOf []result
		for i := 1; i <= runs; i++ {
			name := w.name
			if runs > 1 {
				name = fmt.Sprintf("%s/run-%d", w.name, i)
			}
			t.Run(name, func(t *testing.T) {
				r := runWorkload(t, w)
				runsOf = append(runsOf, r)
				t.Logf("%+v", r)
			})
		}
		results = append(results, runsOf...)
		if len(runsOf) > 1 {
			results = append(results, medianOf(runsOf))
		}
	}
	table := markdown(results)
	fmt.Println(table)
	if out := os.Getenv(outEnv); out != "" {
		f, err := os.OpenFile(out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(table + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

func runWorkload(t *testing.T, w workload) result {
	var opts []framework.Option
	if w.plain {
		opts = append(opts, framework.WithPlainScheduler())
	}
	env, stop, err := framework.StartLocal(opts...)
	if err != nil {
		t.Fatalf("start the local cluster (`make tools build`): %v", err)
	}
	// With JOINERY_BENCH_LIVE_OUT set, the components' logs are kept too, beside the table,
	// so a run can be traced afterwards (the disruption loop's decisions, for instance).
	keep := os.Getenv(outEnv) != ""
	t.Cleanup(func() {
		if err := stop(t.Failed() || keep); err != nil {
			t.Errorf("stop the local cluster: %v", err)
		}
		if t.Failed() || keep {
			t.Logf("component logs kept in %s", env.Cluster.LogsDir())
		}
	})
	t.Logf("local cluster ready in %s", env.StartedIn.Round(time.Millisecond))
	c := controllerClient(t, env)
	setUp(t, env)

	pods := watchPods(t, env)
	claims := watchNodeClaims(t, c)
	before := usage(t, env)
	r := result{workload: w.name, load: loadAverage()}
	if dir := os.Getenv(profileEnv); dir != "" {
		profiled := profileScheduler(t, env, filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "-")+".pprof"))
		defer profiled()
	}
	for _, d := range w.deployments {
		r.pods += int(d.replicas)
	}
	offline := offlinePlan(t, env, c, w)
	r.offlineClaims, r.offlinePrice = len(offline), priceOf(t, c, offline)

	begin := time.Now()
	for _, d := range w.deployments {
		createDeployment(t, env, d)
	}
	if w.plain {
		time.Sleep(time.Until(begin.Add(plainClaimsAfter)))
		createClaims(t, c, offline)
	}
	framework.Eventually(t, runTimeout, fmt.Sprintf("%d pods Running", r.pods), func(context.Context) (bool, error) {
		created, running := pods.counts()
		return running >= r.pods, fmt.Errorf("%d created, %d Running", created, running)
	})
	r.allRunning = time.Since(begin)
	after := usage(t, env)
	r.usage = map[localcluster.Component]procUsage{}
	for _, comp := range measured {
		r.usage[comp] = procUsage{cpuSeconds: after[comp].cpuSeconds - before[comp].cpuSeconds, peakRSSMiB: after[comp].peakRSSMiB}
	}
	r.lastCreated, r.p50, r.p99 = pods.latencies(begin)
	r.lastToRunning = max(r.allRunning-r.lastCreated, 0)
	r.created = claims.count()
	end := listClaims(t, c)
	r.nodes, r.price = len(end), priceOf(t, c, end)
	r.empty = emptyClaims(t, env, end)
	r.underUsed, r.leastShare = underUsed(t, env, end)
	if trace, err := schedulerTrace(filepath.Join(env.Cluster.LogsDir(), string(localcluster.JoineryScheduler)+".log"), begin); err != nil {
		t.Logf("trace: %v", err)
	} else {
		r.trace = trace
	}
	if use, err := schedulerClientUse(t.Context(), env); err != nil {
		t.Logf("client use: %v", err)
	} else {
		r.trace += "; " + use
	}

	if s := w.scaleDown; s != nil {
		createdBefore := claims.count()
		scaleTo(t, env, s.deployment, s.replicas)
		scaled := time.Now()
		last := settle(t, env, c, claims, int(s.replicas), scaled)
		r.settled = last.Sub(scaled)
		if r.settled < 0 {
			r.settled = 0
		}
		final := listClaims(t, c)
		r.settledNodes, r.settledPrice = len(final), priceOf(t, c, final)
		r.settledCreated = claims.count() - createdBefore
		r.trace += "; " + claims.scaleDownTrace(scaled)
		logConsolidationRefusals(t, env, scaled)
	}
	return r
}

// logConsolidationRefusals logs, once each, the reasons consolidation gave since the scale for
// passing nodes over or refusing their commands (Karpenter's Unconsolidatable and
// ConsolidationRejected events on the NodeClaims): a scale-down that settles with nodes left
// says why here.
func logConsolidationRefusals(t *testing.T, env *framework.Env, since time.Time) {
	t.Helper()
	list, err := env.Client.EventsV1().Events("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Logf("listing events: %v", err)
		return
	}
	seen := map[string]bool{}
	for _, e := range list.Items {
		if e.Regarding.Kind != "NodeClaim" || (e.Reason != "Unconsolidatable" && e.Reason != "ConsolidationRejected") {
			continue
		}
		at := e.EventTime.Time
		if at.IsZero() {
			at = e.DeprecatedLastTimestamp.Time
		}
		line := fmt.Sprintf("%s %s: %s", e.Regarding.Name, e.Reason, e.Note)
		if at.Before(since) || seen[line] {
			continue
		}
		seen[line] = true
		t.Logf("scale-down %+.0fs: %s", at.Sub(since).Seconds(), line)
	}
}

func controllerClient(t *testing.T, env *framework.Env) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c
}

// setUp creates the namespace, the KWOKNodeClass and the NodePool: every type of the catalog,
// consolidation of empty and underutilized nodes after 30 s under the default budget.
func setUp(t *testing.T, env *framework.Env) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := env.Client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	env.CreateKWOKNodeClass(t, pool)
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 30s}
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
      requirements:
      - {key: kubernetes.io/os, operator: In, values: [linux]}
`, pool))
}

func podTemplate(d deployment) corev1.PodTemplateSpec {
	labels := map[string]string{"app": d.name}
	for k, v := range d.labels {
		labels[k] = v
	}
	spec := framework.GroupPodSpec(pool, d.cpu, d.memory)
	spec.NodeSelector = nil // the cluster has only the benchmark's NodePool
	if d.constrain != nil {
		d.constrain(&spec, selector("app", d.name))
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}
}

func createDeployment(t *testing.T, env *framework.Env, d deployment) {
	t.Helper()
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptrTo(d.replicas),
			Selector: selector("app", d.name),
			Template: podTemplate(d),
		},
	}
	if _, err := env.Client.AppsV1().Deployments(namespace).Create(t.Context(), deploy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment %s: %v", d.name, err)
	}
}

func scaleTo(t *testing.T, env *framework.Env, name string, replicas int32) {
	t.Helper()
	env.ScaleDeployment(t, namespace, name, replicas)
}

// podTimes records, by pod, when the watch first saw it and when it first saw it Running:
// the test's clock, not the API's second-granular timestamps.
type podTimes struct {
	mu               sync.Mutex
	created, running map[types.UID]time.Time
}

func watchPods(t *testing.T, env *framework.Env) *podTimes {
	t.Helper()
	p := &podTimes{created: map[types.UID]time.Time{}, running: map[types.UID]time.Time{}}
	factory := informers.NewSharedInformerFactoryWithOptions(env.Client, 0, informers.WithNamespace(namespace))
	see := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		now := time.Now()
		p.mu.Lock()
		defer p.mu.Unlock()
		if _, ok := p.created[pod.UID]; !ok {
			p.created[pod.UID] = now
		}
		if _, ok := p.running[pod.UID]; !ok && pod.Status.Phase == corev1.PodRunning {
			p.running[pod.UID] = now
		}
	}
	informer := factory.Core().V1().Pods().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, obj any) { see(obj) }}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return p
}

func (p *podTimes) counts() (created, running int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.created), len(p.running)
}

// latencies returns begin → the last pod's creation, and the p50 and p99 of created → Running.
func (p *podTimes) latencies(begin time.Time) (last, p50, p99 time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var waits []time.Duration
	for uid, created := range p.created {
		if d := created.Sub(begin); d > last {
			last = d
		}
		if running, ok := p.running[uid]; ok {
			waits = append(waits, running.Sub(created))
		}
	}
	slices.Sort(waits)
	return last, percentile(waits, 0.50), percentile(waits, 0.99)
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// claimLog is every NodeClaim name a watch saw, and when the set last changed (a NodeClaim
// created, deleted or marked for deletion), with each NodeClaim's timeline (claimTimes).
type claimLog struct {
	mu         sync.Mutex
	seen       map[string]bool
	lastChange time.Time
	times      map[string]*claimTimes
}

// claimTimes is what the scale-down trace reports of one NodeClaim: when the watch first saw
// it, its last pod event and the Consolidatable transition (the API's, second-granular), and
// when the watch first saw it marked for deletion.
type claimTimes struct {
	created, lastPodEvent, consolidatable, deleting time.Time
}

func watchNodeClaims(t *testing.T, c client.Client) *claimLog {
	t.Helper()
	l := &claimLog{seen: map[string]bool{}, lastChange: time.Now(), times: map[string]*claimTimes{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// Polling at 500 ms is enough: NodeClaims live for seconds at least, and a poll is cheap
	// next to the workload.
	go func() {
		deleting := map[string]bool{}
		for ctx.Err() == nil {
			var list karpv1.NodeClaimList
			if err := c.List(ctx, &list); err == nil {
				now := map[string]bool{}
				l.mu.Lock()
				for _, nc := range list.Items {
					now[nc.Name] = true
					if !l.seen[nc.Name] {
						l.seen[nc.Name] = true
						l.lastChange = time.Now()
						l.times[nc.Name] = &claimTimes{created: l.lastChange}
					}
					if nc.DeletionTimestamp != nil && !deleting[nc.Name] {
						deleting[nc.Name] = true
						l.lastChange = time.Now()
						l.times[nc.Name].deleting = l.lastChange
					}
					l.times[nc.Name].observe(&nc)
				}
				for name := range deleting {
					if !now[name] {
						delete(deleting, name)
						l.lastChange = time.Now()
					}
				}
				l.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return l
}

// observe records nc's last pod event and Consolidatable transition.
func (ct *claimTimes) observe(nc *karpv1.NodeClaim) {
	if t := nc.Status.LastPodEventTime.Time; !t.IsZero() {
		ct.lastPodEvent = t
	}
	if cond := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeConsolidatable); cond != nil && cond.Status == metav1.ConditionTrue && ct.deleting.IsZero() {
		ct.consolidatable = cond.LastTransitionTime.Time
	}
}

// scaleDownTrace is, for each NodeClaim the scale-down began with (in the order they were
// marked for deletion, kept ones last), its last pod event, when it became Consolidatable and
// when it was marked for deletion, each relative to the scale; then when each replacement
// appeared. It says where a slow scale-down waited: for consolidateAfter, or for a pass.
func (l *claimLog) scaleDownTrace(scaled time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	rel := func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return fmt.Sprintf("%+.1fs", t.Sub(scaled).Seconds())
	}
	var before, after []string
	for name, ct := range l.times {
		if ct.created.Before(scaled) {
			before = append(before, name)
		} else {
			after = append(after, name)
		}
	}
	order := func(names []string, at func(*claimTimes) time.Time) {
		slices.SortFunc(names, func(a, b string) int {
			ta, tb := at(l.times[a]), at(l.times[b])
			switch {
			case ta.IsZero() != tb.IsZero():
				if ta.IsZero() {
					return 1
				}
				return -1
			case !ta.Equal(tb):
				return ta.Compare(tb)
			}
			return strings.Compare(a, b)
		})
	}
	order(before, func(ct *claimTimes) time.Time { return ct.deleting })
	order(after, func(ct *claimTimes) time.Time { return ct.created })
	var parts []string
	for _, name := range before {
		ct := l.times[name]
		if !ct.deleting.IsZero() && ct.deleting.Before(scaled) {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s last pod event %s, Consolidatable %s, deleting %s", name, rel(ct.lastPodEvent), rel(ct.consolidatable), rel(ct.deleting)))
	}
	for _, name := range after {
		parts = append(parts, fmt.Sprintf("%s created %s", name, rel(l.times[name].created)))
	}
	return "scale-down: " + strings.Join(parts, "; ")
}

func (l *claimLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

func (l *claimLog) last() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastChange
}

// settle waits until replicas pods run and the NodeClaims have not changed for quiet since
// the later of the scale and their last change, and returns when they last changed. Counting
// from the scale too matters: the scale-up's last change is often more than quiet before the
// scale, which would end the wait before consolidateAfter had passed.
func settle(t *testing.T, env *framework.Env, c client.Client, claims *claimLog, replicas int, scaled time.Time) time.Time {
	t.Helper()
	framework.Eventually(t, settleTimeout, "consolidation settled", func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		running := 0
		for _, pod := range list.Items {
			if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
				running++
			}
		}
		if running != replicas || len(list.Items) != replicas {
			return false, fmt.Errorf("%d pods, %d Running", len(list.Items), running)
		}
		from := claims.last()
		if from.Before(scaled) {
			from = scaled
		}
		if since := time.Since(from); since < quiet {
			return false, fmt.Errorf("NodeClaims unchanged for %s (since the scale or their last change)", since.Round(time.Second))
		}
		return true, nil
	})
	return claims.last()
}

func listClaims(t *testing.T, c client.Client) []*karpv1.NodeClaim {
	t.Helper()
	var list karpv1.NodeClaimList
	if err := c.List(t.Context(), &list); err != nil {
		t.Fatalf("list NodeClaims: %v", err)
	}
	var out []*karpv1.NodeClaim
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			out = append(out, &list.Items[i])
		}
	}
	return out
}

// emptyClaims counts the NodeClaims whose node runs none of the benchmark's pods.
func emptyClaims(t *testing.T, env *framework.Env, claims []*karpv1.NodeClaim) int {
	t.Helper()
	list, err := env.Client.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	used := map[string]bool{}
	byUID := map[types.UID]corev1.Pod{}
	for _, pod := range list.Items {
		used[pod.Spec.NodeName] = true
		byUID[pod.UID] = pod
	}
	empty := 0
	for _, nc := range claims {
		if nc.Status.NodeName != "" && used[nc.Status.NodeName] {
			continue
		}
		empty++
		// Where the pods planned onto it went: the trace of why it is empty.
		var planned []string
		for _, uid := range simulation.PlannedPods(nc) {
			if pod, ok := byUID[uid]; ok {
				planned = append(planned, pod.Name+" on "+pod.Spec.NodeName)
			} else {
				planned = append(planned, string(uid)+" (no such pod)")
			}
		}
		t.Logf("empty NodeClaim %s (%s, node %q): planned pods %v", nc.Name, nc.Labels[corev1.LabelInstanceTypeStable], nc.Status.NodeName, planned)
	}
	return empty
}

// lowShare is issue 24's bar: a scale-up must end with no NodeClaim whose node's pods request
// less than this share of it (the larger of cpu and memory).
const lowShare = 0.25

// underUsed counts the NodeClaims whose node's pods request less than lowShare of it (one
// with no node yet counts), and returns the smallest share.
func underUsed(t *testing.T, env *framework.Env, claims []*karpv1.NodeClaim) (int, float64) {
	t.Helper()
	pods, err := env.Client.CoreV1().Pods(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	nodes, err := env.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	shares := framework.RequestedShares(nodes.Items, pods.Items)
	under, least := 0, 1.0
	for _, nc := range claims {
		share := shares[nc.Status.NodeName]
		if share < lowShare {
			under++
		}
		least = min(least, share)
	}
	return under, least
}

// priceOf is the hourly price of the NodeClaims: a launched one at its instance type, zone
// and capacity type, an unlaunched one at its cheapest compatible offering.
func priceOf(t *testing.T, c client.Client, claims []*karpv1.NodeClaim) float64 {
	t.Helper()
	provider, err := kwok.New(c, kwok.Options{})
	if err != nil {
		t.Fatal(err)
	}
	types, err := provider.GetInstanceTypes(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range types {
		byName[it.Name] = it
	}
	var total float64
	for _, nc := range claims {
		reqs := scheduling.NewRequirements()
		var names []string
		for _, r := range nc.Spec.Requirements {
			if r.Operator != corev1.NodeSelectorOpIn {
				continue
			}
			switch r.Key {
			case corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey:
				reqs.Add(scheduling.NewRequirement(r.Key, corev1.NodeSelectorOpIn, r.Values...))
			case corev1.LabelInstanceTypeStable:
				names = r.Values
			}
		}
		for _, key := range []string{corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey} {
			if v := nc.Labels[key]; v != "" {
				reqs.Add(scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, v))
			}
		}
		if v := nc.Labels[corev1.LabelInstanceTypeStable]; v != "" {
			names = []string{v}
		}
		best := math.Inf(1)
		for _, name := range names {
			if it, ok := byName[name]; ok {
				best = min(best, it.CheapestPrice(reqs))
			}
		}
		if !math.IsInf(best, 1) {
			total += best
		}
	}
	return total
}

// offlinePlan plans every pod of the workload in one batch with the solver, offline, on an
// empty cluster: joinery-scheduler's profile, the NodePool and the kwok catalog. It is the
// capacity one batch of all the pods would buy.
func offlinePlan(t *testing.T, env *framework.Env, c client.Client, w workload) []*karpv1.NodeClaim {
	t.Helper()
	ctx := t.Context()
	nodePool := &karpv1.NodePool{}
	if err := c.Get(ctx, client.ObjectKey{Name: pool}, nodePool); err != nil {
		t.Fatalf("get nodepool: %v", err)
	}
	provider, err := kwok.New(c, kwok.Options{})
	if err != nil {
		t.Fatal(err)
	}
	config, err := localcluster.SchedulerConfig(env.Cluster.KubeconfigOf(localcluster.JoineryScheduler), false)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(path, config, 0o600); err != nil {
		t.Fatal(err)
	}
	profile, err := simulation.LoadProfile(path, corev1.DefaultSchedulerName)
	if err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for _, d := range w.deployments {
		tmpl := podTemplate(d)
		for i := range int(d.replicas) {
			pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
			pod.Name, pod.Namespace = fmt.Sprintf("%s-%d", d.name, i), namespace
			pod.UID = types.UID(fmt.Sprintf("offline-%s-%d", d.name, i))
			pod.Spec.SchedulerName = corev1.DefaultSchedulerName
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
			pods = append(pods, pod)
		}
	}
	offline := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(offline, 0)
	s, err := solver.New(ctx, solver.Options{
		InstanceTypes: provider,
		Profile:       profile,
		Framework:     simulation.FrameworkOptions{Client: offline, InformerFactory: factory},
	})
	if err != nil {
		t.Fatalf("offline solver: %v", err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	plan, err := s.Plan(ctx, &solver.StaticState{NodePoolList: []*karpv1.NodePool{nodePool}, PodList: pods}, pods)
	if err != nil {
		t.Fatalf("offline plan of %d pods: %v", len(pods), err)
	}
	var out []*karpv1.NodeClaim
	for _, nc := range plan.NewNodeClaims {
		out = append(out, nc.NodeClaim)
	}
	if len(plan.Unschedulable) > 0 {
		t.Logf("the offline plan leaves %d pods unschedulable", len(plan.Unschedulable))
	}
	return out
}

// createClaims creates the NodeClaims planned (offlinePlan) as a provisioner publishes them:
// owned by their NodePool, named after it.
func createClaims(t *testing.T, c client.Client, planned []*karpv1.NodeClaim) {
	t.Helper()
	ctx := t.Context()
	pools := map[string]*karpv1.NodePool{}
	for _, p := range planned {
		nc := p.DeepCopy()
		name := nc.Labels[karpv1.NodePoolLabelKey]
		np, ok := pools[name]
		if !ok {
			np = &karpv1.NodePool{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
				t.Fatalf("get nodepool %s: %v", name, err)
			}
			pools[name] = np
		}
		nc.Name, nc.GenerateName = "", name+"-"
		nc.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(np, karpv1.SchemeGroupVersion.WithKind("NodePool"))}
		if err := c.Create(ctx, nc); err != nil {
			t.Fatalf("create the planned nodeclaim: %v", err)
		}
	}
}

// usage reads the measured components' CPU time and peak RSS.
func usage(t *testing.T, env *framework.Env) map[localcluster.Component]procUsage {
	t.Helper()
	out := map[localcluster.Component]procUsage{}
	var errs []error
	for _, p := range env.Cluster.Processes() {
		comp := localcluster.Component(p.Name)
		if !slices.Contains(measured, comp) {
			continue
		}
		u, err := readUsage(p.PID)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", comp, err))
			continue
		}
		out[comp] = u
	}
	if err := errors.Join(errs...); err != nil {
		t.Logf("process usage: %v", err)
	}
	return out
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f", d.Seconds()) }

// medianOf is one row of the runs' medians, column by column: each figure is its own
// median, so the row need not be one run. Its workload is marked as such, its trace left out.
func medianOf(runs []result) result {
	med := func(get func(result) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = get(r)
		}
		slices.Sort(v)
		if n := len(v); n%2 == 0 {
			return (v[n/2-1] + v[n/2]) / 2
		}
		return v[len(v)/2]
	}
	dur := func(get func(result) time.Duration) time.Duration {
		return time.Duration(med(func(r result) float64 { return float64(get(r)) }))
	}
	count := func(get func(result) int) int {
		return int(math.Round(med(func(r result) float64 { return float64(get(r)) })))
	}
	first := runs[0]
	m := result{
		workload:       fmt.Sprintf("%s (median of %d)", first.workload, len(runs)),
		pods:           first.pods,
		allRunning:     dur(func(r result) time.Duration { return r.allRunning }),
		lastCreated:    dur(func(r result) time.Duration { return r.lastCreated }),
		lastToRunning:  dur(func(r result) time.Duration { return r.lastToRunning }),
		p50:            dur(func(r result) time.Duration { return r.p50 }),
		p99:            dur(func(r result) time.Duration { return r.p99 }),
		created:        count(func(r result) int { return r.created }),
		nodes:          count(func(r result) int { return r.nodes }),
		price:          med(func(r result) float64 { return r.price }),
		empty:          count(func(r result) int { return r.empty }),
		underUsed:      count(func(r result) int { return r.underUsed }),
		leastShare:     med(func(r result) float64 { return r.leastShare }),
		offlineClaims:  first.offlineClaims,
		offlinePrice:   first.offlinePrice,
		settled:        dur(func(r result) time.Duration { return r.settled }),
		settledNodes:   count(func(r result) int { return r.settledNodes }),
		settledPrice:   med(func(r result) float64 { return r.settledPrice }),
		settledCreated: count(func(r result) int { return r.settledCreated }),
		usage:          map[localcluster.Component]procUsage{},
	}
	m.load = strconv.FormatFloat(med(func(r result) float64 {
		l, _ := strconv.ParseFloat(r.load, 64)
		return l
	}), 'f', 2, 64)
	for _, c := range measured {
		m.usage[c] = procUsage{
			cpuSeconds: med(func(r result) float64 { return r.usage[c].cpuSeconds }),
			peakRSSMiB: med(func(r result) float64 { return r.usage[c].peakRSSMiB }),
		}
	}
	return m
}

// markdown renders the results as docs/benchmarks.md's table.
func markdown(results []result) string {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "live benchmark on %s, %s\n\n", host, time.Now().UTC().Format(time.RFC3339))
	b.WriteString("| workload | pods | load | apply → all Running (s) | apply → last pod created (s) | last pod created → all Running (s) | pod p50 / p99 (s) | NodeClaims created | nodes at end | $/h at end | empty | under 25 % requested (least %) | offline plan: NodeClaims, $/h | joinery-scheduler CPU s / peak MiB | joinery-controller CPU s / peak MiB | kube-apiserver CPU s / peak MiB | scale-down settled (s), nodes, $/h, created |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range results {
		cell := func(c localcluster.Component) string {
			u := r.usage[c]
			return fmt.Sprintf("%.1f / %.0f", u.cpuSeconds, u.peakRSSMiB)
		}
		down := "—"
		if r.settled > 0 || r.settledNodes > 0 {
			down = fmt.Sprintf("%s, %d, %.2f, %d", seconds(r.settled), r.settledNodes, r.settledPrice, r.settledCreated)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s / %s | %d | %d | %.2f | %d | %d (%.0f) | %d, %.2f | %s | %s | %s | %s |\n",
			r.workload, r.pods, r.load, seconds(r.allRunning), seconds(r.lastCreated), seconds(r.lastToRunning), seconds(r.p50), seconds(r.p99),
			r.created, r.nodes, r.price, r.empty, r.underUsed, 100*r.leastShare, r.offlineClaims, r.offlinePrice,
			cell(localcluster.JoineryScheduler), cell(localcluster.JoineryController), cell("kube-apiserver"), down)
	}
	b.WriteString("\n")
	for _, r := range results {
		if r.trace != "" {
			fmt.Fprintf(&b, "- %s: %s\n", r.workload, r.trace)
		}
	}
	return b.String()
}
