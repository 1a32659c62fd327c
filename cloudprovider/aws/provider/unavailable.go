package provider

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// unavailable remembers what EC2 refused recently: offerings (capacity type, type, zone),
// subnets out of addresses, and spot altogether (the account cannot launch spot). Offerings are
// also written to the shared record, so the scheduler plugin stops planning them.
type unavailable struct {
	clock  clock.PassiveClock
	shared UnavailableOfferings
	log    logr.Logger

	mu        sync.Mutex
	local     map[cloudprovider.OfferingKey]time.Time
	subnets   map[string]time.Time
	spotUntil time.Time
}

func newUnavailable(clk clock.PassiveClock, shared UnavailableOfferings, log logr.Logger) *unavailable {
	return &unavailable{clock: clk, shared: shared, log: log, local: map[cloudprovider.OfferingKey]time.Time{}, subnets: map[string]time.Time{}}
}

// offerings are the offerings unavailable now: this process's and the shared record's.
func (u *unavailable) offerings(ctx context.Context) map[cloudprovider.OfferingKey]time.Time {
	now := u.clock.Now()
	out := map[cloudprovider.OfferingKey]time.Time{}
	if u.shared != nil {
		shared, err := u.shared.Unavailable(ctx)
		if err != nil {
			u.log.Error(err, "reading the unavailable offerings record; using this process's")
		}
		maps.Copy(out, shared)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for k, until := range u.local {
		if !until.After(now) {
			delete(u.local, k)
			continue
		}
		if until.After(out[k]) {
			out[k] = until
		}
	}
	return out
}

// markOfferings records offerings unavailable for the TTL.
func (u *unavailable) markOfferings(ctx context.Context, offerings ...cloudprovider.OfferingKey) {
	if len(offerings) == 0 {
		return
	}
	until := u.clock.Now().Add(cloudprovider.UnavailableOfferingsTTL)
	u.mu.Lock()
	for _, o := range offerings {
		u.local[o] = until
	}
	u.mu.Unlock()
	if u.shared != nil {
		if err := u.shared.MarkUnavailable(ctx, cloudprovider.UnavailableOfferingsTTL, offerings...); err != nil {
			u.log.Error(err, "recording unavailable offerings", "offerings", len(offerings))
		}
	}
}

func (u *unavailable) markSubnet(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.subnets[id] = u.clock.Now().Add(cloudprovider.UnavailableOfferingsTTL)
}

func (u *unavailable) subnetFull(id string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.subnets[id].After(u.clock.Now())
}

func (u *unavailable) markSpot() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.spotUntil = u.clock.Now().Add(cloudprovider.UnavailableOfferingsTTL)
}

// capacityTypeBlocked reports whether a whole capacity type is unavailable.
func (u *unavailable) capacityTypeBlocked(capacityType string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return capacityType == karpv1.CapacityTypeSpot && u.spotUntil.After(u.clock.Now())
}
