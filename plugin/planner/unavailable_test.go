package planner

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joinery-dev/joinery/cloudprovider"
)

func TestUnavailableOfferingsRefresh(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	record := func(data map[string]string) client.Object {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "joinery", Name: cloudprovider.UnavailableOfferingsConfigMap},
			Data:       data,
		}
	}
	cases := []struct {
		name    string
		objects []client.Object
		want    map[cloudprovider.OfferingKey]bool
	}{{
		name: "no record: everything is available",
		want: map[cloudprovider.OfferingKey]bool{{CapacityType: "spot", InstanceType: "m5.large", Zone: "zone-a"}: false},
	}, {
		name: "entries until a later time are unavailable, expired ones are not",
		objects: []client.Object{record(map[string]string{
			"spot_m5.large_zone-a":      now.Add(time.Minute).Format(time.RFC3339),
			"on-demand_m5.large_zone-a": now.Add(-time.Minute).Format(time.RFC3339),
		})},
		want: map[cloudprovider.OfferingKey]bool{
			{CapacityType: "spot", InstanceType: "m5.large", Zone: "zone-a"}:      true,
			{CapacityType: "on-demand", InstanceType: "m5.large", Zone: "zone-a"}: false,
			{CapacityType: "spot", InstanceType: "m5.large", Zone: "zone-b"}:      false,
		},
	}, {
		name: "a record in another namespace is not read",
		objects: []client.Object{&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: cloudprovider.UnavailableOfferingsConfigMap},
			Data:       map[string]string{"spot_m5.large_zone-a": now.Add(time.Minute).Format(time.RFC3339)},
		}},
		want: map[cloudprovider.OfferingKey]bool{{CapacityType: "spot", InstanceType: "m5.large", Zone: "zone-a"}: false},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := &unavailableOfferings{client: fake.NewClientBuilder().WithObjects(tc.objects...).Build(), namespace: "joinery"}
			if err := u.refresh(t.Context(), now); err != nil {
				t.Fatal(err)
			}
			for key, want := range tc.want {
				if got := u.contains(key.CapacityType, key.InstanceType, key.Zone); got != want {
					t.Errorf("contains(%s) = %v, want %v", key, got, want)
				}
			}
		})
	}
}

// TestUnavailableOfferingsSkippedUntil: the plugin arms its one timer for the earliest
// unavailable offering the plan skipped; offerings recorded but never asked about do not
// count, and each refresh starts over.
func TestUnavailableOfferingsSkippedUntil(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "joinery", Name: cloudprovider.UnavailableOfferingsConfigMap},
		Data: map[string]string{
			"spot_m5.large_zone-a":  now.Add(3 * time.Minute).Format(time.RFC3339),
			"spot_m5.large_zone-b":  now.Add(2 * time.Minute).Format(time.RFC3339),
			"spot_m5.xlarge_zone-a": now.Add(time.Minute).Format(time.RFC3339), // never asked about
		},
	}
	u := &unavailableOfferings{client: fake.NewClientBuilder().WithObjects(cm).Build(), namespace: "joinery"}
	if err := u.refresh(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	if _, skipped := u.skippedUntil(); skipped {
		t.Fatal("skipped an offering before the plan asked about one")
	}
	u.contains("on-demand", "m5.large", "zone-a")
	u.contains("spot", "m5.large", "zone-a")
	u.contains("spot", "m5.large", "zone-b")
	if got, skipped := u.skippedUntil(); !skipped || !got.Equal(now.Add(2*time.Minute)) {
		t.Errorf("skippedUntil = %v, %v; want %v (the earliest skipped, not the earliest recorded)", got, skipped, now.Add(2*time.Minute))
	}
	if err := u.refresh(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	if _, skipped := u.skippedUntil(); skipped {
		t.Error("a refresh kept the previous plan's skipped offering")
	}
}
