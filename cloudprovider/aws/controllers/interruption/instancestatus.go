package interruption

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	awsinterruption "github.com/joinery-dev/joinery/cloudprovider/aws/interruption"
)

// StatusPollerName is the instance status poller's name in logs.
const StatusPollerName = "interruption.instancestatus"

// Karpenter's instance status defaults: poll DescribeInstanceStatus every minute and act on a
// check that has failed for two minutes.
const (
	DefaultStatusInterval     = time.Minute
	DefaultUnhealthyThreshold = 2 * time.Minute
)

// Status check categories, the category label of the unhealthy-instance metric (Karpenter's
// names).
const (
	CategoryInstanceStatus = "InstanceStatus"
	CategorySystemStatus   = "SystemStatus"
)

// instanceStatusUnhealthy is Karpenter's karpenter_interruption_instance_status_unhealthy_total.
var instanceStatusUnhealthy = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "karpenter",
	Subsystem: "interruption",
	Name:      "instance_status_unhealthy_total",
	Help:      "Instances of the cluster whose EC2 status check failed, counted once per instance and category while it stays failed, by category (InstanceStatus, SystemStatus).",
}, []string{"category"})

func init() {
	crmetrics.Registry.MustRegister(instanceStatusUnhealthy)
	for _, c := range []string{CategoryInstanceStatus, CategorySystemStatus} {
		instanceStatusUnhealthy.WithLabelValues(c)
	}
}

// StatusAPI is the part of the EC2 client the poller uses.
type StatusAPI interface {
	DescribeInstanceStatus(ctx context.Context, in *ec2.DescribeInstanceStatusInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error)
}

// StatusPollerOptions configure a StatusPoller; zero values take the defaults.
type StatusPollerOptions struct {
	Interval           time.Duration
	UnhealthyThreshold time.Duration
}

// StatusPoller asks EC2 for the status checks of running instances and terminates, forcefully,
// the NodeClaims of instances whose instance or system reachability check has failed for
// longer than the threshold: the instance_status and system_status messages, acted on as the
// queue's messages are. Scheduled events are left to the queue's AWS Health scheduled changes,
// as in Karpenter, so that one maintenance is not acted on twice. It is a manager.Runnable.
type StatusPoller struct {
	c    *Controller
	ec2  StatusAPI
	opts StatusPollerOptions
	// seen are the instance and category pairs counted in the metric and still failed.
	seen sets.Set[string]
}

var (
	_ manager.Runnable               = (*StatusPoller)(nil)
	_ manager.LeaderElectionRunnable = (*StatusPoller)(nil)
)

// NewStatusPoller returns a poller acting through c (its client, recorder and responses).
func NewStatusPoller(c *Controller, ec2Client StatusAPI, opts StatusPollerOptions) *StatusPoller {
	if opts.Interval == 0 {
		opts.Interval = DefaultStatusInterval
	}
	if opts.UnhealthyThreshold == 0 {
		opts.UnhealthyThreshold = DefaultUnhealthyThreshold
	}
	return &StatusPoller{c: c, ec2: ec2Client, opts: opts, seen: sets.New[string]()}
}

// NeedLeaderElection is true: one replica acts on each instance.
func (p *StatusPoller) NeedLeaderElection() bool { return true }

// Start polls until ctx ends; a failed poll is logged and retried at the next interval.
func (p *StatusPoller) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName(StatusPollerName)
	ctx = log.IntoContext(ctx, logger)
	for {
		if err := p.Poll(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "checking instance status failed; retrying at the next interval", "interval", p.opts.Interval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.c.opts.Clock.After(p.opts.Interval):
		}
	}
}

// Poll reads every running instance's status once and acts on the cluster's unhealthy ones.
func (p *StatusPoller) Poll(ctx context.Context) error {
	unhealthy, err := p.unhealthy(ctx)
	if err != nil {
		return err
	}
	current := sets.New[string]()
	if len(unhealthy) > 0 {
		cluster, err := p.c.indexCluster(ctx)
		if err != nil {
			return err
		}
		for _, u := range unhealthy {
			claim, ours := cluster.claims[u.instanceID]
			if !ours {
				continue
			}
			key := u.instanceID + "/" + u.category
			current.Insert(key)
			if !p.seen.Has(key) {
				log.FromContext(ctx).Info("an instance of the cluster failed its status check", "instance", u.instanceID, "category", u.category, "since", u.since)
				instanceStatusUnhealthy.WithLabelValues(u.category).Inc()
			}
			if !claim.DeletionTimestamp.IsZero() {
				continue // acted on at an earlier poll; it is terminating
			}
			msg := awsinterruption.Message{Kind: u.kind, InstanceIDs: []string{u.instanceID}, Time: u.since}
			if err := p.c.handle(ctx, msg, cluster); err != nil {
				log.FromContext(ctx).Error(err, "acting on an unhealthy instance", "instance", u.instanceID, "category", u.category)
			}
		}
	}
	// An instance healthy again, or gone, counts anew if it fails later.
	p.seen = current
	return nil
}

// unhealthyCheck is a failed status check of one instance.
type unhealthyCheck struct {
	instanceID string
	category   string
	kind       awsinterruption.Kind
	since      time.Time
}

func (p *StatusPoller) unhealthy(ctx context.Context) ([]unhealthyCheck, error) {
	now := p.c.opts.Clock.Now()
	var out []unhealthyCheck
	pager := ec2.NewDescribeInstanceStatusPaginator(p.ec2, &ec2.DescribeInstanceStatusInput{})
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance status: %w", err)
		}
		for _, st := range page.InstanceStatuses {
			id := aws.ToString(st.InstanceId)
			if since, ok := failedSince(st.InstanceStatus); ok && now.Sub(since) >= p.opts.UnhealthyThreshold {
				out = append(out, unhealthyCheck{instanceID: id, category: CategoryInstanceStatus, kind: awsinterruption.InstanceStatus, since: since})
			}
			if since, ok := failedSince(st.SystemStatus); ok && now.Sub(since) >= p.opts.UnhealthyThreshold {
				out = append(out, unhealthyCheck{instanceID: id, category: CategorySystemStatus, kind: awsinterruption.SystemStatus, since: since})
			}
		}
	}
	return out, nil
}

// failedSince is when the earliest failed detail of a status summary failed.
func failedSince(s *ec2types.InstanceStatusSummary) (time.Time, bool) {
	if s == nil {
		return time.Time{}, false
	}
	var since time.Time
	found := false
	for _, d := range s.Details {
		if d.Status != ec2types.StatusTypeFailed {
			continue
		}
		t := aws.ToTime(d.ImpairedSince)
		if !found || t.Before(since) {
			since, found = t, true
		}
	}
	return since, found
}
