// Package zonalshift follows the ARC (Application Recovery Controller) shifts of the EKS
// cluster: while a customer's zonal shift, a practice run or an AWS-initiated zonal autoshift
// moves the cluster's traffic away from an availability zone, the AWS provider lists that
// zone's offerings as unavailable (ENABLE_ZONAL_SHIFT), so nothing is planned or launched
// there, and voluntary disruption leaves the zone's nodes alone; when the shift ends, the zone
// comes back and whoever subscribed (the Provisioner's requeue) hears of it.
package zonalshift

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"

	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
)

// API is the part of the ARC zonal shift client the watcher uses
// (arc-zonal-shift:GetManagedResource on the cluster's ARN).
type API interface {
	GetManagedResource(ctx context.Context, in *arczonalshift.GetManagedResourceInput, optFns ...func(*arczonalshift.Options)) (*arczonalshift.GetManagedResourceOutput, error)
}

// Identity is the STS call that names the account, and so the cluster's ARN
// (sts:GetCallerIdentity, which needs no permission).
type Identity interface {
	GetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, optFns ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

// Options configure a Watcher.
type Options struct {
	// ClusterName is the EKS cluster whose shifts count; Region its region.
	ClusterName string
	Region      string
	// ClusterARN is the cluster's ARN; when empty it is built from the caller's account
	// (Identity) on the first refresh.
	ClusterARN string
	Clock      clock.PassiveClock
	Logger     logr.Logger
}

// Kinds of shift, as logs and events name them.
const (
	KindZonalShift  = "zonal shift"
	KindPracticeRun = "practice run"
	KindFIS         = "FIS experiment"
	KindAutoshift   = "zonal autoshift"
)

// shift is what keeps a zone away: its kind and when it expires (zero: until a listing no
// longer shows it, as for an autoshift, which AWS ends when the zone recovers).
type shift struct {
	kind  string
	until time.Time
}

// Watcher keeps the cluster's active shifts, read every poll interval. It is safe for
// concurrent use.
type Watcher struct {
	api      API
	identity Identity
	opts     Options

	mu sync.Mutex
	// away maps a zone ID to the shift that keeps it away longest.
	away map[string]shift
	// reported are the zones the last refresh found away: a zone that leaves them returned.
	reported sets.Set[string]
	returned []func(why string)
}

// New returns a watcher reading shifts through api; identity names the account when
// opts.ClusterARN is empty.
func New(api API, identity Identity, opts Options) *Watcher {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Watcher{api: api, identity: identity, opts: opts, away: map[string]shift{}, reported: sets.New[string]()}
}

// NewFromConfig returns a watcher on cfg's ARC zonal shift and STS clients.
func NewFromConfig(cfg aws.Config, opts Options) *Watcher {
	return New(arczonalshift.NewFromConfig(cfg), sts.NewFromConfig(cfg), opts)
}

// OnZonesReturn registers fn, called (on the refreshing goroutine) with why when a refresh
// finds a zone no longer shifted away: its shift was cancelled, expired or ended.
func (w *Watcher) OnZonesReturn(fn func(why string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.returned = append(w.returned, fn)
}

// clusterARN returns the cluster's ARN, built once from the caller's account and partition.
func (w *Watcher) clusterARN(ctx context.Context) (string, error) {
	w.mu.Lock()
	known := w.opts.ClusterARN
	w.mu.Unlock()
	if known != "" {
		return known, nil
	}
	out, err := w.identity.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", fmt.Errorf("naming the account of cluster %s (sts:GetCallerIdentity): %w", w.opts.ClusterName, awserr.Classify(err))
	}
	caller, err := arn.Parse(aws.ToString(out.Arn))
	if err != nil {
		return "", fmt.Errorf("parsing the caller ARN %q: %w", aws.ToString(out.Arn), err)
	}
	clusterARN := arn.ARN{Partition: caller.Partition, Service: "eks", Region: w.opts.Region, AccountID: aws.ToString(out.Account), Resource: "cluster/" + w.opts.ClusterName}.String()
	w.mu.Lock()
	w.opts.ClusterARN = clusterARN
	w.mu.Unlock()
	return clusterARN, nil
}

// Refresh reads the cluster's active shifts (GetManagedResource): its zonal shifts (a
// customer's, practice runs, FIS experiments) and, when the cluster has zonal autoshift
// enabled, AWS's autoshifts. Every active one counts, applied or not: each names a zone that
// the operator or AWS's telemetry found unfit. On failure the shifts read before stay, until
// they expire; a cluster ARC does not manage has no shifts.
func (w *Watcher) Refresh(ctx context.Context) error {
	clusterARN, err := w.clusterARN(ctx)
	if err != nil {
		return err
	}
	away := map[string]shift{}
	out, err := w.api.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(clusterARN)})
	var notFound *arctypes.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		// Not a managed resource: nothing shifts it. Said once per refresh, as an error, so
		// that an operator who enabled the setting learns the cluster is not registered.
		err = fmt.Errorf("cluster %s is not a managed resource of ARC zonal shift (enable zonal shift on the EKS cluster): %w", clusterARN, awserr.Classify(err))
	case err != nil:
		return fmt.Errorf("reading the zonal shifts of cluster %s (arc-zonal-shift:GetManagedResource): %w", clusterARN, awserr.Classify(err))
	default:
		for _, s := range out.ZonalShifts {
			keep(away, aws.ToString(s.AwayFrom), shift{kind: kindOf(s.ShiftType), until: aws.ToTime(s.ExpiryTime)})
		}
		for _, a := range out.Autoshifts {
			keep(away, aws.ToString(a.AwayFrom), shift{kind: KindAutoshift})
		}
	}
	w.mu.Lock()
	w.away = away
	now := w.active(w.opts.Clock.Now())
	before := w.reported
	w.reported = sets.KeySet(now)
	subscribers := w.returned
	w.mu.Unlock()
	after := sets.KeySet(now)
	if !before.Equal(after) {
		w.opts.Logger.Info("zones under an active zonal shift changed", "cluster", w.opts.ClusterName, "zoneIDs", sets.List(after), "before", sets.List(before))
	}
	if back := before.Difference(after); back.Len() > 0 {
		why := fmt.Sprintf("zonal shift away from %s ended", strings.Join(sets.List(back), ", "))
		for _, fn := range subscribers {
			fn(why)
		}
	}
	return err
}

// keep records s for zone unless a shift that lasts longer is already there.
func keep(away map[string]shift, zone string, s shift) {
	if zone == "" {
		return
	}
	if old, ok := away[zone]; ok && (old.until.IsZero() || !s.until.IsZero() && !s.until.After(old.until)) {
		return
	}
	away[zone] = s
}

func kindOf(t arctypes.ShiftType) string {
	switch t {
	case arctypes.ShiftTypePracticeRun:
		return KindPracticeRun
	case arctypes.ShiftTypeFisExperiment:
		return KindFIS
	case arctypes.ShiftTypeZonalAutoshift:
		return KindAutoshift
	}
	return KindZonalShift
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
			w.opts.Logger.Error(err, "refreshing zonal shifts (a failed read keeps the shifts read before until they expire)", "cluster", w.opts.ClusterName)
		}
	}
}

// AwayFrom returns the IDs of the zones the cluster's traffic is shifted away from now: the
// shifts last read that have not expired since.
func (w *Watcher) AwayFrom() sets.Set[string] {
	return sets.KeySet(w.Active())
}

// Active returns the zones shifted away from now, by ID, each with the kind of its shift.
func (w *Watcher) Active() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.active(w.opts.Clock.Now())
}

// active is Active under w.mu.
func (w *Watcher) active(now time.Time) map[string]string {
	out := map[string]string{}
	for zone, s := range w.away {
		if s.until.IsZero() || s.until.After(now) {
			out[zone] = s.kind
		}
	}
	return out
}
