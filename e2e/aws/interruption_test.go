package aws

import (
	"context"
	"fmt"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/awsemulator"
	"github.com/joinery-dev/joinery/internal/localcluster"
	"github.com/joinery-dev/joinery/simulation"
)

// TestSpotInterruptionReplacesTheNode: EventBridge delivers a spot interruption warning for a
// node's instance to the interruption queue. joinery marks the spot offering unavailable,
// launches a replacement NodeClaim planned for the node's pods before it deletes the
// interrupted one (pre-planned capacity), drains and terminates the node, and the pods move
// to a replacement that is not that offering.
func TestSpotInterruptionReplacesTheNode(t *testing.T) {
	emulator(t)
	pool := framework.UniqueName("spot")
	createNodeClass(t, pool)
	createNodePool(t, pool, pool, `{key: karpenter.sh/capacity-type, operator: In, values: [spot]}`)
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, 2, "1")
	before := env.AwaitPods(t, ns, groupLabel+"="+pool, 2, runningTimeout, running)
	claims := nodeClaimsOf(t, pool, 1)
	interrupted := claims[0].GetName()
	// Watched from now on, NodeClaim changes arrive in the order the API server made them.
	list, err := env.Dynamic.Resource(framework.NodeClaims).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list nodeclaims: %v", err)
	}
	watchCtx, stopWatch := context.WithTimeout(t.Context(), runningTimeout)
	defer stopWatch()
	changes, err := env.Dynamic.Resource(framework.NodeClaims).Watch(watchCtx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatalf("watch nodeclaims: %v", err)
	}
	defer changes.Stop()
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

	// The replacement exists before the interrupted NodeClaim starts to go, and it is planned
	// for the pods that ran there.
	replacements := preplannedBeforeDeletion(t, changes, interrupted)
	stopWatch()
	planned := map[string]bool{}
	for _, r := range replacements {
		for _, uid := range strings.Split(r.GetAnnotations()[simulation.PlannedPodsAnnotationKey], ",") {
			planned[uid] = true
		}
	}
	for _, pod := range before {
		if !planned[string(pod.UID)] {
			t.Errorf("pod %s of the interrupted node is in no pre-planned replacement (planned: %v)", pod.Name, planned)
		}
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

// preplannedBeforeDeletion reads NodeClaim changes until claim is being deleted, and returns
// the NodeClaims pre-planned for it (annotated joinery.dev/disruption-replacement-for:
// preplan-interruption-<claim>) that were created before that; it fails the test when there
// are none.
func preplannedBeforeDeletion(t *testing.T, changes watch.Interface, claim string) []*unstructured.Unstructured {
	t.Helper()
	id := disruption.PreplanPrefix + "interruption-" + claim
	var replacements []*unstructured.Unstructured
	for ev := range changes.ResultChan() {
		nc, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			t.Fatalf("watching nodeclaims: %v", ev.Object)
		}
		switch {
		case nc.GetName() == claim && (ev.Type == watch.Deleted || nc.GetDeletionTimestamp() != nil):
			if len(replacements) == 0 {
				t.Fatalf("nodeclaim %s is being deleted and no replacement was pre-planned for it", claim)
			}
			return replacements
		case ev.Type == watch.Added && nc.GetAnnotations()[disruption.ReplacementForAnnotationKey] == id:
			replacements = append(replacements, nc)
		}
	}
	t.Fatalf("the nodeclaim watch ended before %s was deleted", claim)
	return nil
}
