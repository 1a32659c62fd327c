package planner

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation/solver"
)

// InformerState is the solver's view of the cluster in the scheduler: nodes, pods and
// daemonsets from the scheduler's informers, NodePools and NodeClaims through a reader — the
// plugin's informer cache, which the plugin holds back each batch until it has seen the
// previous batch's NodeClaims (they must count at once) — never a LIST per batch.
type InformerState struct {
	client     client.Reader
	nodes      corelisters.NodeLister
	pods       corelisters.PodLister
	daemonSets appslisters.DaemonSetLister
}

var _ solver.ClusterState = (*InformerState)(nil)

// NewInformerState reads joinery's kinds through c and the rest through factory's listers;
// start factory (and wait for its caches) before planning.
func NewInformerState(c client.Reader, factory informers.SharedInformerFactory) *InformerState {
	return &InformerState{
		client:     c,
		nodes:      factory.Core().V1().Nodes().Lister(),
		pods:       factory.Core().V1().Pods().Lister(),
		daemonSets: factory.Apps().V1().DaemonSets().Lister(),
	}
}

func (s *InformerState) NodePools(ctx context.Context) ([]*karpv1.NodePool, error) {
	var list karpv1.NodePoolList
	if err := s.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing nodepools: %w", err)
	}
	out := make([]*karpv1.NodePool, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (s *InformerState) NodeClaims(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	var list karpv1.NodeClaimList
	if err := s.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	out := make([]*karpv1.NodeClaim, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (s *InformerState) Nodes(context.Context) ([]*corev1.Node, error) {
	return s.nodes.List(labels.Everything())
}

func (s *InformerState) Pods(context.Context) ([]*corev1.Pod, error) {
	return s.pods.List(labels.Everything())
}

func (s *InformerState) DaemonSets(context.Context) ([]*appsv1.DaemonSet, error) {
	return s.daemonSets.List(labels.Everything())
}
