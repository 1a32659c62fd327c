package nodeagent

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/amifamily"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

const clusterName = "joinery-test"

// launch starts one on-demand instance of instanceType with userData through the real SDK.
func launch(t *testing.T, srv *awsemulator.Server, imageNamePattern, instanceType, userData string) string {
	t.Helper()
	ctx := context.Background()
	client := ec2.NewFromConfig(srv.Config())
	images := srv.Images(imageNamePattern)
	if len(images) == 0 {
		t.Fatalf("no image matches %q", imageNamePattern)
	}
	subnet := srv.Subnets()[0]
	name := fmt.Sprintf("lt-%d", len(srv.LaunchTemplates()))
	if _, err := client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:  aws.String(images[0].ID),
			UserData: aws.String(base64.StdEncoding.EncodeToString([]byte(userData))),
			BlockDeviceMappings: []ec2types.LaunchTemplateBlockDeviceMappingRequest{{
				DeviceName: aws.String("/dev/xvda"),
				Ebs:        &ec2types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: aws.Int32(80), VolumeType: ec2types.VolumeTypeGp3},
			}},
		},
	}); err != nil {
		t.Fatalf("CreateLaunchTemplate: %v", err)
	}
	out, err := client.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
			Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{{
				InstanceType: ec2types.InstanceType(instanceType), SubnetId: aws.String(subnet.ID),
			}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
		},
	})
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("CreateFleet launched %+v, errors %+v", out.Instances, out.Errors)
	}
	return out.Instances[0].InstanceIds[0]
}

func userData(t *testing.T, family, cluster string, maxPods int32) string {
	t.Helper()
	data, err := amifamily.Generate(amifamily.Input{
		Family:  family,
		Cluster: amifamily.Cluster{Name: cluster, Endpoint: "https://127.0.0.1:6443", CABundle: "Y2E=", DNSIP: "10.96.0.10", ServiceCIDR: "10.96.0.0/12"},
		Labels:  map[string]string{"karpenter.sh/nodepool": "default", "team": "a"},
		Taints:  []corev1.Taint{amifamily.UnregisteredTaint, {Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
		MaxPods: maxPods,
		Kubelet: &awsv1.KubeletConfiguration{SystemReserved: map[string]string{"cpu": "100m"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestInstancesBecomeNodesAndGoAway(t *testing.T) {
	srv := awsemulator.NewServer(awsemulator.Options{})
	defer srv.Close()
	ctx := context.Background()
	kube := fake.NewClientset()
	agent := New(srv, kube, Options{ClusterName: clusterName})

	al2023 := launch(t, srv, "amazon-eks-node-al2023-x86_64-standard-1.33-*", "m5.large", userData(t, awsv1.AMIFamilyAL2023, clusterName, 29))
	bottlerocket := launch(t, srv, "bottlerocket-aws-k8s-1.33-x86_64-*", "c5.xlarge", userData(t, awsv1.AMIFamilyBottlerocket, clusterName, 58))
	otherCluster := launch(t, srv, "amazon-eks-node-al2023-x86_64-standard-1.33-*", "m5.large", userData(t, awsv1.AMIFamilyAL2023, "someone-else", 29))
	noBootstrap := launch(t, srv, "amazon-eks-node-al2023-x86_64-standard-1.33-*", "m5.large", "#!/bin/bash\necho no bootstrap\n")

	if err := agent.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byProvider := map[string]corev1.Node{}
	for _, n := range nodes.Items {
		byProvider[n.Spec.ProviderID] = n
	}
	if len(byProvider) != 2 {
		t.Fatalf("registered %d nodes, want 2 (the other cluster's and the bootstrap-less instance stay out): %v", len(byProvider), byProvider)
	}
	for _, id := range []string{otherCluster, noBootstrap} {
		inst, _ := srv.Instance(id)
		if _, ok := byProvider[ProviderID(inst)]; ok {
			t.Errorf("instance %s registered a node", id)
		}
	}

	tests := []struct {
		instance, instanceType string
		pods                   int64
		memoryMiB              int64 // advertised memory of the type
		volumeGiB              int64
	}{
		{instance: al2023, instanceType: "m5.large", pods: 29, memoryMiB: 8192, volumeGiB: 80},
		// Bottlerocket keeps its data on /dev/xvdb, which this template does not map: the
		// image's 20Gi default applies.
		{instance: bottlerocket, instanceType: "c5.xlarge", pods: 58, memoryMiB: 8192, volumeGiB: 20},
	}
	for _, tt := range tests {
		inst, ok := srv.Instance(tt.instance)
		if !ok {
			t.Fatalf("instance %s unknown", tt.instance)
		}
		node, ok := byProvider[ProviderID(inst)]
		if !ok {
			t.Fatalf("no node for %s (%s)", tt.instance, tt.instanceType)
		}
		if got := node.Labels[corev1.LabelInstanceTypeStable]; got != tt.instanceType {
			t.Errorf("%s: instance-type label %q", node.Name, got)
		}
		if node.Labels[corev1.LabelTopologyZone] != inst.Zone || node.Labels["team"] != "a" || node.Labels["karpenter.sh/nodepool"] != "default" {
			t.Errorf("%s: labels %v", node.Name, node.Labels)
		}
		if node.Annotations[KwokAnnotation] != "fake" {
			t.Errorf("%s: not handed to kwok", node.Name)
		}
		if len(node.Spec.Taints) != 2 || node.Spec.Taints[1].Key != "karpenter.sh/unregistered" {
			t.Errorf("%s: taints %v, want dedicated and karpenter.sh/unregistered", node.Name, node.Spec.Taints)
		}
		capacity := node.Status.Capacity
		if got := capacity.Pods().Value(); got != tt.pods {
			t.Errorf("%s: pods %d, want %d", node.Name, got, tt.pods)
		}
		wantMemory := int64(float64(tt.memoryMiB)*reportedMemoryShare) * 1024 * 1024
		if got := capacity.Memory().Value(); got != wantMemory {
			t.Errorf("%s: memory %d, want %d", node.Name, got, wantMemory)
		}
		if got, want := capacity.StorageEphemeral().Value(), tt.volumeGiB<<30; got != want {
			t.Errorf("%s: ephemeral-storage %d, want %d", node.Name, got, want)
		}
		// Allocatable cpu: capacity less the EKS kube-reserved default (6% of the first core,
		// 1% of the second, 0.5% of cores 3-4: 70m for 2 vCPUs, 80m for 4) and the 100m system
		// reservation from the user data.
		wantCPU := map[string]string{"m5.large": "1830m", "c5.xlarge": "3820m"}[tt.instanceType]
		if got := node.Status.Allocatable.Cpu(); got.Cmp(resource.MustParse(wantCPU)) != 0 {
			t.Errorf("%s: allocatable cpu %s, want %s", node.Name, got, wantCPU)
		}
	}

	// Terminating an instance deletes its node at the next pass.
	if _, err := ec2.NewFromConfig(srv.Config()).TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{al2023}}); err != nil {
		t.Fatal(err)
	}
	if err := agent.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	left, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := srv.Instance(bottlerocket)
	if len(left.Items) != 1 || left.Items[0].Spec.ProviderID != ProviderID(inst) {
		t.Errorf("after terminating %s: nodes %v, want only the Bottlerocket one", al2023, left.Items)
	}
}
