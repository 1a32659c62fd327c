package aws

import (
	"context"
	"fmt"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// createPlacementNodeClass creates an EC2NodeClass like createNodeClass's, with extra spec
// fields.
func createPlacementNodeClass(t *testing.T, name, extra string) {
	t.Helper()
	env.Create(t, framework.EC2NodeClasses, fmt.Sprintf(`
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: %q}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: %[2]s}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: %[2]s}}]
  role: %[3]s
%[4]s`, name, localcluster.AWSClusterName, localcluster.AWSNodeRole, extra))
}

// classCondition returns the class's condition of condType, or nil.
func classCondition(class *unstructured.Unstructured, condType string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(class.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == condType {
			return m
		}
	}
	return nil
}

// TestPlacementGroupLaunches: an operator creates a partition placement group; an
// EC2NodeClass selecting it by name resolves it into its status, and its nodes launch into the
// group with the group's id and their partition as labels and the class's IPv4 prefixes on
// their interface. A class naming a group that does not exist is not Ready, and says why.
func TestPlacementGroupLaunches(t *testing.T) {
	emulator(t)
	pool := framework.UniqueName("pg")
	client := ec2.NewFromConfig(emulatorConfig(t))
	created, err := client.CreatePlacementGroup(t.Context(), &ec2.CreatePlacementGroupInput{
		GroupName: awssdk.String(pool), Strategy: ec2types.PlacementStrategyPartition, PartitionCount: awssdk.Int32(3),
	})
	if err != nil {
		t.Fatalf("creating the placement group: %v", err)
	}
	groupID := awssdk.ToString(created.PlacementGroup.GroupId)

	createPlacementNodeClass(t, pool, fmt.Sprintf("  placementGroupSelector: {name: %q}\n  ipPrefixCount: 1\n", pool))
	class := awaitNodeClassReady(t, pool)
	if c := classCondition(class, awsv1.ConditionTypePlacementGroupReady); c == nil || c["status"] != "True" {
		t.Fatalf("PlacementGroupReady = %v", c)
	}
	groups, _, _ := unstructured.NestedSlice(class.Object, "status", "placementGroups")
	if len(groups) != 1 || groups[0].(map[string]any)["id"] != groupID || groups[0].(map[string]any)["strategy"] != "partition" {
		t.Errorf("status.placementGroups = %v, want the partition group %s", groups, groupID)
	}

	createNodePool(t, pool, pool)
	ns := env.Namespace(t)
	createPods(t, ns, pool, 1, "1")
	env.AwaitPods(t, ns, groupLabel+"="+pool, 1, runningTimeout, running)
	claims := nodeClaimsOf(t, pool, 1)
	instances := live(instancesOf(t, pool))
	if len(instances) != 1 {
		t.Fatalf("instances %+v, want one", instances)
	}
	inst := instances[0]
	if inst.Placement.GroupID != groupID || inst.Placement.PartitionNumber == 0 || inst.IPv4PrefixCount != 1 {
		t.Errorf("instance placement %+v, prefixes %d; want a partition of %s and 1 prefix", inst.Placement, inst.IPv4PrefixCount, groupID)
	}
	labels := claims[0].GetLabels()
	if labels[awsv1.LabelPlacementGroupID] != groupID || labels[awsv1.LabelPlacementGroupPartition] != fmt.Sprint(inst.Placement.PartitionNumber) {
		t.Errorf("nodeclaim labels %v, want the group %s and partition %d", labels, groupID, inst.Placement.PartitionNumber)
	}
	if node := nodeByProviderID(t, providerID(inst)); node == nil || node.Labels[awsv1.LabelPlacementGroupID] != groupID {
		t.Errorf("node of %s lacks the placement group label", inst.ID)
	}

	missing := pool + "-missing"
	createPlacementNodeClass(t, missing, fmt.Sprintf("  placementGroupSelector: {name: %q}\n", missing))
	framework.Eventually(t, nodeClassReady, "ec2nodeclass "+missing+" PlacementGroupReady=False", func(ctx context.Context) (bool, error) {
		class, err := env.Dynamic.Resource(framework.EC2NodeClasses).Get(ctx, missing, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pg, ready := classCondition(class, awsv1.ConditionTypePlacementGroupReady), classCondition(class, awsv1.ConditionTypeReady)
		if pg == nil || ready == nil {
			return false, nil
		}
		msg, _ := pg["message"].(string)
		return pg["status"] == "False" && pg["reason"] == "PlacementGroupNotFound" && strings.Contains(msg, missing) && ready["status"] == "False", nil
	})
}
