package solver

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// VerifyPlan is the fidelity check: for each NodeClaim of plan (new, and in flight with the
// pods planned onto it), a Node is built from its cheapest instance type with concrete labels
// and allocatable and added, with its daemons, to a fresh snapshot of the cluster in state;
// then every planned pod, in the solver's order, must pass the real Filters of profile (with
// outOfTree's plugins, those the binary registers) there and is scheduled (Reserve included). No pod may be planned twice. batch supplies the pods of
// plan.InFlight and plan.Retry (replayed on their registered node). opts may leave Client and InformerFactory unset: an empty fake clientset
// backs the plugins then.
func VerifyPlan(ctx context.Context, plan *simulation.Plan, state ClusterState, its cloudprovider.InstanceTypes, profile *config.KubeSchedulerProfile, outOfTree frameworkruntime.Registry, batch []*corev1.Pod, opts simulation.FrameworkOptions) error {
	nodes, err := state.Nodes(ctx)
	if err != nil {
		return err
	}
	pods, err := state.Pods(ctx)
	if err != nil {
		return err
	}
	nodeClaims, err := state.NodeClaims(ctx)
	if err != nil {
		return err
	}
	daemonSets, err := state.DaemonSets(ctx)
	if err != nil {
		return err
	}
	// As the solver sees them: a node still initializing is its NodeClaim's capacity, without
	// the taints it sheds once ready, and pods planned onto that NodeClaim go there.
	nodes, owners := initializingNodes(nodes, nodeClaims)
	registeredAs := make(map[string]string, len(owners))
	for node, claim := range owners {
		registeredAs[claim] = node
	}
	snapshot, err := simulation.NewSnapshot(nodes, pods)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opts.Client == nil || opts.InformerFactory == nil {
		client := fake.NewClientset()
		opts.Client, opts.InformerFactory = client, informers.NewSharedInformerFactory(client, 0)
	}
	engine, err := simulation.NewEngine(ctx, snapshot, profile, outOfTree, opts)
	if err != nil {
		return err
	}
	opts.InformerFactory.Start(ctx.Done())
	opts.InformerFactory.WaitForCacheSync(ctx.Done())

	daemons := daemonPods(daemonSets)
	placement := map[types.UID]string{}
	var planned []*corev1.Pod
	var errs []error
	plan1 := func(pod *corev1.Pod, node string) {
		if prev, ok := placement[pod.UID]; ok {
			errs = append(errs, fmt.Errorf("pod %s/%s is planned twice (%s and %s)", pod.Namespace, pod.Name, prev, node))
			return
		}
		placement[pod.UID] = node
		planned = append(planned, pod)
	}
	for i, claim := range plan.NewNodeClaims {
		name := claim.NodeClaim.Name
		if name == "" {
			name = fmt.Sprintf("%splanned-%d", claim.NodeClaim.GenerateName, i)
		}
		if err := addVerifiedNode(ctx, engine, claim.NodeClaim, name, its, daemons); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, pod := range claim.Pods {
			plan1(pod, name)
		}
	}
	byUID := map[types.UID]*corev1.Pod{}
	for _, p := range append(pods, batch...) {
		byUID[p.UID] = p
	}
	inFlight := map[string]*karpv1.NodeClaim{}
	for _, nc := range nodeClaims {
		inFlight[nc.Name] = nc
	}
	added := map[string]bool{}
	for _, pod := range sortedPods(podsOf(plan.InFlight, byUID)) {
		name := plan.InFlight[pod.UID]
		// A NodeClaim whose Node registered is that Node; the others get one built.
		node, registered := registeredAs[name]
		if !registered {
			node = name
		}
		if !added[name] {
			added[name] = true
			nc, ok := inFlight[name]
			if !ok {
				errs = append(errs, fmt.Errorf("pod %s/%s is planned onto unknown nodeclaim %s", pod.Namespace, pod.Name, name))
				continue
			}
			if !registered {
				if err := addVerifiedNode(ctx, engine, nc, name, its, daemons); err != nil {
					errs = append(errs, err)
					continue
				}
			}
			for _, uid := range simulation.PlannedPods(nc) {
				if p, ok := byUID[uid]; ok && p.Spec.NodeName == "" && plan.InFlight[uid] == "" {
					if err := snapshot.AddPod(p, node); err != nil {
						errs = append(errs, err)
					}
				}
			}
		}
		plan1(pod, node)
	}
	// A pod sent back to kube-scheduler goes to the registered node it fits.
	for _, pod := range sortedPods(podsOf(plan.Retry, byUID)) {
		plan1(pod, plan.Retry[pod.UID])
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Pods are replayed in the solver's order and rounds: one whose required pod affinity
	// waits for a pod planned after it is tried again.
	failures := map[types.UID]error{}
	_ = inRounds(sortedPods(planned), func(pod *corev1.Pod) (bool, error) {
		node := placement[pod.UID]
		delete(failures, pod.UID)
		if status := engine.SchedulePod(ctx, pod, node); !status.IsSuccess() {
			failures[pod.UID] = fmt.Errorf("pod %s/%s does not fit its planned node %s: %s: %s", pod.Namespace, pod.Name, node, status.Plugin(), status.Message())
			return !waitsForPartners(pod), nil
		}
		return true, nil
	})
	for _, pod := range sortedPods(planned) {
		if err, ok := failures[pod.UID]; ok {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func podsOf(assigned map[types.UID]string, byUID map[types.UID]*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for uid := range assigned {
		if p, ok := byUID[uid]; ok {
			out = append(out, p)
		}
	}
	return out
}

// addVerifiedNode adds the Node nc launches as when it gets its cheapest instance type and
// that type's cheapest offering, and the daemons the Filters let onto it.
func addVerifiedNode(ctx context.Context, engine *simulation.Engine, nc *karpv1.NodeClaim, name string, its cloudprovider.InstanceTypes, daemons []*corev1.Pod) error {
	t, err := ConcreteNodeTemplate(nc, name, its)
	if err != nil {
		return err
	}
	if _, err := engine.Snapshot().AddHypotheticalNode(t); err != nil {
		return err
	}
	_, err = addDaemons(ctx, engine, daemons, name)
	return err
}

// ConcreteNode is the Node a NodeClaim becomes with its cheapest instance type: that type's
// allocatable, the labels of the type, of its cheapest compatible offering and of the
// NodeClaim, and the NodeClaim's taints (startup taints are gone by the time pods schedule).
func ConcreteNode(nc *karpv1.NodeClaim, name string, its cloudprovider.InstanceTypes) (*corev1.Node, error) {
	t, err := ConcreteNodeTemplate(nc, name, its)
	if err != nil {
		return nil, err
	}
	return simulation.NewHypotheticalNode(t), nil
}

// ConcreteNodeTemplate describes ConcreteNode, with the volume limits of the instance type.
func ConcreteNodeTemplate(nc *karpv1.NodeClaim, name string, its cloudprovider.InstanceTypes) (simulation.NodeTemplate, error) {
	reqs := scheduling.FromNodeSelectorRequirementsWithMinValues(nc.Spec.Requirements...)
	allowed := its.Compatible(reqs)
	var chosen *cloudprovider.InstanceType
	var offering *cloudprovider.Offering
	for _, it := range allowed.OrderByPrice(reqs) {
		if reqs.Get(corev1.LabelInstanceTypeStable).Has(it.Name) {
			chosen = it
			offering = it.Offerings.Available().Compatible(reqs).Cheapest()
			break
		}
	}
	if chosen == nil || offering == nil {
		return simulation.NodeTemplate{}, fmt.Errorf("nodeclaim %s: no instance type or offering meets its requirements %s", name, reqs)
	}
	final := reqs.Clone()
	for _, q := range chosen.Requirements {
		final.Add(q)
	}
	for _, q := range offering.Requirements {
		final.Add(q)
	}
	labels := map[string]string{}
	for key, q := range final {
		if q.AllowsAbsent() {
			continue
		}
		if values, ok := finite(q); ok && len(values) > 0 {
			labels[key] = values[0] // a node takes one value; the smallest, as the launch would pick
		} else if v := q.Any(); v != "" && !isWellKnown(key) {
			labels[key] = v
		}
	}
	for k, v := range nc.Labels {
		labels[k] = v
	}
	return simulation.NodeTemplate{
		Name:         name,
		Labels:       labels,
		Taints:       nc.Spec.Taints,
		Allocatable:  chosen.Allocatable(),
		VolumeLimits: chosen.VolumeLimits,
		Devices:      chosen.Devices,
	}, nil
}
