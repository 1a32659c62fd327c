package cloudprovider

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOfferingKeyRoundTrip(t *testing.T) {
	key := OfferingKey{CapacityType: "spot", InstanceType: "m5.large", Zone: "us-west-2a"}
	if got := key.ConfigMapKey(); got != "spot_m5.large_us-west-2a" {
		t.Errorf("ConfigMapKey() = %q", got)
	}
	if got := key.String(); got != "spot:m5.large:us-west-2a" {
		t.Errorf("String() = %q", got)
	}
	parsed, err := ParseOfferingKey(key.ConfigMapKey())
	if err != nil || parsed != key {
		t.Errorf("ParseOfferingKey() = %v, %v", parsed, err)
	}
	for _, bad := range []string{"", "spot_m5.large", "spot__zone", "a_b_c_d"} {
		if _, err := ParseOfferingKey(bad); err == nil {
			t.Errorf("ParseOfferingKey(%q) succeeded", bad)
		}
	}
}

func TestParseUnavailableOfferings(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: UnavailableOfferingsConfigMap}, Data: map[string]string{
		"spot_m5.large_a":     "2025-01-01T00:03:00Z",
		"spot_m5.large_b":     "2024-12-31T23:59:00Z", // expired
		"spot_m5.large_c":     "soon",                 // malformed time
		"malformed":           "2025-01-01T00:03:00Z",
		"on-demand_t3.nano_a": "2025-01-01T00:00:01Z",
	}}
	got := ParseUnavailableOfferings(cm, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	if len(got) != 2 {
		t.Errorf("ParseUnavailableOfferings() = %v, want the two live entries", got)
	}
	if _, ok := got[OfferingKey{CapacityType: "on-demand", InstanceType: "t3.nano", Zone: "a"}]; !ok {
		t.Errorf("ParseUnavailableOfferings() = %v lacks on-demand:t3.nano:a", got)
	}
}
