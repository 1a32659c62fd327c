package planner

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/cloudprovider"
)

// unavailableOfferings is the scheduler's read-only view of the controller's record. Plan
// calls are serialized by the solver, and refresh runs before each, so no lock is needed.
type unavailableOfferings struct {
	client    client.Reader
	namespace string
	current   map[cloudprovider.OfferingKey]time.Time
}

func (u *unavailableOfferings) refresh(ctx context.Context, now time.Time) error {
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
	_, ok := u.current[cloudprovider.OfferingKey{CapacityType: capacityType, InstanceType: instanceType, Zone: zone}]
	return ok
}
