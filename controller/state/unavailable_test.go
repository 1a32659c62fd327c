package state

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joinery-dev/joinery/cloudprovider"
)

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func TestMarkUnavailable(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	clk := clocktesting.NewFakePassiveClock(epoch)
	u := NewUnavailableOfferings(c, c, "kube-system", clk)
	a := cloudprovider.OfferingKey{CapacityType: "spot", InstanceType: "m5.large", Zone: "a"}
	b := cloudprovider.OfferingKey{CapacityType: "on-demand", InstanceType: "c5.xlarge", Zone: "b"}

	if err := u.MarkUnavailable(ctx, 3*time.Minute); err != nil {
		t.Fatalf("marking nothing: %v", err)
	}
	if err := u.MarkUnavailable(ctx, 3*time.Minute, a); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: cloudprovider.UnavailableOfferingsConfigMap}, &cm); err != nil {
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
