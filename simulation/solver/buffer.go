package solver

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/joinery-dev/joinery/simulation"
)

// PlanWithVirtual plans pods as Plan does, then the virtual pods on what is left: first on
// registered nodes (existing capacity), then, as any pod, on NodeClaims still launching and
// on new NodeClaims, all on the cluster state shows. It reports which virtual pods fit
// registered, initialized nodes (Plan.InFlight names their NodeClaim, or the node when no
// NodeClaim owns it). It is buffer.Planner's PlanWithVirtual with the state per call.
func (s *Solver) PlanWithVirtual(ctx context.Context, state ClusterState, pods, virtual []*corev1.Pod) (*simulation.Plan, sets.Set[types.UID], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.newRun(ctx, state, append(slices.Clone(pods), virtual...))
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = s.engine.Reset(nil, nil) }()
	if err := r.retryOnRegisteredNodes(ctx); err != nil {
		return nil, nil, err
	}
	place := func(pod *corev1.Pod) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		r.settle(pod)
		if err := r.place(ctx, pod); err != nil {
			return false, err
		}
		_, failed := r.plan.Unschedulable[pod.UID]
		return !failed || !waitsForPartners(pod), nil
	}
	if err := inRounds(sortedPods(pods), place); err != nil {
		return nil, nil, err
	}
	existing := sets.New[types.UID]()
	if len(virtual) == 0 {
		plan, err := r.finish()
		return plan, existing, err
	}
	// Nodes still initializing are in r.initializing too; r.registered is the capacity that
	// is there now.
	registered := sets.New[string]()
	for node := range r.registered {
		registered.Insert(r.initializing[node])
	}
	if err := inRounds(sortedPods(virtual), place); err != nil {
		return nil, nil, err
	}
	for _, pod := range virtual {
		if where, ok := r.plan.InFlight[pod.UID]; ok && registered.Has(where) {
			existing.Insert(pod.UID)
		}
	}
	plan, err := r.finish()
	return plan, existing, err
}
