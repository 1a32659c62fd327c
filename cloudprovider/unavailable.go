package cloudprovider

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The record of unavailable offerings is cluster state shared by joinery-controller (which
// writes it when a launch meets insufficient capacity) and joinery-scheduler (which skips those
// offerings): the ConfigMap UnavailableOfferingsConfigMap in the controller's namespace. Each data entry is one offering:
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
	// UnavailableOfferingsFormat tells a kubectl user how to read the ConfigMap; writers put it
	// in an annotation.
	UnavailableOfferingsFormat = "key <capacityType>_<instanceType>_<zone>, value RFC 3339 time until which the offering is unavailable"
	keySeparator               = "_"
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
