package state

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The record of unavailable offerings is the ConfigMap UnavailableOfferingsConfigMap in the
// controller's namespace. Each data entry is one offering:
//
//	key:   <capacity type>_<instance type>_<zone>   e.g. spot_m5.large_us-west-2a
//	value: RFC 3339 time until which it is unavailable, e.g. 2025-01-01T00:03:00Z
//
// (ConfigMap keys may not contain ':', so '_' separates the parts of Karpenter's
// capacityType:instanceType:zone cache key; none of the parts contains '_'.) An entry whose time
// has passed means nothing; the controller drops such entries when it next writes. Readers such
// as the scheduler plugin parse it with ParseUnavailableOfferings or the format above.
const (
	UnavailableOfferingsConfigMap = "joinery-unavailable-offerings"
	// UnavailableOfferingsTTL is how long an offering stays unavailable after an
	// insufficient-capacity answer, as in Karpenter.
	UnavailableOfferingsTTL = 3 * time.Minute
	// formatAnnotation tells a kubectl user how to read the ConfigMap.
	formatAnnotation = "joinery.dev/format"
	formatHelp       = "key <capacityType>_<instanceType>_<zone>, value RFC 3339 time until which the offering is unavailable"
	keySeparator     = "_"
)

// OfferingKey names an offering the way the record does.
type OfferingKey struct {
	CapacityType string
	InstanceType string
	Zone         string
}

// String is Karpenter's spelling, capacityType:instanceType:zone, for logs and events.
func (k OfferingKey) String() string {
	return k.CapacityType + ":" + k.InstanceType + ":" + k.Zone
}

// ConfigMapKey is the key of the offering's entry in the ConfigMap.
func (k OfferingKey) ConfigMapKey() string {
	return k.CapacityType + keySeparator + k.InstanceType + keySeparator + k.Zone
}

// ParseOfferingKey parses a ConfigMap key.
func ParseOfferingKey(key string) (OfferingKey, error) {
	parts := strings.Split(key, keySeparator)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return OfferingKey{}, fmt.Errorf("key %q is not <capacityType>_<instanceType>_<zone>", key)
	}
	return OfferingKey{CapacityType: parts[0], InstanceType: parts[1], Zone: parts[2]}, nil
}

// ParseUnavailableOfferings returns the offerings of cm still unavailable at now, with the time
// each becomes available again. Malformed entries are skipped: a reader must not fail on what a
// newer writer added.
func ParseUnavailableOfferings(cm *corev1.ConfigMap, now time.Time) map[OfferingKey]time.Time {
	out := map[OfferingKey]time.Time{}
	for key, value := range cm.Data {
		offering, err := ParseOfferingKey(key)
		if err != nil {
			continue
		}
		until, err := time.Parse(time.RFC3339, value)
		if err != nil || !until.After(now) {
			continue
		}
		out[offering] = until
	}
	return out
}

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
func (u *UnavailableOfferings) Unavailable(ctx context.Context) (map[OfferingKey]time.Time, error) {
	cm, err := u.get(ctx)
	if err != nil || cm == nil {
		return map[OfferingKey]time.Time{}, err
	}
	return ParseUnavailableOfferings(cm, u.clock.Now()), nil
}

// MarkUnavailable records offerings as unavailable for ttl from now, extending earlier entries,
// and drops entries that have expired.
func (u *UnavailableOfferings) MarkUnavailable(ctx context.Context, ttl time.Duration, offerings ...OfferingKey) error {
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
	return fmt.Errorf("configmap %s/%s: created and deleted concurrently", u.namespace, UnavailableOfferingsConfigMap)
}

func (u *UnavailableOfferings) get(ctx context.Context) (*corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	err := u.reader.Get(ctx, client.ObjectKey{Namespace: u.namespace, Name: UnavailableOfferingsConfigMap}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting configmap %s/%s: %w", u.namespace, UnavailableOfferingsConfigMap, err)
	}
	return &cm, nil
}

func (u *UnavailableOfferings) create(ctx context.Context, data map[string]string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:        UnavailableOfferingsConfigMap,
			Namespace:   u.namespace,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "joinery-controller"},
			Annotations: map[string]string{formatAnnotation: formatHelp},
		},
		Data: maps.Clone(data),
	}
	if err := u.client.Create(ctx, cm); err != nil {
		return fmt.Errorf("creating configmap %s/%s: %w", u.namespace, UnavailableOfferingsConfigMap, err)
	}
	return nil
}

// patch merges fresh into cm and removes its expired entries (leaving keys it cannot parse) with one JSON merge patch, which
// touches only the keys it names, so concurrent writers of other offerings do not conflict.
func (u *UnavailableOfferings) patch(ctx context.Context, cm *corev1.ConfigMap, fresh map[string]string, now time.Time) error {
	data := map[string]any{}
	live := ParseUnavailableOfferings(cm, now)
	for key := range cm.Data {
		offering, err := ParseOfferingKey(key)
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
		return fmt.Errorf("patching configmap %s/%s: %w", u.namespace, UnavailableOfferingsConfigMap, err)
	}
	return nil
}
