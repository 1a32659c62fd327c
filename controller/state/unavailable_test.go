package state

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

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

func TestMarkUnavailable(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	clk := clocktesting.NewFakePassiveClock(epoch)
	u := NewUnavailableOfferings(c, c, "kube-system", clk)
	a := OfferingKey{CapacityType: "spot", InstanceType: "m5.large", Zone: "a"}
	b := OfferingKey{CapacityType: "on-demand", InstanceType: "c5.xlarge", Zone: "b"}

	if err := u.MarkUnavailable(ctx, 3*time.Minute); err != nil {
		t.Fatalf("marking nothing: %v", err)
	}
	if err := u.MarkUnavailable(ctx, 3*time.Minute, a); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: UnavailableOfferingsConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["spot_m5.large_a"] != "2025-01-01T00:03:00Z" || cm.Annotations[formatAnnotation] == "" {
		t.Errorf("configmap data %v annotations %v", cm.Data, cm.Annotations)
	}

	// Two minutes later another offering fails; a stranger's malformed key survives.
	cm.Data["not-an-offering"] = "x"
	if err := c.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(epoch.Add(2 * time.Minute))
	if err := u.MarkUnavailable(ctx, 3*time.Minute, b); err != nil {
		t.Fatal(err)
	}
	got, err := u.Unavailable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[a].Equal(epoch.Add(3*time.Minute)) || !got[b].Equal(epoch.Add(5*time.Minute)) {
		t.Errorf("Unavailable() = %v", got)
	}

	// After a's expiry the next write drops it, and readers ignore it before that.
	clk.SetTime(epoch.Add(4 * time.Minute))
	if got, _ := u.Unavailable(ctx); len(got) != 1 {
		t.Errorf("Unavailable() after a expired = %v", got)
	}
	if err := u.MarkUnavailable(ctx, 3*time.Minute, b); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(&cm), &cm); err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.Data[a.ConfigMapKey()]; ok || cm.Data["not-an-offering"] != "x" || cm.Data[b.ConfigMapKey()] != "2025-01-01T00:07:00Z" {
		t.Errorf("configmap data after expiry = %v", cm.Data)
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
	got := ParseUnavailableOfferings(cm, epoch)
	if len(got) != 2 {
		t.Errorf("ParseUnavailableOfferings() = %v, want the two live entries", got)
	}
	if _, ok := got[OfferingKey{CapacityType: "on-demand", InstanceType: "t3.nano", Zone: "a"}]; !ok {
		t.Errorf("ParseUnavailableOfferings() = %v lacks on-demand:t3.nano:a", got)
	}
}
