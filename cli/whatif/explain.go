package whatif

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// PoolVerdict is why a NodePool can or cannot serve a pod.
type PoolVerdict struct {
	NodePool string `json:"nodePool"`
	// Verdict is the solver's reason for this NodePool, or what it decided.
	Verdict string `json:"verdict"`
	// InstanceTypes counts the NodePool's instance types left after each step: all of them,
	// those compatible with the NodePool's and the pod's requirements, and those of these
	// whose allocatable holds the pod's requests.
	InstanceTypes     int `json:"instanceTypes"`
	Compatible        int `json:"compatible"`
	HoldsPodsRequests int `json:"holdPodRequests"`
}

// PodExplanation says where a pod is, or why it is pending and what joinery would do.
type PodExplanation struct {
	Pod string `json:"pod"`
	// State is bound, pending, or not joinery's (another scheduler's pod).
	State string `json:"state"`
	Node  string `json:"node,omitempty"`
	// PlannedOnto is the launching NodeClaim the cluster already planned the pod onto.
	PlannedOnto string `json:"plannedOnto,omitempty"`
	// Decision is what planning the pending pods now does with this pod.
	Decision  string        `json:"decision,omitempty"`
	NewClaim  *NodeClaim    `json:"newNodeClaim,omitempty"`
	NodePools []PoolVerdict `json:"nodePools,omitempty"`
}

// ExplainPod explains the pod namespace/name.
func (c *Cluster) ExplainPod(ctx context.Context, opts Options, namespace, name string) (*PodExplanation, error) {
	var pod *corev1.Pod
	for i := range c.Snapshot.Pods {
		if p := &c.Snapshot.Pods[i]; p.Namespace == namespace && p.Name == name {
			pod = p
		}
	}
	if pod == nil {
		return nil, fmt.Errorf("pod %s/%s not found", namespace, name)
	}
	out := &PodExplanation{Pod: podName(pod)}
	if pod.Spec.NodeName != "" {
		out.State, out.Node = "bound", pod.Spec.NodeName
		return out, nil
	}
	_, args, err := opts.profile()
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(c.PendingPods(args.SchedulerNames), func(p *corev1.Pod) bool { return p.UID == pod.UID }) {
		out.State = fmt.Sprintf("not provisioned by joinery (schedulerName %q, phase %s, scheduling gates %d; joinery provisions for %v)",
			pod.Spec.SchedulerName, pod.Status.Phase, len(pod.Spec.SchedulingGates), args.SchedulerNames)
		return out, nil
	}
	out.State = "pending"
	for i := range c.Snapshot.NodeClaims {
		nc := &c.Snapshot.NodeClaims[i]
		if nc.Status.NodeName == "" && slices.Contains(simulation.PlannedPods(nc), pod.UID) {
			out.PlannedOnto = nc.Name
		}
	}
	// All pending pods are planned together, as one batch of the scheduler would be.
	plan, pods, err := c.plan(ctx, opts, nil)
	if err != nil {
		return nil, err
	}
	prov, err := c.describePlan(ctx, plan, pods)
	if err != nil {
		return nil, err
	}
	verdicts := map[string]string{}
	for _, pl := range prov.Placed {
		if pl.Pod == out.Pod {
			out.Decision = "fits existing or launching capacity: " + pl.Target
		}
	}
	for i, nc := range prov.NewNodeClaims {
		if slices.Contains(nc.Pods, out.Pod) {
			out.Decision = fmt.Sprintf("a new NodeClaim of nodepool %s", nc.NodePool)
			out.NewClaim = &prov.NewNodeClaims[i]
			verdicts[nc.NodePool] = "serves the pod: a new NodeClaim"
		}
	}
	for _, pe := range prov.Pending {
		if pe.Pod == out.Pod {
			out.Decision = "stays pending"
			maps.Copy(verdicts, pe.verdicts())
		}
	}
	if out.Decision != "stays pending" {
		if err := c.otherPoolVerdicts(ctx, opts, out, verdicts); err != nil {
			return nil, err
		}
	}
	out.NodePools = c.poolVerdicts(ctx, pod, verdicts)
	return out, nil
}

// otherPoolVerdicts gives a verdict to each NodePool the solver did not name for a pod it
// placed: the solver stops at the first NodePool that serves the pod, so each other one is
// asked what the same batch would do with it as the only NodePool — the solver's reason when
// it cannot serve the pod, or, when it can, what its NodeClaim would cost and why the chosen
// NodePool comes first.
func (c *Cluster) otherPoolVerdicts(ctx context.Context, opts Options, out *PodExplanation, verdicts map[string]string) error {
	var chosen *karpv1.NodePool
	if out.NewClaim != nil {
		for i := range c.Snapshot.NodePools {
			if np := &c.Snapshot.NodePools[i]; np.Name == out.NewClaim.NodePool {
				chosen = np
			}
		}
	}
	for i := range c.Snapshot.NodePools {
		np := &c.Snapshot.NodePools[i]
		if verdicts[np.Name] != "" {
			continue
		}
		if out.NewClaim == nil {
			verdicts[np.Name] = "not needed: " + out.Decision
			continue
		}
		why, err := c.aloneVerdict(ctx, opts, np, out.Pod, chosen, out.NewClaim.Launch, len(out.NewClaim.Pods))
		if err != nil {
			return fmt.Errorf("planning with nodepool %s alone: %w", np.Name, err)
		}
		verdicts[np.Name] = why
	}
	return nil
}

// aloneVerdict plans the snapshot's pending pods with np as the only NodePool and says what
// that means for pod, which the full plan put on a new NodeClaim of chosen (launching at
// launch, when known, for chosenPods pods).
func (c *Cluster) aloneVerdict(ctx context.Context, opts Options, np *karpv1.NodePool, pod string, chosen *karpv1.NodePool, launch *Offering, chosenPods int) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := *c.Snapshot
	s.NodePools = []karpv1.NodePool{*np}
	alone, err := Load(&s, c.Gates)
	if err != nil {
		return "", err
	}
	plan, pods, err := alone.plan(ctx, opts, nil)
	if err != nil {
		return "", err
	}
	prov, err := alone.describePlan(ctx, plan, pods)
	if err != nil {
		return "", err
	}
	for _, pe := range prov.Pending {
		if pe.Pod == pod {
			if why, ok := pe.verdicts()[np.Name]; ok {
				return why, nil
			}
			return pe.Reason, nil
		}
	}
	for _, pl := range prov.Placed {
		if pl.Pod == pod {
			return "not needed: alone it fits existing or launching capacity: " + pl.Target, nil
		}
	}
	for _, nc := range prov.NewNodeClaims {
		if !slices.Contains(nc.Pods, pod) {
			continue
		}
		var b strings.Builder
		b.WriteString("could serve the pod with a new NodeClaim")
		if nc.Launch != nil {
			// The claim is sized for the batch's pods it takes, which may be more than the
			// chosen one's: say how many, so the prices compare.
			fmt.Fprintf(&b, " (%s at $%.4f/hour for %s", nc.Launch.InstanceType, nc.Launch.Price, podCount(len(nc.Pods)))
			if launch != nil {
				fmt.Fprintf(&b, "; %s's: %s at $%.4f/hour for %s", chosen.Name, launch.InstanceType, launch.Price, podCount(chosenPods))
			}
			b.WriteString(")")
		}
		fmt.Fprintf(&b, ", but nodepool %s comes first: %s", chosen.Name, precedence(chosen, np))
		return b.String(), nil
	}
	return "the pod is not in the batch planned with this NodePool alone", nil
}

// precedence says why the solver tries chosen before np: by weight, then by name, never by
// price.
func precedence(chosen, np *karpv1.NodePool) string {
	cw, w := weightOf(chosen), weightOf(np)
	switch {
	case cw > w:
		return fmt.Sprintf("weight %d > %d (NodePools are tried by weight, then name, not by price)", cw, w)
	case cw == w && chosen.Name < np.Name:
		return fmt.Sprintf("equal weight %d, and NodePools of equal weight are tried in name order", w)
	default:
		return fmt.Sprintf("weight %d vs %d: the batch's other pods changed what this NodePool could take", cw, w)
	}
}

func podCount(n int) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}

func weightOf(np *karpv1.NodePool) int32 {
	if np.Spec.Weight == nil {
		return 0
	}
	return *np.Spec.Weight
}

// poolVerdicts lists every NodePool with its verdict and the instance types each of its
// steps leaves.
func (c *Cluster) poolVerdicts(ctx context.Context, pod *corev1.Pod, verdicts map[string]string) []PoolVerdict {
	requests := scheduling.PodRequests(pod)
	alternatives := scheduling.PodRequirementAlternatives(pod)
	var out []PoolVerdict
	for i := range c.Snapshot.NodePools {
		np := &c.Snapshot.NodePools[i]
		v := PoolVerdict{NodePool: np.Name, Verdict: verdicts[np.Name]}
		if v.Verdict == "" {
			v.Verdict = "no reason recorded"
		}
		poolReqs := scheduling.FromNodeSelectorRequirementsWithMinValues(np.Spec.Template.Spec.Requirements...)
		poolReqs.Add(scheduling.NewRequirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, np.Name))
		for k, val := range np.Spec.Template.ObjectMeta.Labels {
			poolReqs.Add(scheduling.NewRequirement(k, corev1.NodeSelectorOpIn, val))
		}
		its, err := c.Catalog.GetInstanceTypes(ctx, np)
		if err != nil {
			v.Verdict = err.Error()
		}
		v.InstanceTypes = len(its)
		for _, it := range its {
			if !slices.ContainsFunc(alternatives, func(alt scheduling.Requirements) bool {
				merged := poolReqs.Clone()
				if poolReqs.Compatible(alt, scheduling.WellKnownLabels) != nil {
					return false
				}
				for _, r := range alt {
					merged.Add(r)
				}
				return it.CompatibleWith(merged)
			}) {
				continue
			}
			v.Compatible++
			if scheduling.Fits(requests, it.Allocatable()) == nil {
				v.HoldsPodsRequests++
			}
		}
		out = append(out, v)
	}
	return out
}

// Check is one condition of a node's disruption.
type Check struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// NodeExplanation says why a node is or is not a disruption candidate.
type NodeExplanation struct {
	Node      string    `json:"node"`
	NodeClaim string    `json:"nodeClaim,omitempty"`
	NodePool  string    `json:"nodePool,omitempty"`
	Offering  *Offering `json:"offering,omitempty"`
	Checks    []Check   `json:"checks"`
	// Verdict is what the next disruption pass does with the node.
	Verdict string `json:"verdict"`
}

// ExplainNode explains node name's disruption with the controller's own predicates and
// methods (disruption.Explain): the candidate checks per reason, budgets, consolidateAfter, and
// the methods' own simulation of it alone.
func (c *Cluster) ExplainNode(ctx context.Context, opts Options, name string) (*NodeExplanation, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	setup, err := c.disruptionSetup(ctx, opts)
	if err != nil {
		return nil, err
	}
	exp, err := disruption.Explain(ctx, setup.cluster, setup.methods, name, c.Now)
	if err != nil {
		return nil, err
	}
	out := &NodeExplanation{Node: name, Verdict: "not a candidate"}
	for _, ch := range exp.Checks {
		out.Checks = append(out.Checks, Check{Check: ch.Name, OK: ch.OK, Detail: ch.Detail})
	}
	if exp.NodeClaim == nil {
		return out, nil
	}
	out.NodeClaim = exp.NodeClaim.Name
	if o, ok, err := c.LaunchedOffering(ctx, exp.NodeClaim, setup.cluster.Nodes[name]); err != nil {
		return nil, err
	} else if ok {
		out.Offering = &o
	}
	if exp.NodePool == nil {
		return out, nil
	}
	out.NodePool = exp.NodePool.Name
	out.Verdict = "not disrupted"
	if exp.Command != nil {
		out.Verdict = fmt.Sprintf("disrupted by %s (%s)", exp.Method, exp.Command.Decision())
	}
	return out, nil
}
