package buffer

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/joinery-dev/joinery/simulation"
)

// Planner plans pending pods together with virtual pods over the cluster it reads itself
// (joinery-scheduler's planner, plugin/planner, implements it with the solver's
// PlanWithVirtual, which takes the cluster per call).
// The pending pods are planned first — real pods take buffer capacity first — then the
// virtual pods; both may land on registered nodes (a pending pod there goes to Plan.Retry). It returns the plan of both, and the virtual pods that fit registered,
// initialized nodes: capacity that exists now, without a NodeClaim still on its way.
type Planner interface {
	PlanWithVirtual(ctx context.Context, pods, virtual []*corev1.Pod) (*simulation.Plan, sets.Set[types.UID], error)
}
