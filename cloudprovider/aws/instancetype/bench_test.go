package instancetype_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instancetype"
)

// BenchmarkList builds every catalog type (500+) for a class in all four zones of us-west-2,
// from instance types already loaded: the cost GetInstanceTypes pays per NodePool.
func BenchmarkList(b *testing.B) {
	e := newEnv(b)
	p := e.provider(b, instancetype.Options{})
	if err := p.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name  string
		class func() *awsv1.EC2NodeClass
		opts  instancetype.ListOptions
	}{
		{name: "defaults", class: func() *awsv1.EC2NodeClass { return e.resolvedClass() }},
		{name: "kubelet+reservations+unavailable", class: func() *awsv1.EC2NodeClass {
			c := e.resolvedClass()
			c.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](110), SystemReserved: map[string]string{"cpu": "100m", "memory": "100Mi"}}
			c.Status.CapacityReservations = []awsv1.CapacityReservation{{ID: "cr-1", InstanceType: "m5.large", AvailabilityZone: "us-west-2a", InstanceMatchCriteria: "open"}}
			return c
		}, opts: instancetype.ListOptions{Unavailable: map[cloudprovider.OfferingKey]time.Time{
			{CapacityType: karpv1.CapacityTypeSpot, InstanceType: "m5.large", Zone: "us-west-2b"}: time.Now().Add(time.Minute),
		}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			class := c.class()
			b.ReportAllocs()
			var n int
			for b.Loop() {
				its, err := p.List(context.Background(), class, c.opts)
				if err != nil {
					b.Fatal(err)
				}
				n = len(its)
			}
			b.ReportMetric(float64(n), "types/op")
		})
	}
}
