package aws

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/awsemulator"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

var awsProviderID = regexp.MustCompile(`^aws:///[a-z]{2}-[a-z]+-[0-9][a-z]/i-[0-9a-f]{17}$`)

// TestEC2NodeClassResolves: the class's selectors resolve against the emulated account and
// every condition turns True, with the status the launches need.
func TestEC2NodeClassResolves(t *testing.T) {
	emulator(t)
	name := framework.UniqueName("class")
	class := createNodeClass(t, name)
	for _, field := range []string{"subnets", "securityGroups", "amis"} {
		items, _, _ := unstructured.NestedSlice(class.Object, "status", field)
		if len(items) == 0 {
			t.Errorf("status.%s is empty", field)
		}
	}
	if profile, _, _ := unstructured.NestedString(class.Object, "status", "instanceProfile"); profile == "" {
		t.Error("status.instanceProfile is empty: no instance profile for spec.role")
	}
	if class.GetAnnotations()[awsv1.AnnotationEC2NodeClassHash] == "" {
		t.Errorf("no %s annotation", awsv1.AnnotationEC2NodeClassHash)
	}
}

// TestPendingPodsBecomeInstancesAndNodes is the first scenario: pending pods get a
// NodeClaim, the NodeClaim an EC2 instance tagged as Karpenter tags it, the instance a Node
// registered from its user data, and the pods run there. Deleting the NodeClaim then drains
// the Node and terminates the instance.
func TestPendingPodsBecomeInstancesAndNodes(t *testing.T) {
	emulator(t)
	pool := framework.UniqueName("prov")
	createNodeClass(t, pool)
	createNodePool(t, pool, pool,
		`{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}`,
		`{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}`)
	ns := env.Namespace(t)
	createPods(t, ns, pool, 3, "500m")
	pods := env.AwaitPods(t, ns, groupLabel+"="+pool, 3, runningTimeout, running)

	claims := nodeClaimsOf(t, pool, 1)
	nc := claims[0]
	id := nodeClaimField(nc, "status", "providerID")
	if !awsProviderID.MatchString(id) {
		t.Fatalf("NodeClaim %s providerID %q, want aws:///<zone>/i-<17 hex>", nc.GetName(), id)
	}
	instances := live(instancesOf(t, pool))
	if len(instances) != 1 {
		t.Fatalf("%d live instances for the NodePool, want 1: %+v", len(instances), instances)
	}
	inst := instances[0]
	if providerID(inst) != id {
		t.Errorf("instance %s is %s, NodeClaim says %s", inst.ID, providerID(inst), id)
	}
	checkInstanceTags(t, inst, nc.GetName(), pool)
	if inst.Lifecycle != awsemulator.CapacityTypeOnDemand {
		t.Errorf("instance lifecycle %q, want on-demand as the NodePool requires", inst.Lifecycle)
	}

	node := nodeByProviderID(t, id)
	if node == nil {
		t.Fatalf("no Node with providerID %s", id)
	}
	for _, pod := range pods {
		if pod.Spec.NodeName != node.Name {
			t.Errorf("pod %s runs on %s, want the new node %s", pod.Name, pod.Spec.NodeName, node.Name)
		}
	}
	checkNodeLabels(t, node, inst, pool)
	for _, taint := range node.Spec.Taints {
		if taint.Key == karpv1.UnregisteredTaintKey {
			t.Errorf("node %s still has the %s taint", node.Name, karpv1.UnregisteredTaintKey)
		}
	}

	// Deleting the NodeClaim drains the node (the bare pods are evicted for good) and
	// terminates the instance; the cloud's node lifecycle then removes the Node.
	if err := env.Dynamic.Resource(framework.NodeClaims).Delete(t.Context(), nc.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete NodeClaim %s: %v", nc.GetName(), err)
	}
	framework.Eventually(t, terminationWait, "instance "+inst.ID+" terminated", func(ctx context.Context) (bool, error) {
		for _, i := range instancesOf(t, pool) {
			if i.ID == inst.ID {
				return i.State == awsemulator.InstanceStateTerminated, fmt.Errorf("state %s", i.State)
			}
		}
		return false, fmt.Errorf("instance %s is gone from the emulator", inst.ID)
	})
	framework.AwaitGone(t, terminationWait, "node "+node.Name, func(ctx context.Context) error {
		_, err := env.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		return err
	})
	framework.AwaitGone(t, terminationWait, "NodeClaim "+nc.GetName(), func(ctx context.Context) error {
		_, err := env.Dynamic.Resource(framework.NodeClaims).Get(ctx, nc.GetName(), metav1.GetOptions{})
		return err
	})
	left, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node.Name})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 0 {
		t.Errorf("%d pods still bound to the terminated node", len(left.Items))
	}
}

// checkInstanceTags: the tags Karpenter puts on its instances, plus the class's own.
func checkInstanceTags(t *testing.T, inst awsemulator.Instance, nodeClaim, pool string) {
	t.Helper()
	want := map[string]string{
		"Name":                nodeClaim,
		awsv1.TagNodeClaim:    nodeClaim,
		awsv1.TagNodePool:     pool,
		awsv1.TagEC2NodeClass: pool,
		"kubernetes.io/cluster/" + localcluster.AWSClusterName: "owned",
		"eks:eks-cluster-name":                                 localcluster.AWSClusterName,
		"team":                                                 "e2e",
	}
	for k, v := range want {
		if inst.Tags[k] != v {
			t.Errorf("instance %s tag %s=%q, want %q (tags %v)", inst.ID, k, inst.Tags[k], v, inst.Tags)
		}
	}
}

// checkNodeLabels: the Node carries the well-known labels of its instance type and offering.
func checkNodeLabels(t *testing.T, node *corev1.Node, inst awsemulator.Instance, pool string) {
	t.Helper()
	family, _, _ := strings.Cut(inst.InstanceType, ".")
	want := map[string]string{
		corev1.LabelInstanceTypeStable: inst.InstanceType,
		corev1.LabelTopologyZone:       inst.Zone,
		corev1.LabelTopologyRegion:     localcluster.AWSRegion,
		corev1.LabelArchStable:         archOf(inst),
		corev1.LabelOSStable:           "linux",
		karpv1.CapacityTypeLabelKey:    inst.Lifecycle,
		karpv1.NodePoolLabelKey:        pool,
		awsv1.LabelInstanceFamily:      family,
		awsv1.LabelInstanceCategory:    family[:1],
		groupLabel:                     pool,
	}
	for k, v := range want {
		if node.Labels[k] != v {
			t.Errorf("node %s label %s=%q, want %q", node.Name, k, node.Labels[k], v)
		}
	}
	for _, k := range []string{awsv1.LabelInstanceGeneration, awsv1.LabelInstanceSize, awsv1.LabelInstanceCPU, awsv1.LabelInstanceMemory, awsv1.LabelTopologyZoneID} {
		if node.Labels[k] == "" {
			t.Errorf("node %s has no %s label", node.Name, k)
		}
	}
}

// archOf is the kubernetes.io/arch of EC2's architecture name.
func archOf(inst awsemulator.Instance) string {
	if inst.Architecture == "x86_64" {
		return "amd64"
	}
	return inst.Architecture
}

// TestCapacityTypeFollowsTheNodePool: a spot-only NodePool gets spot instances, an
// on-demand-only one on-demand instances.
func TestCapacityTypeFollowsTheNodePool(t *testing.T) {
	emulator(t)
	class := framework.UniqueName("ct")
	createNodeClass(t, class)
	ns := env.Namespace(t)
	pools := map[string]string{}
	for _, capacityType := range []string{awsemulator.CapacityTypeSpot, awsemulator.CapacityTypeOnDemand} {
		pool := framework.UniqueName(capacityType)
		pools[pool] = capacityType
		createNodePool(t, pool, class,
			fmt.Sprintf(`{key: karpenter.sh/capacity-type, operator: In, values: [%s]}`, capacityType),
			`{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}`)
		createPods(t, ns, pool, 1, "1")
	}
	for pool, capacityType := range pools {
		env.AwaitPods(t, ns, groupLabel+"="+pool, 1, runningTimeout, running)
		nc := nodeClaimsOf(t, pool, 1)[0]
		if got := nc.GetLabels()[karpv1.CapacityTypeLabelKey]; got != capacityType {
			t.Errorf("NodeClaim of %s NodePool %s is %s", capacityType, pool, got)
		}
		instances := live(instancesOf(t, pool))
		if len(instances) != 1 || instances[0].Lifecycle != capacityType {
			t.Errorf("instances of %s NodePool %s: %+v, want one %s instance", capacityType, pool, instances, capacityType)
			continue
		}
		if node := nodeByProviderID(t, providerID(instances[0])); node == nil || node.Labels[karpv1.CapacityTypeLabelKey] != capacityType {
			t.Errorf("node of %s instance %s: %v", capacityType, instances[0].ID, node)
		}
	}
}
