package aws

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/awsemulator"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// Timeouts. Pending → Running takes the batcher's window (up to 10 s), a launch and a
// registration (a second or two against the emulator); the rest is room for a loaded 2-core
// machine.
const (
	runningTimeout  = 2 * time.Minute
	nodeClassReady  = time.Minute
	terminationWait = time.Minute
)

// groupLabel ties a test's NodePool, Nodes and pods together, so tests never share capacity.
const groupLabel = framework.GroupLabel

// emulator returns the admin client of the local cluster's AWS emulator, skipping the test on
// a cluster without one.
func emulator(t *testing.T) *awsemulator.AdminClient {
	t.Helper()
	if env.AWS == nil {
		t.Skip("needs the local cluster's AWS emulator; running against " + env.RESTConfig.Host)
	}
	return env.AWS
}

// createNodeClass creates an EC2NodeClass named name as on an EKS cluster set up for
// Karpenter: the latest AL2023 image, subnets and security groups by discovery tag, the node
// role. It returns once the class is Ready.
func createNodeClass(t *testing.T, name string) *unstructured.Unstructured {
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
  tags: {team: e2e}
`, name, localcluster.AWSClusterName, localcluster.AWSNodeRole))
	return awaitNodeClassReady(t, name)
}

// awaitNodeClassReady waits until every condition of the EC2NodeClass is True.
func awaitNodeClassReady(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	var class *unstructured.Unstructured
	framework.Eventually(t, nodeClassReady, "ec2nodeclass "+name+" Ready", func(ctx context.Context) (bool, error) {
		var err error
		if class, err = env.Dynamic.Resource(framework.EC2NodeClasses).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, condType := range []string{
			awsv1.ConditionTypeSubnetsReady, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeAMIsReady,
			awsv1.ConditionTypeInstanceProfileReady, awsv1.ConditionTypeCapacityReservationsReady,
			awsv1.ConditionTypeValidationSucceeded, awsv1.ConditionTypeReady,
		} {
			if err := framework.NodeClaimCondition(condType, "True")(*class); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	return class
}

// createNodePool creates a NodePool named name on the EC2NodeClass class; its nodes carry
// groupLabel=name, and requirements are YAML flow mappings such as
// `{key: karpenter.sh/capacity-type, operator: In, values: [spot]}`.
func createNodePool(t *testing.T, name, class string, requirements ...string) {
	t.Helper()
	var reqs strings.Builder
	for _, r := range append([]string{`{key: kubernetes.io/os, operator: In, values: [linux]}`}, requirements...) {
		fmt.Fprintf(&reqs, "      - %s\n", r)
	}
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
  # Drift detection and launches are under test; replacing drifted or empty nodes is not.
  disruption: {budgets: [{nodes: "0"}]}
  template:
    metadata:
      labels: {%[3]s: %[1]q}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: %[2]q}
      requirements:
%[4]s`, name, class, groupLabel, reqs.String()))
}

// createPods creates n pods of the group, each requesting cpu and 256Mi, on the group's nodes
// only.
func createPods(t *testing.T, ns, group string, n int, cpu string) {
	t.Helper()
	for i := range n {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", group, i), Namespace: ns, Labels: map[string]string{groupLabel: group}},
			Spec:       framework.GroupPodSpec(group, cpu, "256Mi"),
		}
		if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", pod.Name, err)
		}
	}
}

func running(pod corev1.Pod) error {
	if pod.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("phase %s on node %q", pod.Status.Phase, pod.Spec.NodeName)
	}
	return nil
}

// instancesOf returns the emulator's instances launched for NodePool pool, terminated ones
// included.
func instancesOf(t *testing.T, pool string) []awsemulator.Instance {
	t.Helper()
	all, err := emulator(t).Instances(t.Context())
	if err != nil {
		t.Fatalf("listing the emulator's instances: %v", err)
	}
	return slices.DeleteFunc(all, func(inst awsemulator.Instance) bool { return inst.Tags[awsv1.TagNodePool] != pool })
}

// live drops terminated and terminating instances.
func live(instances []awsemulator.Instance) []awsemulator.Instance {
	return slices.DeleteFunc(slices.Clone(instances), func(inst awsemulator.Instance) bool {
		return inst.State == awsemulator.InstanceStateTerminated || inst.State == awsemulator.InstanceStateShuttingDown
	})
}

// providerID is the providerID the instance's Node and NodeClaim carry.
func providerID(inst awsemulator.Instance) string {
	return fmt.Sprintf("aws:///%s/%s", inst.Zone, inst.ID)
}

// nodeClaimsOf returns the NodeClaims of pool once want of them are Ready.
func nodeClaimsOf(t *testing.T, pool string, want int) []unstructured.Unstructured {
	t.Helper()
	return env.AwaitNodeClaims(t, "karpenter.sh/nodepool="+pool, want, runningTimeout, framework.NodeClaimCondition("Ready", "True"))
}

func nodeClaimField(nc unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedString(nc.Object, path...)
	return v
}

// nodeByProviderID returns the Node with the provider ID, or nil.
func nodeByProviderID(t *testing.T, id string) *corev1.Node {
	t.Helper()
	nodes, err := env.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	for i := range nodes.Items {
		if nodes.Items[i].Spec.ProviderID == id {
			return &nodes.Items[i]
		}
	}
	return nil
}

// unavailableOfferings returns the controller's record of offerings refused for capacity.
func unavailableOfferings(t *testing.T) map[string]string {
	t.Helper()
	cm, err := env.Client.CoreV1().ConfigMaps(env.Cluster.ControllerNamespace()).Get(t.Context(), cloudprovider.UnavailableOfferingsConfigMap, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return cm.Data
}

// emulatorConfig is an AWS SDK configuration that talks to the local cluster's emulator, for
// tests that call AWS APIs themselves (SSM, SQS) as an operator or EventBridge would.
func emulatorConfig(t *testing.T) awssdk.Config {
	t.Helper()
	return awssdk.Config{
		Region:       localcluster.AWSRegion,
		BaseEndpoint: awssdk.String(emulator(t).URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIAJOINERYE2E", "e2e", ""),
	}
}

// createDeployment creates a Deployment of n replicas of the group, each requesting cpu and
// 256Mi, on the group's nodes only: pods that are evicted come back, as a workload's do.
func createDeployment(t *testing.T, ns, group string, n int32, cpu string) {
	t.Helper()
	labels := map[string]string{groupLabel: group}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: group, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       framework.GroupPodSpec(group, cpu, "256Mi"),
			},
		},
	}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(t.Context(), deployment, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment %s: %v", group, err)
	}
}
