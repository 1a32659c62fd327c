// Package zonalshift follows the ARC (Application Recovery Controller) zonal shifts of the EKS
// cluster: while a shift moves the cluster's traffic away from an availability zone, the AWS
// provider lists that zone's offerings as unavailable (ENABLE_ZONAL_SHIFT), so nothing is
// planned or launched there; when the shift is cancelled or expires, the zone comes back.
package zonalshift

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"

	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
)

// API is the part of the ARC zonal shift client the watcher uses
// (arc-zonal-shift:ListZonalShifts).
type API interface {
	ListZonalShifts(ctx context.Context, in *arczonalshift.ListZonalShiftsInput, optFns ...func(*arczonalshift.Options)) (*arczonalshift.ListZonalShiftsOutput, error)
}

// Options configure a Watcher.
type Options struct {
	// ClusterName is the EKS cluster whose shifts count; Region its region.
	ClusterName string
	Region      string
	Clock       clock.PassiveClock
	Logger      logr.Logger
}

// Watcher keeps the cluster's active zonal shifts, listed every poll interval. It is safe for
// concurrent use.
type Watcher struct {
	api  API
	opts Options

	mu sync.Mutex
	// away maps a zone ID to when the latest active shift away from it expires.
	away map[string]time.Time
}

// New returns a watcher listing shifts through api.
func New(api API, opts Options) *Watcher {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Watcher{api: api, opts: opts, away: map[string]time.Time{}}
}

// NewFromConfig returns a watcher on cfg's ARC zonal shift client.
func NewFromConfig(cfg aws.Config, opts Options) *Watcher {
	return New(arczonalshift.NewFromConfig(cfg), opts)
}

// Refresh lists the active zonal shifts and keeps the cluster's. On failure the shifts listed
// before stay, until they expire.
func (w *Watcher) Refresh(ctx context.Context) error {
	away := map[string]time.Time{}
	paginator := arczonalshift.NewListZonalShiftsPaginator(w.api, &arczonalshift.ListZonalShiftsInput{Status: arctypes.ZonalShiftStatusActive})
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing active zonal shifts (arc-zonal-shift:ListZonalShifts): %w", awserr.Classify(err))
		}
		for _, shift := range page.Items {
			if shift.Status != arctypes.ZonalShiftStatusActive || !w.ofCluster(aws.ToString(shift.ResourceIdentifier)) {
				continue
			}
			zone, expiry := aws.ToString(shift.AwayFrom), aws.ToTime(shift.ExpiryTime)
			if zone != "" && expiry.After(away[zone]) {
				away[zone] = expiry
			}
		}
	}
	w.mu.Lock()
	before := w.active(w.opts.Clock.Now())
	w.away = away
	after := w.active(w.opts.Clock.Now())
	w.mu.Unlock()
	if !before.Equal(after) {
		w.opts.Logger.Info("zones under an active zonal shift changed", "cluster", w.opts.ClusterName, "zoneIDs", sets.List(after), "before", sets.List(before))
	}
	return nil
}

// ofCluster reports whether a shift's resource is the cluster: an EKS cluster ARN of the
// cluster's name (and region, when known).
func (w *Watcher) ofCluster(resource string) bool {
	a, err := arn.Parse(resource)
	if err != nil {
		return false
	}
	return a.Service == "eks" && a.Resource == "cluster/"+w.opts.ClusterName && (w.opts.Region == "" || a.Region == w.opts.Region)
}

// Run refreshes every interval until ctx is done, logging failures. Callers refresh once
// before, so that start-up knows the shifts.
func (w *Watcher) Run(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if err := w.Refresh(ctx); err != nil && ctx.Err() == nil {
			w.opts.Logger.Error(err, "refreshing zonal shifts; keeping the previous ones until they expire", "cluster", w.opts.ClusterName)
		}
	}
}

// AwayFrom returns the IDs of the zones the cluster's traffic is shifted away from now: the
// shifts last listed that have not expired since.
func (w *Watcher) AwayFrom() sets.Set[string] {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.active(w.opts.Clock.Now())
}

// active is AwayFrom under w.mu.
func (w *Watcher) active(now time.Time) sets.Set[string] {
	out := sets.New[string]()
	for zone, until := range w.away {
		if until.After(now) {
			out.Insert(zone)
		}
	}
	return out
}
