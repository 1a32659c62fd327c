package metrics

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// Name names the cluster-state metrics loop in logs.
const Name = "metrics.state"

// DefaultInterval is how often the gauges are recomputed (Karpenter's node metrics: 5 s).
const DefaultInterval = 5 * time.Second

// syncCheckInterval is how often the cache is compared with the API server: the comparison
// lists every Node and NodeClaim from the API server (metadata only, a consistent read), too
// much to do every few seconds on a large cluster.
const syncCheckInterval = time.Minute

var (
	clusterStateNodeCount = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cluster_state", Name: "node_count",
		Help: "Current count of nodes in cluster state",
	})
	clusterStateSynced = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cluster_state", Name: "synced",
		Help: "Returns 1 if cluster state is synced and 0 otherwise. Synced checks that nodeclaims and nodes that are stored in the APIServer are in the controller's cache",
	})
	clusterStateUnsyncedTime = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cluster_state", Name: "unsynced_time_seconds",
		Help: "The time for which cluster state is not synced",
	})
)

func init() {
	crmetrics.Registry.MustRegister(clusterStateNodeCount, clusterStateSynced, clusterStateUnsyncedTime)
}

// Controller recomputes the node, NodePool and cluster-state gauges from the manager's cache
// every Interval. It runs on the leader only, like the controllers whose state it shows.
type Controller struct {
	cache         client.Reader // the manager's cache
	api           client.Reader // the API server, uncached: what the cache must have caught up with
	clock         clock.PassiveClock
	interval      time.Duration
	unsyncedSince time.Time
	// lastSyncCheck and synced are the last comparison with the API server and its result.
	lastSyncCheck time.Time
	lastSynced    bool
}

// New returns the Controller; interval 0 is DefaultInterval, clk nil the real clock.
func New(cache, api client.Reader, clk clock.PassiveClock, interval time.Duration) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Controller{cache: cache, api: api, clock: clk, interval: interval}
}

// Start recomputes the gauges until ctx ends (manager.Runnable).
func (c *Controller) Start(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName(Name))
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := c.Record(ctx); err != nil {
			log.FromContext(ctx).Error(err, "recording cluster metrics")
		}
	}, c.interval)
	return nil
}

// Record recomputes every gauge once.
func (c *Controller) Record(ctx context.Context) error {
	nodes := &corev1.NodeList{}
	if err := c.cache.List(ctx, nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	pods := &corev1.PodList{}
	if err := c.cache.List(ctx, pods); err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	claims := &karpv1.NodeClaimList{}
	if err := c.cache.List(ctx, claims); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	pools := &karpv1.NodePoolList{}
	if err := c.cache.List(ctx, pools); err != nil {
		return fmt.Errorf("listing nodepools: %w", err)
	}
	usage := map[string]*nodeUsage{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Spec.NodeName == "" {
			continue
		}
		u := usage[pod.Spec.NodeName]
		if u == nil {
			u = &nodeUsage{}
			usage[pod.Spec.NodeName] = u
		}
		u.addPod(pod)
	}
	now := c.clock.Now()
	recordNodes(nodes.Items, usage, now)
	recordNodePools(pools.Items)
	clusterStateNodeCount.Set(float64(len(nodes.Items)))
	if c.lastSyncCheck.IsZero() || now.Sub(c.lastSyncCheck) >= syncCheckInterval {
		synced, err := c.synced(ctx, nodes.Items, claims.Items)
		if err != nil {
			return err
		}
		c.lastSyncCheck, c.lastSynced = now, synced
	}
	switch {
	case c.lastSynced:
		c.unsyncedSince = time.Time{}
		clusterStateSynced.Set(1)
		clusterStateUnsyncedTime.Set(0)
	default:
		if c.unsyncedSince.IsZero() {
			c.unsyncedSince = now
		}
		clusterStateSynced.Set(0)
		clusterStateUnsyncedTime.Set(now.Sub(c.unsyncedSince).Seconds())
	}
	return nil
}

// synced reports whether every Node and NodeClaim the API server holds is in the cache.
func (c *Controller) synced(ctx context.Context, nodes []corev1.Node, claims []karpv1.NodeClaim) (bool, error) {
	cached := sets.New[string]()
	for _, n := range nodes {
		cached.Insert("Node/" + n.Name)
	}
	for _, nc := range claims {
		cached.Insert("NodeClaim/" + nc.Name)
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "NodeList"},
		{Group: karpv1.SchemeGroupVersion.Group, Version: karpv1.SchemeGroupVersion.Version, Kind: "NodeClaimList"},
	} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk)
		if err := c.api.List(ctx, list); err != nil {
			return false, fmt.Errorf("listing %s from the API server: %w", gvk.Kind, err)
		}
		kind := gvk.Kind[:len(gvk.Kind)-len("List")]
		for _, item := range list.Items {
			if !cached.Has(kind + "/" + item.Name) {
				return false, nil
			}
		}
	}
	return true, nil
}

// NeedLeaderElection: the gauges describe what the leader acts on.
func (c *Controller) NeedLeaderElection() bool { return true }
