package cloudprovider

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

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
