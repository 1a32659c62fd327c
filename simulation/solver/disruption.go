package solver

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation"
)

// PlanDisruption plans where the pods of nodes about to be disrupted would go. The caller's
// ClusterState leaves those nodes (and their NodeClaims) out and lists pods as unbound copies.
// Unlike Plan, which only sees pods that kube-scheduler could not place, each pod is first
// tried on every registered, ready node of the state, as kube-scheduler would place it once
// evicted: Plan.InFlight then maps such a pod to that node's NodeClaim (or to the node's name
// when no NodeClaim owns it). The rest go, as in Plan, onto NodeClaims still launching and
// onto new NodeClaims (the replacements), or are Unschedulable with the reason.
func (s *Solver) PlanDisruption(ctx context.Context, pods []*corev1.Pod) (*simulation.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.newRun(ctx, pods)
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.engine.Reset(nil, nil) }()
	if err := r.useRegisteredNodes(ctx); err != nil {
		return nil, err
	}
	for _, pod := range sortedPods(pods) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := r.place(ctx, pod); err != nil {
			return nil, err
		}
	}
	return r.finish()
}

// useRegisteredNodes adds every registered node that is not being deleted and whose NodeClaim
// (if any) is initialized to the nodes place tries first (those still initializing are there
// already).
func (r *run) useRegisteredNodes(ctx context.Context) error {
	nodes, err := r.s.opts.State.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	nodeClaims, err := r.s.opts.State.NodeClaims(ctx)
	if err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	owner := map[string]string{}
	for _, nc := range nodeClaims {
		if nc.Status.NodeName != "" && meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
			owner[nc.Status.NodeName] = nc.Name
		}
	}
	if r.initializing == nil {
		r.initializing = map[string]string{}
	}
	for _, n := range nodes {
		if n.DeletionTimestamp != nil {
			continue
		}
		if _, ok := r.initializing[n.Name]; ok {
			continue
		}
		name := owner[n.Name]
		if name == "" {
			name = n.Name
		}
		r.initializing[n.Name] = name
		r.initializingNames = append(r.initializingNames, n.Name)
	}
	slices.Sort(r.initializingNames)
	return nil
}
