package disruption

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// Preplanner launches capacity for the pods of a node that a forceful method (expiration,
// repair) is about to remove, as soon as the decision is made, instead of waiting for the
// evicted pods to become pending: the node's pods are simulated as in a graceful command and
// the replacements are created, but nothing waits for them. The evicted pods' successors then
// find the replacements in flight (the Provisioner fills NodeClaims in flight before it buys
// new ones) or already registered.
type Preplanner struct {
	Client    client.Client
	Simulator Simulator
}

// PreplanPrefix starts the ReplacementForAnnotationKey value of pre-planned replacements,
// followed by the method and the NodeClaim's name.
const PreplanPrefix = "preplan-"

// Preplan creates the replacements nc's pods need and returns their names; called again for
// the same NodeClaim and method, it returns those it created before. A NodeClaim
// without a Node, pods or NodePool needs none. A pod that fits nowhere is not an error: the
// forceful method goes ahead regardless, and the pod stays pending as it would have.
func (p *Preplanner) Preplan(ctx context.Context, method string, nc *karpv1.NodeClaim) ([]string, error) {
	cluster, err := LoadCluster(ctx, p.Client)
	if err != nil {
		return nil, err
	}
	id := PreplanPrefix + method + "-" + nc.Name
	var existing []string
	for _, other := range cluster.NodeClaims {
		if other.Annotations[ReplacementForAnnotationKey] == id {
			existing = append(existing, other.Name)
		}
	}
	if len(existing) > 0 {
		return existing, nil // a retried decision: launched already
	}
	node := cluster.NodeOf[nc.Name]
	np := cluster.NodePoolOf(nc)
	if node == nil || np == nil {
		return nil, nil
	}
	cand := &Candidate{NodeClaim: nc, Node: node, NodePool: np}
	for _, pod := range cluster.PodsByNode[node.Name] {
		if IsReschedulable(pod) {
			cand.Pods = append(cand.Pods, pod)
		}
	}
	if len(cand.Pods) == 0 {
		return nil, nil
	}
	sim, err := p.Simulator.Simulate(ctx, cluster, []*Candidate{cand})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, repl := range sim.Replacements {
		if repl.Annotations == nil {
			repl.Annotations = map[string]string{}
		}
		repl.Annotations[ReplacementForAnnotationKey] = id
		if err := p.Client.Create(ctx, repl); err != nil {
			return names, fmt.Errorf("creating replacement for nodeclaim %s: %w", nc.Name, err)
		}
		recordCreated(method, repl)
		names = append(names, repl.Name)
	}
	return names, nil
}
