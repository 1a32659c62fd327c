package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// BufferPodCost is a CapacityBuffer virtual pod's share of a candidate's disruption cost,
// below a real pod's 1: a node that only holds buffer capacity is disrupted before one that
// runs workloads.
const BufferPodCost = 0.1

// Buffers makes every disruption pass keep room for the CapacityBuffers' virtual pods (gate
// CapacityBuffer). Each pass places the virtual pods on the cluster's registered nodes with the
// simulation, as the Provisioner would, and treats each as a pod of its node: a node holding
// one is not empty, its virtual pods move with its real pods in every simulation (so a node is
// not removed if the buffer would no longer fit), and they cost less to disrupt than real pods.
type Buffers struct {
	// Reader reads CapacityBuffers and PodTemplates (the manager's cache).
	Reader client.Reader
	// Simulator places the virtual pods; it must plan buffers (simulation/solver does).
	Simulator *SolverSimulator
}

// load reads the cluster and, with buffers, places their virtual pods on it.
func (c *Controller) load(ctx context.Context) (*Cluster, error) {
	cluster, err := LoadCluster(ctx, c.client)
	if err == nil {
		c.assumeStarted(cluster)
		c.markArrivals(cluster)
	}
	if err == nil && c.opts.Zones != nil {
		cluster.Suspended = c.opts.Zones.DisruptionSuspended
	}
	if err != nil || c.opts.Buffers == nil {
		return cluster, err
	}
	if err := c.opts.Buffers.Place(ctx, cluster); err != nil {
		return nil, err
	}
	return cluster, nil
}

// Place adds to cluster the buffers' virtual pods that fit its registered nodes, as every
// pass does when it loads the cluster; the joinery CLI's dry run of the pass calls it too.
func (b *Buffers) Place(ctx context.Context, cluster *Cluster) error {
	virtual, err := b.VirtualPods(ctx)
	if err != nil || len(virtual) == 0 {
		return err
	}
	if err := b.Simulator.placeVirtual(ctx, cluster, virtual); err != nil {
		return fmt.Errorf("placing capacity buffers' virtual pods: %w", err)
	}
	return nil
}

// VirtualPods are the active buffers' virtual pods, built from their status
// (buffer.FromStatus) with the PodTemplates Reader serves.
func (b *Buffers) VirtualPods(ctx context.Context) ([]*corev1.Pod, error) {
	var list autoscalingv1alpha1.CapacityBufferList
	if err := b.Reader.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing capacity buffers: %w", err)
	}
	buffers := make([]*autoscalingv1alpha1.CapacityBuffer, len(list.Items))
	for i := range list.Items {
		buffers[i] = &list.Items[i]
	}
	return buffer.FromStatus(buffers, func(namespace, name string) *corev1.PodTemplate {
		pt := &corev1.PodTemplate{}
		if err := b.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pt); err != nil {
			return nil
		}
		return pt
	}), nil
}

// placeVirtual plans virtual on c's registered nodes and adds each virtual pod that fits one
// to c as a pod bound there. Virtual pods that fit no registered node are left out: their
// capacity is still being provisioned, and the Provisioner keeps launching it.
func (s *SolverSimulator) placeVirtual(ctx context.Context, c *Cluster, virtual []*corev1.Pod) error {
	planner, ok := s.planner.(VirtualPlanner)
	if !ok {
		return errors.New("the simulation cannot plan capacity buffers")
	}
	unavailable, err := s.readOfferings(ctx)
	if err != nil {
		return err
	}
	view, _ := newView(c, nil, unavailable)
	plan, onExisting, err := planner.PlanWithVirtual(ctx, view, nil, virtual)
	if err != nil {
		return err
	}
	// Plan.InFlight names a registered node's NodeClaim, or the node when none owns it.
	nodeOf := map[string]string{}
	for _, nc := range c.NodeClaims {
		if n := c.NodeOf[nc.Name]; n != nil {
			nodeOf[nc.Name] = n.Name
		}
	}
	for _, pod := range virtual {
		if !onExisting.Has(pod.UID) {
			continue
		}
		where := plan.InFlight[pod.UID]
		node, ok := nodeOf[where]
		if !ok {
			if _, isNode := c.Nodes[where]; !isNode {
				continue
			}
			node = where
		}
		placed := pod.DeepCopy()
		placed.Spec.NodeName = node
		placed.Status.Phase = corev1.PodRunning
		c.Pods = append(c.Pods, placed)
		c.PodsByNode[node] = append(c.PodsByNode[node], placed)
	}
	for node := range c.PodsByNode {
		slices.SortStableFunc(c.PodsByNode[node], func(a, b *corev1.Pod) int {
			return compareStrings(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
		})
	}
	return nil
}
