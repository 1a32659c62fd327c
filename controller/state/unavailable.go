package state

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/cloudprovider"
)

// formatAnnotation tells a kubectl user how to read the ConfigMap; the format is
// cloudprovider's (see cloudprovider.UnavailableOfferingsConfigMap).
const formatAnnotation = "joinery.dev/format"

// UnavailableOfferings reads and writes the record in one namespace.
type UnavailableOfferings struct {
	client    client.Client
	reader    client.Reader
	namespace string
	clock     clock.PassiveClock
}

// NewUnavailableOfferings returns the record in namespace. reader should read from the API
// server (the manager's API reader), so the controller does not cache every ConfigMap.
func NewUnavailableOfferings(c client.Client, reader client.Reader, namespace string, clk clock.PassiveClock) *UnavailableOfferings {
	return &UnavailableOfferings{client: c, reader: reader, namespace: namespace, clock: clk}
}

// Unavailable returns the offerings unavailable now.
func (u *UnavailableOfferings) Unavailable(ctx context.Context) (map[cloudprovider.OfferingKey]time.Time, error) {
	cm, err := u.get(ctx)
	if err != nil || cm == nil {
		return map[cloudprovider.OfferingKey]time.Time{}, err
	}
	return cloudprovider.ParseUnavailableOfferings(cm, u.clock.Now()), nil
}

// MarkUnavailable records offerings as unavailable for ttl from now, extending earlier entries,
// and drops entries that have expired.
func (u *UnavailableOfferings) MarkUnavailable(ctx context.Context, ttl time.Duration, offerings ...cloudprovider.OfferingKey) error {
	if len(offerings) == 0 {
		return nil
	}
	now := u.clock.Now()
	fresh := make(map[string]string, len(offerings))
	for _, o := range offerings {
		fresh[o.ConfigMapKey()] = now.Add(ttl).UTC().Format(time.RFC3339)
	}
	// Two attempts: a concurrent writer may create the ConfigMap between our read and create.
	for range 2 {
		cm, err := u.get(ctx)
		if err != nil {
			return err
		}
		if cm == nil {
			err = u.create(ctx, fresh)
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return err
		}
		return u.patch(ctx, cm, fresh, now)
	}
	return fmt.Errorf("configmap %s/%s: created and deleted concurrently", u.namespace, cloudprovider.UnavailableOfferingsConfigMap)
}

func (u *UnavailableOfferings) get(ctx context.Context) (*corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	err := u.reader.Get(ctx, client.ObjectKey{Namespace: u.namespace, Name: cloudprovider.UnavailableOfferingsConfigMap}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting configmap %s/%s: %w", u.namespace, cloudprovider.UnavailableOfferingsConfigMap, err)
	}
	return &cm, nil
}

func (u *UnavailableOfferings) create(ctx context.Context, data map[string]string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:        cloudprovider.UnavailableOfferingsConfigMap,
			Namespace:   u.namespace,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "joinery-controller"},
			Annotations: map[string]string{formatAnnotation: cloudprovider.UnavailableOfferingsFormat},
		},
		Data: maps.Clone(data),
	}
	if err := u.client.Create(ctx, cm); err != nil {
		return fmt.Errorf("creating configmap %s/%s: %w", u.namespace, cloudprovider.UnavailableOfferingsConfigMap, err)
	}
	return nil
}

// patch merges fresh into cm and removes its expired entries (leaving keys it cannot parse) with one JSON merge patch, which
// touches only the keys it names, so concurrent writers of other offerings do not conflict.
func (u *UnavailableOfferings) patch(ctx context.Context, cm *corev1.ConfigMap, fresh map[string]string, now time.Time) error {
	data := map[string]any{}
	live := cloudprovider.ParseUnavailableOfferings(cm, now)
	for key := range cm.Data {
		offering, err := cloudprovider.ParseOfferingKey(key)
		if _, ok := live[offering]; err == nil && !ok {
			data[key] = nil
		}
	}
	for key, value := range fresh {
		data[key] = value
	}
	body, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return fmt.Errorf("encoding patch: %w", err)
	}
	if err := u.client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("patching configmap %s/%s: %w", u.namespace, cloudprovider.UnavailableOfferingsConfigMap, err)
	}
	return nil
}
