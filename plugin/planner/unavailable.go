package planner

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/cloudprovider"
)

// unavailableOfferings is the scheduler's read-only view of the controller's record. Plan
// calls are serialized by the solver, and refresh runs before each, so current needs no lock;
// skipped, written while the solver plans, has one.
type unavailableOfferings struct {
	client    client.Reader
	namespace string
	current   map[cloudprovider.OfferingKey]time.Time

	mu sync.Mutex
	// skipped is when the earliest offering the plan since the last refresh skipped returns;
	// zero when it skipped none. The plugin plans refused pods again then.
	skipped time.Time
}

func (u *unavailableOfferings) refresh(ctx context.Context, now time.Time) error {
	u.mu.Lock()
	u.skipped = time.Time{}
	u.mu.Unlock()
	var cm corev1.ConfigMap
	err := u.client.Get(ctx, client.ObjectKey{Namespace: u.namespace, Name: cloudprovider.UnavailableOfferingsConfigMap}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		u.current = nil
		return nil
	case err != nil:
		return fmt.Errorf("reading unavailable offerings: %w", err)
	}
	u.current = cloudprovider.ParseUnavailableOfferings(&cm, now)
	return nil
}

func (u *unavailableOfferings) contains(capacityType, instanceType, zone string) bool {
	until, ok := u.current[cloudprovider.OfferingKey{CapacityType: capacityType, InstanceType: instanceType, Zone: zone}]
	if ok {
		u.mu.Lock()
		if u.skipped.IsZero() || until.Before(u.skipped) {
			u.skipped = until
		}
		u.mu.Unlock()
	}
	return ok
}

// skippedUntil returns when the earliest offering skipped since the last refresh returns.
func (u *unavailableOfferings) skippedUntil() (time.Time, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.skipped, !u.skipped.IsZero()
}
