package aws

import (
	"context"
	"fmt"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/awsemulator"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// TestSpotInterruptionReplacesTheNode: EventBridge delivers a spot interruption warning for a
// node's instance to the interruption queue. joinery marks the spot offering unavailable,
// drains and terminates the node, and the pods move to a replacement that is not that
// offering.
func TestSpotInterruptionReplacesTheNode(t *testing.T) {
	emulator(t)
	pool := framework.UniqueName("spot")
	createNodeClass(t, pool)
	createNodePool(t, pool, pool, `{key: karpenter.sh/capacity-type, operator: In, values: [spot]}`)
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, 2, "1")
	env.AwaitPods(t, ns, groupLabel+"="+pool, 2, runningTimeout, running)
	claims := nodeClaimsOf(t, pool, 1)
	interrupted := claims[0].GetName()
	instances := live(instancesOf(t, pool))
	if len(instances) != 1 || instances[0].Lifecycle != awsemulator.CapacityTypeSpot {
		t.Fatalf("instances %+v, want one spot instance", instances)
	}
	victim := instances[0]

	queue := sqs.NewFromConfig(emulatorConfig(t))
	url, err := queue.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: awssdk.String(localcluster.AWSInterruptionQueue)})
	if err != nil {
		t.Fatalf("the interruption queue: %v", err)
	}
	if _, err := queue.SendMessage(t.Context(), &sqs.SendMessageInput{
		QueueUrl:    url.QueueUrl,
		MessageBody: awssdk.String(awsemulator.SpotInterruptionWarningEvent(localcluster.AWSRegion, victim.ID)),
	}); err != nil {
		t.Fatalf("sending the interruption warning: %v", err)
	}

	framework.AwaitGone(t, runningTimeout, "interrupted NodeClaim "+interrupted, func(ctx context.Context) error {
		_, err := env.Dynamic.Resource(framework.NodeClaims).Get(ctx, interrupted, metav1.GetOptions{})
		return err
	})
	refused := cloudprovider.OfferingKey{CapacityType: awsemulator.CapacityTypeSpot, InstanceType: victim.InstanceType, Zone: victim.Zone}
	if _, ok := unavailableOfferings(t)[refused.ConfigMapKey()]; !ok {
		t.Errorf("%s is not marked unavailable after its interruption: %v", refused.ConfigMapKey(), unavailableOfferings(t))
	}
	pods := env.AwaitPods(t, ns, groupLabel+"="+pool, 2, runningTimeout, running)
	framework.Eventually(t, runningTimeout, "the interrupted instance to terminate and its node to go", func(ctx context.Context) (bool, error) {
		for _, inst := range instancesOf(t, pool) {
			if inst.ID == victim.ID && inst.State != awsemulator.InstanceStateTerminated {
				return false, fmt.Errorf("instance %s is %s", inst.ID, inst.State)
			}
		}
		if node := nodeByProviderID(t, providerID(victim)); node != nil {
			return false, fmt.Errorf("node %s is still there", node.Name)
		}
		return true, nil
	})
	for _, pod := range pods {
		node, err := env.Client.CoreV1().Nodes().Get(t.Context(), pod.Spec.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			t.Errorf("pod %s runs on node %s, which is gone", pod.Name, pod.Spec.NodeName)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if node.Spec.ProviderID == providerID(victim) {
			t.Errorf("pod %s still runs on the interrupted instance", pod.Name)
		}
		if got := node.Labels["node.kubernetes.io/instance-type"] + "/" + node.Labels["topology.kubernetes.io/zone"]; got == victim.InstanceType+"/"+victim.Zone && node.Labels["karpenter.sh/capacity-type"] == "spot" {
			t.Errorf("pod %s was replaced onto the interrupted offering %s", pod.Name, refused)
		}
	}
}
