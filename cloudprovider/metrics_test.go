package cloudprovider

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// failing answers every call with its error.
type failing struct {
	CloudProvider
	err error
}

func (f failing) Name() string { return "fake" }
func (f failing) Delete(context.Context, *karpv1.NodeClaim) error {
	return f.err
}
func (f failing) Create(context.Context, *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	return nil, f.err
}

func TestInstrumentCountsErrorsByKind(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, method, controller string
		err                      error
		call                     func(CloudProvider) error
		wantKind                 string
		wantCounted              bool
	}{
		{"insufficient capacity", "Create", "t1", NewInsufficientCapacityError(errors.New("none")), func(cp CloudProvider) error {
			_, err := cp.Create(ctx, &karpv1.NodeClaim{})
			return err
		}, "InsufficientCapacityError", true},
		{"other error", "Create", "t2", errors.New("boom"), func(cp CloudProvider) error {
			_, err := cp.Create(ctx, &karpv1.NodeClaim{})
			return err
		}, "", true},
		{"not found ends a delete", "Delete", "t3", NewNodeClaimNotFoundError(errors.New("gone")), func(cp CloudProvider) error {
			return cp.Delete(ctx, &karpv1.NodeClaim{})
		}, "NodeClaimNotFoundError", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := Instrument(failing{err: tt.err}, tt.controller)
			if err := tt.call(cp); !errors.Is(err, tt.err) {
				t.Fatalf("call returned %v, want %v", err, tt.err)
			}
			got := testutil.ToFloat64(methodErrors.WithLabelValues(tt.controller, tt.method, "fake", tt.wantKind))
			if want := map[bool]float64{true: 1, false: 0}[tt.wantCounted]; got != want {
				t.Errorf("errors_total = %v, want %v", got, want)
			}
			if n := testutil.CollectAndCount(methodDuration); n == 0 {
				t.Error("no duration observed")
			}
		})
	}
}

// typed answers GetInstanceTypes with its types.
type typed struct {
	CloudProvider
	types []*InstanceType
}

func (f typed) Name() string { return "fake" }
func (f typed) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*InstanceType, error) {
	return f.types, nil
}

func TestInstrumentRecordsInstanceTypes(t *testing.T) {
	unavailable := NewOffering("zone-a", karpv1.CapacityTypeSpot, 0.05, false)
	types := []*InstanceType{{
		Name:     "metrics.large",
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		Offerings: Offerings{
			NewOffering("zone-a", karpv1.CapacityTypeOnDemand, 0.1, true),
			unavailable,
			NewReservedOffering("zone-a", "cr-1", 0.02, 0),
			NewReservedOffering("zone-a", "cr-2", 0.01, 3),
		},
	}}
	cp := Instrument(typed{types: types}, "metrics-test")
	if _, err := cp.GetInstanceTypes(context.Background(), &karpv1.NodePool{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		metric interface {
			WithLabelValues(...string) prometheus.Gauge
		}
		labels []string
		want   float64
	}{
		{"cpu cores", instanceTypeCPU, []string{"metrics.large"}, 2},
		{"memory bytes", instanceTypeMemory, []string{"metrics.large"}, 8 << 30},
		{"on-demand available", offeringAvailable, []string{"metrics.large", "on-demand", "zone-a"}, 1},
		{"on-demand price", offeringPrice, []string{"metrics.large", "on-demand", "zone-a"}, 0.1},
		{"spot unavailable", offeringAvailable, []string{"metrics.large", "spot", "zone-a"}, 0},
		{"spot price", offeringPrice, []string{"metrics.large", "spot", "zone-a"}, 0.05},
		{"reserved available when one reservation is", offeringAvailable, []string{"metrics.large", "reserved", "zone-a"}, 1},
		{"reserved at the cheapest reservation", offeringPrice, []string{"metrics.large", "reserved", "zone-a"}, 0.01},
	}
	for _, tt := range tests {
		if got := testutil.ToFloat64(tt.metric.WithLabelValues(tt.labels...)); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
