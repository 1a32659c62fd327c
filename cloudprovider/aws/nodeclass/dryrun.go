package nodeclass

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instance"
)

// LaunchAPI is the part of the EC2 client the dry-runs call, each with DryRun set.
type LaunchAPI interface {
	CreateFleet(ctx context.Context, in *ec2.CreateFleetInput, optFns ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error)
	CreateLaunchTemplate(ctx context.Context, in *ec2.CreateLaunchTemplateInput, optFns ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error)
	RunInstances(ctx context.Context, in *ec2.RunInstancesInput, optFns ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error)
}

// DryRunDeniedError says EC2 refused a dry-run of a launch call for lack of a permission:
// launching with the class would fail the same way.
type DryRunDeniedError struct {
	// Call is the EC2 action: CreateFleet, CreateLaunchTemplate or RunInstances.
	Call string
	Err  error
}

func (e *DryRunDeniedError) Error() string {
	return fmt.Sprintf("dry-run of ec2:%s: %v", e.Call, e.Err)
}
func (e *DryRunDeniedError) Unwrap() error { return e.Err }

// Reason is Karpenter's ValidationSucceeded reason for the refusal, e.g.
// CreateFleetAuthCheckFailed.
func (e *DryRunDeniedError) Reason() string { return e.Call + "AuthCheckFailed" }

// DryRun proves that the controller may launch with a class: it asks EC2 for a dry-run of
// each launch call with the class's resolved subnet, security groups, AMI and instance
// profile and with the tags a launch carries, so that IAM conditions on those (an SCP
// requiring a tag, say) are judged as they will be at launch.
type DryRun struct {
	ec2         LaunchAPI
	clusterName string
}

// NewDryRun returns a DryRun calling ec2Client for the cluster clusterName.
func NewDryRun(ec2Client LaunchAPI, clusterName string) *DryRun {
	return &DryRun{ec2: ec2Client, clusterName: clusterName}
}

// Check dry-runs CreateLaunchTemplate, CreateFleet and RunInstances for nc, which must have
// resolved a subnet, a security group, an AMI and an instance profile. It returns nil when EC2
// answers DryRunOperation to each, a *DryRunDeniedError for a missing permission, and the AWS
// error otherwise (throttling: try again later). The SDK does not retry the calls: the
// controller retries with its own backoff.
func (d *DryRun) Check(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	if len(nc.Status.Subnets) == 0 || len(nc.Status.SecurityGroups) == 0 || len(nc.Status.AMIs) == 0 || nc.Status.InstanceProfile == "" {
		return errors.New("dry-run: the class has not resolved a subnet, a security group, an AMI and an instance profile")
	}
	tags := ec2Tags(instance.Tags(d.clusterName, nc.Name+"-validation", "", nc.Name, nc.Spec.Tags))
	subnet, image := nc.Status.Subnets[0].ID, nc.Status.AMIs[0].ID
	groups := make([]string, len(nc.Status.SecurityGroups))
	for i, g := range nc.Status.SecurityGroups {
		groups[i] = g.ID
	}
	// Any type answers: a dry-run judges permissions, not capacity.
	const instanceType = ec2types.InstanceTypeM5Large
	noRetry := func(o *ec2.Options) { o.Retryer = aws.NopRetryer{} }
	calls := []struct {
		name string
		call func() error
	}{
		{"CreateLaunchTemplate", func() error {
			_, err := d.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
				DryRun:             aws.Bool(true),
				LaunchTemplateName: aws.String(awsv1.Group + "/dry-run"),
				LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
					ImageId:            aws.String(image),
					SecurityGroupIds:   groups,
					IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(nc.Status.InstanceProfile)},
					TagSpecifications:  []ec2types.LaunchTemplateTagSpecificationRequest{{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: tags}},
				},
				TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tags}},
			}, noRetry)
			return err
		}},
		{"CreateFleet", func() error {
			_, err := d.ec2.CreateFleet(ctx, &ec2.CreateFleetInput{
				DryRun: aws.Bool(true),
				Type:   ec2types.FleetTypeInstant,
				LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
					LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(awsv1.Group + "/dry-run"), Version: aws.String("$Latest")},
					Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: instanceType, SubnetId: aws.String(subnet)}},
				}},
				TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
					TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
				},
				TagSpecifications: []ec2types.TagSpecification{
					{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
					{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
					{ResourceType: ec2types.ResourceTypeFleet, Tags: tags},
				},
			}, noRetry)
			return err
		}},
		{"RunInstances", func() error {
			_, err := d.ec2.RunInstances(ctx, &ec2.RunInstancesInput{
				DryRun:             aws.Bool(true),
				MinCount:           aws.Int32(1),
				MaxCount:           aws.Int32(1),
				ImageId:            aws.String(image),
				InstanceType:       instanceType,
				SubnetId:           aws.String(subnet),
				SecurityGroupIds:   groups,
				IamInstanceProfile: &ec2types.IamInstanceProfileSpecification{Name: aws.String(nc.Status.InstanceProfile)},
				TagSpecifications: []ec2types.TagSpecification{
					{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
					{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
				},
			}, noRetry)
			return err
		}},
	}
	for _, c := range calls {
		err := c.call()
		switch {
		// EC2 answers an allowed dry-run with this error; nil is not expected but also allowed.
		case err == nil || awserr.Code(err) == "DryRunOperation":
		case awserr.IsUnauthorized(err):
			return &DryRunDeniedError{Call: c.name, Err: err}
		default:
			return fmt.Errorf("dry-run of ec2:%s: %w", c.name, err)
		}
	}
	return nil
}

func ec2Tags(tags map[string]string) []ec2types.Tag {
	out := make([]ec2types.Tag, 0, len(tags))
	for _, k := range sortedKeys(tags) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}
