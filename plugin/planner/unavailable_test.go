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
