package aws

import (
	"errors"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/joinery-dev/joinery/internal/localcluster"
)

// TestSchedulerCannotTouchTheCloud: joinery-scheduler's AWS identity reads instance types
// (every provisioning test in this suite plans with them) but the emulator refuses it a launch
// or a termination; its Kubernetes identity cannot delete a NodeClaim; and on AWS the
// controller's cannot create Nodes (kubelets do).
func TestSchedulerCannotTouchTheCloud(t *testing.T) {
	cfg := emulatorConfig(t)
	cfg.Credentials = credentials.NewStaticCredentialsProvider(localcluster.SchedulerAWSAccessKey, "local-cluster-secret", "")
	client := ec2.NewFromConfig(cfg)
	if _, err := client.DescribeInstanceTypes(t.Context(), &ec2.DescribeInstanceTypesInput{}); err != nil {
		t.Errorf("the scheduler's key cannot describe instance types: %v", err)
	}
	calls := map[string]func() error{
		"RunInstances": func() error {
			_, err := client.RunInstances(t.Context(), &ec2.RunInstancesInput{MinCount: awssdk.Int32(1), MaxCount: awssdk.Int32(1), InstanceType: ec2types.InstanceTypeM5Large})
			return err
		},
		"CreateFleet": func() error {
			_, err := client.CreateFleet(t.Context(), &ec2.CreateFleetInput{
				Type:                        ec2types.FleetTypeInstant,
				LaunchTemplateConfigs:       []ec2types.FleetLaunchTemplateConfigRequest{{LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: awssdk.String("none"), Version: awssdk.String("$Latest")}}},
				TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: awssdk.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
			})
			return err
		},
		"TerminateInstances": func() error {
			_, err := client.TerminateInstances(t.Context(), &ec2.TerminateInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
			return err
		},
	}
	for name, call := range calls {
		var apiErr smithy.APIError
		if err := call(); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "UnauthorizedOperation" {
			t.Errorf("%s with the scheduler's key: %v, want UnauthorizedOperation", name, err)
		}
	}

	for _, tt := range []struct {
		as                    localcluster.Component
		verb, group, resource string
		want                  bool
	}{
		{localcluster.JoineryScheduler, "delete", "karpenter.sh", "nodeclaims", false},
		{localcluster.JoineryScheduler, "create", "karpenter.sh", "nodeclaims", true},
		{localcluster.JoineryController, "create", "", "nodes", false},
		{localcluster.JoineryController, "patch", "karpenter.k8s.aws", "ec2nodeclasses", true},
	} {
		restConfig, err := clientcmd.BuildConfigFromFlags("", env.Cluster.KubeconfigOf(tt.as))
		if err != nil {
			t.Fatal(err)
		}
		review, err := kubernetes.NewForConfigOrDie(restConfig).AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(),
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: tt.verb, Group: tt.group, Resource: tt.resource},
			}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectAccessReview as %s: %v", tt.as, err)
		}
		if review.Status.Allowed != tt.want {
			t.Errorf("%s may %s %s.%s: %t, want %t", tt.as, tt.verb, tt.resource, tt.group, review.Status.Allowed, tt.want)
		}
	}
}
