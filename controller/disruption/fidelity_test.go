package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/solver"
)

// verifyCommand is the fidelity check of a disruption command: on a fresh snapshot of the
// cluster without the candidates' nodes (and without their pods), with each replacement added
// as the Node its cheapest instance type would make, every moved pod must pass the real
// Filters of the default profile on its destination, replayed in name order.
func verifyCommand(t testing.TB, c *Cluster, cmd *Command, its cloudprovider.InstanceTypes) {
	t.Helper()
	if err := commandFidelity(c, cmd, its); err != nil {
		t.Errorf("fidelity check of %s: %v", cmd, err)
	}
}

func commandFidelity(c *Cluster, cmd *Command, its cloudprovider.InstanceTypes) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gone := sets.New[string]()
	for _, cand := range cmd.Candidates {
		gone.Insert(cand.Node.Name)
	}
	var nodes []*corev1.Node
	for _, name := range sortedKeys(c.Nodes) {
		if !gone.Has(name) {
			nodes = append(nodes, c.Nodes[name])
		}
	}
	var pods []*corev1.Pod
	for _, p := range c.Pods {
		if p.Spec.NodeName != "" && !gone.Has(p.Spec.NodeName) {
			pods = append(pods, p)
		}
	}
	snapshot, err := simulation.NewSnapshot(nodes, pods)
	if err != nil {
		return err
	}
	profile, err := simulation.DefaultProfile()
	if err != nil {
		return err
	}
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	engine, err := simulation.NewEngine(ctx, snapshot, profile, nil, simulation.FrameworkOptions{Client: client, InformerFactory: factory})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	for i, r := range cmd.Replacements {
		node, err := solver.ConcreteNode(r, fmt.Sprintf("replacement-%d", i), its)
		if err != nil {
			return fmt.Errorf("replacement %d: %w", i, err)
		}
		if err := engine.Snapshot().AddNode(node); err != nil {
			return err
		}
	}
	var errs []error
	var moved []*corev1.Pod
	for _, cand := range cmd.Candidates {
		moved = append(moved, cand.Pods...)
	}
	slices.SortFunc(moved, func(a, b *corev1.Pod) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	for _, p := range moved {
		dest, ok := cmd.Destinations[p.UID]
		if !ok {
			errs = append(errs, fmt.Errorf("pod %s has no destination", p.Name))
			continue
		}
		node := dest
		if n := c.NodeOf[dest]; n != nil {
			node = n.Name
		}
		if i, found := strings.CutPrefix(dest, "replacement-"); found {
			if _, err := strconv.Atoi(i); err != nil {
				errs = append(errs, fmt.Errorf("pod %s: destination %q", p.Name, dest))
				continue
			}
		} else if gone.Has(node) {
			errs = append(errs, fmt.Errorf("pod %s planned onto %s, a candidate", p.Name, node))
			continue
		}
		pod := p.DeepCopy()
		pod.Spec.NodeName = ""
		if status := engine.SchedulePod(ctx, pod, node); !status.IsSuccess() {
			errs = append(errs, fmt.Errorf("pod %s does not fit its destination %s: %s: %s", p.Name, node, status.Plugin(), status.Message()))
		}
	}
	return errors.Join(errs...)
}

// TestCommandFidelityRejects makes sure the check fails a command whose pod would not pass
// the Filters on its destination.
func TestCommandFidelityRejects(t *testing.T) {
	its := testCatalog(t, 0)
	cluster, _ := loadCluster(t, objects(testNodePool("default"),
		pair(testNode("a", "default", typed(its, "small", "on-demand"))), pair(testNode("full", "default", typed(its, "small", "on-demand"))),
		cpuPod("web", "node-a", "1"), cpuPod("busy", "node-full", "1500m"))...)
	cands, _ := cluster.Candidates(karpv1.DisruptionReasonUnderutilized, ClassGraceful)
	i := slices.IndexFunc(cands, func(c *Candidate) bool { return c.Name() == "a" })
	cmd := &Command{Candidates: cands[i : i+1], Destinations: map[types.UID]string{"pod-web": "full"}}
	if err := commandFidelity(cluster, cmd, its); err == nil || !strings.Contains(err.Error(), "does not fit its destination node-full") {
		t.Errorf("fidelity check = %v, want the pod refused on node-full", err)
	}
}
