package solver

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation"
)

// PlanDisruption plans where the pods of nodes about to be disrupted would go. The caller's
// state leaves those nodes (and their NodeClaims) out and lists pods as unbound copies.
// Unlike Plan, which only sees pods that kube-scheduler could not place, each pod is first
// tried on every registered, ready node of the state, as kube-scheduler would place it once
// evicted: Plan.InFlight then maps such a pod to that node's NodeClaim (or to the node's name
// when no NodeClaim owns it). The rest go, as in Plan, onto NodeClaims still launching and
// onto new NodeClaims (the replacements), or are Unschedulable with the reason.
func (s *Solver) PlanDisruption(ctx context.Context, state ClusterState, pods []*corev1.Pod) (*simulation.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.newRun(ctx, state, pods)
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.engine.Reset(nil, nil) }()
	return r.planDisruption(ctx, pods)
}

// planDisruption places pods, registered nodes first.
func (r *run) planDisruption(ctx context.Context, pods []*corev1.Pod) (*simulation.Plan, error) {
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

// PlanDisruptionWithout is PlanDisruption for several plans over one cluster that differ only
// in the nodes they take away: the cluster, read from base (its nodes and bound pods), is
// loaded into the snapshot on the first call for key and kept; each call forks it, removes
// the nodes named in removed with their pods, plans pods as PlanDisruption does on state, and
// reverts the fork. state must read as base without removed and their pods (and with the pods
// to plan unbound), and the unavailable offerings must be those of the key's first call.
// Plan, PlanDisruption or another key in between load afresh.
func (s *Solver) PlanDisruptionWithout(ctx context.Context, key any, base, state ClusterState, removed []string, pods []*corev1.Pod) (*simulation.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if key == nil || s.base != key {
		s.base = nil
		if err := s.loadBase(ctx, base); err != nil {
			return nil, err
		}
		s.base = key
	}
	s.engine.Fork()
	s.forked = true
	defer func() {
		s.forked = false
		// A fork left open by an error would leave the base changed: load it again next time.
		if s.engine.Snapshot().Depth() != 1 || s.engine.Revert() != nil {
			s.base = nil
			_ = s.engine.Reset(nil, nil)
		}
	}()
	for _, name := range removed {
		if err := s.engine.Snapshot().RemoveNode(name); err != nil {
			return nil, fmt.Errorf("removing node %s from the snapshot: %w", name, err)
		}
	}
	r, err := s.newRun(ctx, state, pods)
	if err != nil {
		return nil, err
	}
	return r.planDisruption(ctx, pods)
}

// loadBase loads state's nodes (initializing ones as the capacity they are about to be, as
// newRun sees them) and pods into the snapshot, with the NodePools' topology domains, which
// every plan of the base shares (the caller changes the key when unavailable offerings
// change).
func (s *Solver) loadBase(ctx context.Context, state ClusterState) error {
	nodePools, err := state.NodePools(ctx)
	if err != nil {
		return fmt.Errorf("listing nodepools: %w", err)
	}
	nodeClaims, err := state.NodeClaims(ctx)
	if err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	nodes, err := state.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	pods, err := state.Pods(ctx)
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	nodes, _ = initializingNodes(nodes, nodeClaims)
	if err := s.engine.Reset(nodes, pods); err != nil {
		return fmt.Errorf("loading cluster into the snapshot: %w", err)
	}
	r := &run{s: s, engine: s.engine, state: state}
	if r.pools, _, err = s.readyPools(ctx, nodePools, nodeClaims, s.unavailableIn(state)); err != nil {
		return err
	}
	return r.addDomains()
}

// useRegisteredNodes adds every registered node that is not being deleted and whose NodeClaim
// (if any) is initialized to the nodes place tries first (those still initializing are there
// already).
func (r *run) useRegisteredNodes(ctx context.Context) error {
	nodes, err := r.state.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	nodeClaims, err := r.state.NodeClaims(ctx)
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
	if r.registered == nil {
		r.registered = sets.New[string]()
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
		r.registered.Insert(n.Name)
		r.initializingNames = append(r.initializingNames, n.Name)
	}
	slices.Sort(r.initializingNames)
	return nil
}
