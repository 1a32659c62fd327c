package planner

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

var _ buffer.Planner = (*refreshingPlanner)(nil)

// PlanWithVirtual plans pending pods with CapacityBuffers' virtual pods (see buffer.Planner).
func (p *refreshingPlanner) PlanWithVirtual(ctx context.Context, pods, virtual []*corev1.Pod) (*simulation.Plan, sets.Set[types.UID], error) {
	if err := p.unavailable.refresh(ctx, time.Now()); err != nil {
		return nil, nil, err
	}
	return p.solver.PlanWithVirtual(ctx, p.state, pods, virtual)
}
