// Package garbagecollection is the nodeclaim.garbagecollection controller: it periodically
// reconciles the cloud with the cluster. Instances joinery launched that no NodeClaim claims (for
// example after a crash between launch and the status write) are terminated; Nodes joinery
// launched that no NodeClaim claims are deleted, so their termination finalizer terminates the
// instance and releases them; and launched NodeClaims whose instance is gone are deleted so
// their finalizers clean up.
package garbagecollection

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// Name is the controller's name in logs.
const Name = "nodeclaim.garbagecollection"

const (
	// DefaultInterval is how often the cloud and the cluster are compared.
	DefaultInterval = 2 * time.Minute
	// DefaultGracePeriod is how old an instance must be, or how long ago a NodeClaim must have
	// launched, before it is collected; it covers the window between an instance's launch and
	// its provider ID reaching the NodeClaim, a cache that has not yet seen that write, and a
	// cloud listing that does not show a fresh instance yet.
	DefaultGracePeriod = 30 * time.Second
)

// Options configure a Controller; zero values take the defaults.
type Options struct {
	// Interval is the time between collections; DefaultInterval if zero.
	Interval time.Duration
	// GracePeriod is the minimum age of what is collected; DefaultGracePeriod if zero.
	GracePeriod time.Duration
	// Clock is the time source and ticker; the real clock if nil.
	Clock clock.WithTicker
}

// Controller collects leaked instances and NodeClaims without an instance.
type Controller struct {
	client        client.Client
	cloudProvider cloudprovider.CloudProvider
	recorder      events.EventRecorder
	clock         clock.WithTicker
	interval      time.Duration
	gracePeriod   time.Duration
	// misses counts, per NodeClaim, the sweeps in a row that did not list its instance. Only
	// Start's goroutine (or a test's Collect) touches it.
	misses map[types.UID]int
}

var (
	_ manager.Runnable               = (*Controller)(nil)
	_ manager.LeaderElectionRunnable = (*Controller)(nil)
)

// New returns a Controller that reads NodeClaims through c and instances through cp.
func New(c client.Client, cp cloudprovider.CloudProvider, recorder events.EventRecorder, opts Options) *Controller {
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.GracePeriod == 0 {
		opts.GracePeriod = DefaultGracePeriod
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Controller{
		client:        c,
		cloudProvider: cp,
		recorder:      recorder,
		clock:         opts.Clock,
		interval:      opts.Interval,
		gracePeriod:   opts.GracePeriod,
		misses:        map[types.UID]int{},
	}
}

// NeedLeaderElection is true: two replicas collecting at once would race on the same deletes.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start collects every interval until ctx is done. A failed collection is logged and retried at
// the next tick rather than stopping the manager.
func (c *Controller) Start(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName(Name))
	ticker := c.clock.NewTicker(c.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			if err := c.Collect(ctx); err != nil {
				log.FromContext(ctx).Error(err, "garbage collection failed")
			}
		}
	}
}

// Collect runs one collection over one listing each of the cloud's instances, the Nodes and
// the NodeClaims: leaked instances, Nodes no NodeClaim claims, then NodeClaims whose instance
// is gone. Instances and Nodes are listed before NodeClaims, so a NodeClaim written after an
// instance or Node was listed is still seen.
func (c *Controller) Collect(ctx context.Context) error {
	instances, err := c.cloudProvider.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	var nodes corev1.NodeList
	if err := c.client.List(ctx, &nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	var list karpv1.NodeClaimList
	if err := c.client.List(ctx, &list); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	listed := sets.New[string]()
	for _, instance := range instances {
		listed.Insert(instance.Status.ProviderID)
	}
	claimed := sets.New[string]()
	for i := range list.Items {
		if id := list.Items[i].Status.ProviderID; id != "" {
			claimed.Insert(id)
		}
	}
	terminated, instancesErr := c.collectLeakedInstances(ctx, instances, claimed)
	return errors.Join(instancesErr,
		c.collectOrphanedNodes(ctx, nodes.Items, claimed, terminated),
		c.collectOrphanedNodeClaims(ctx, listed, list.Items))
}

// oldEnough reports whether something created at created is past the grace period.
func (c *Controller) oldEnough(created time.Time) bool {
	return c.clock.Since(created) >= c.gracePeriod
}
