package instance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/go-logr/logr"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
)

// EC2API is the part of the EC2 client the provider uses (ec2:CreateFleet, ec2:RunInstances
// and ec2:CreateTags through the fleet, ec2:CreateTags for batched launches,
// ec2:DescribeInstances, ec2:TerminateInstances).
type EC2API interface {
	CreateFleet(ctx context.Context, in *ec2.CreateFleetInput, optFns ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error)
	CreateTags(ctx context.Context, in *ec2.CreateTagsInput, optFns ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
	DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	TerminateInstances(ctx context.Context, in *ec2.TerminateInstancesInput, optFns ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error)
}

// Options configure a Provider.
type Options struct {
	// ClusterName selects the instances List returns (tag kubernetes.io/cluster/<name>).
	ClusterName string
	// Batch configures how concurrent launches are combined into one CreateFleet.
	Batch  BatchOptions
	Logger logr.Logger
}

// Provider launches, finds and terminates instances. It is safe for concurrent use.
type Provider struct {
	ec2     EC2API
	opts    Options
	batches *batcher
}

// New returns a provider that calls EC2 through ec2API.
func New(ec2API EC2API, opts Options) *Provider {
	opts.Batch = opts.Batch.withDefaults()
	p := &Provider{ec2: ec2API, opts: opts}
	p.batches = newBatcher(opts.Batch, p.launchBatch)
	return p
}

// ClusterTag is the tag key marking the cluster's instances; its value is "owned".
func ClusterTag(clusterName string) string { return "kubernetes.io/cluster/" + clusterName }

// Override is one place an instance may launch: a type in a subnet of a zone.
type Override struct {
	InstanceType string
	Zone         string
	SubnetID     string
	// Price orders the overrides (cheapest first): it becomes each override's priority.
	Price float64
}

// TemplateConfig is a launch template and the overrides launched from it.
type TemplateConfig struct {
	TemplateName string
	Overrides    []Override
}

// LaunchRequest is one instance to launch.
type LaunchRequest struct {
	// ClientToken makes the launch idempotent: EC2 answers a repeated token with the first
	// answer and launches nothing more. Derive it from the NodeClaim's UID.
	ClientToken string
	// CapacityType is joinery's: spot, on-demand or reserved.
	CapacityType string
	// CapacityBlock makes a reserved launch use capacity blocks.
	CapacityBlock bool
	Templates     []TemplateConfig
	// Prioritized launches on-demand capacity in the overrides' price order (their priority)
	// instead of EC2's lowest price: the prices are joinery's (NodeOverlay), not EC2's.
	Prioritized bool
	// Tags go on the instance and its volumes.
	Tags map[string]string
}

// Launched is the outcome of a launch that produced an instance.
type Launched struct {
	Instance     Instance
	TemplateName string
	// Errors are the overrides EC2 tried first and could not launch.
	Errors []FleetError
	// ErrorsShared is set on all members of a batch but one: Errors were handed to every
	// member, and only the member without the flag should record them.
	ErrorsShared bool
}

// fleetInput is the instant CreateFleet for count instances of req.
func (p *Provider) fleetInput(req LaunchRequest, count int) *ec2.CreateFleetInput {
	// Cheapest first, across templates: the rank is the override's priority.
	type ranked struct {
		template int
		ov       Override
	}
	var all []ranked
	for i, t := range req.Templates {
		for _, ov := range t.Overrides {
			all = append(all, ranked{i, ov})
		}
	}
	slices.SortStableFunc(all, func(a, b ranked) int {
		switch {
		case a.ov.Price < b.ov.Price:
			return -1
		case a.ov.Price > b.ov.Price:
			return 1
		}
		return 0
	})
	configs := make([]ec2types.FleetLaunchTemplateConfigRequest, len(req.Templates))
	for i, t := range req.Templates {
		configs[i].LaunchTemplateSpecification = &ec2types.FleetLaunchTemplateSpecificationRequest{
			LaunchTemplateName: aws.String(t.TemplateName), Version: aws.String("$Latest"),
		}
	}
	for rank, r := range all {
		configs[r.template].Overrides = append(configs[r.template].Overrides, ec2types.FleetLaunchTemplateOverridesRequest{
			InstanceType: ec2types.InstanceType(r.ov.InstanceType), SubnetId: aws.String(r.ov.SubnetID),
			AvailabilityZone: aws.String(r.ov.Zone), Priority: aws.Float64(float64(rank)),
		})
	}
	configs = slices.DeleteFunc(configs, func(c ec2types.FleetLaunchTemplateConfigRequest) bool { return len(c.Overrides) == 0 })

	tags := ec2Tags(req.Tags)
	in := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		ClientToken:           aws.String(req.ClientToken),
		LaunchTemplateConfigs: configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(int32(count)), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
		},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: tags},
		},
	}
	switch {
	case req.CapacityType == karpv1.CapacityTypeSpot:
		in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeSpot
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	case req.CapacityType == karpv1.CapacityTypeReserved && req.CapacityBlock:
		in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeCapacityBlock
	case req.CapacityType == karpv1.CapacityTypeReserved:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{
			AllocationStrategy:         ec2types.FleetOnDemandAllocationStrategyLowestPrice,
			CapacityReservationOptions: &ec2types.CapacityReservationOptionsRequest{UsageStrategy: ec2types.FleetCapacityReservationUsageStrategyUseCapacityReservationsFirst},
		}
	case req.Prioritized:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyPrioritized}
	default:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	return in
}

type overrideFields struct{ InstanceType, Zone, SubnetID string }

func overrideOf(lto *ec2types.LaunchTemplateAndOverridesResponse) overrideFields {
	if lto == nil || lto.Overrides == nil {
		return overrideFields{}
	}
	return overrideFields{InstanceType: string(lto.Overrides.InstanceType), Zone: aws.ToString(lto.Overrides.AvailabilityZone), SubnetID: aws.ToString(lto.Overrides.SubnetId)}
}

func templateNameOf(lto *ec2types.LaunchTemplateAndOverridesResponse) string {
	if lto == nil || lto.LaunchTemplateSpecification == nil {
		return ""
	}
	return aws.ToString(lto.LaunchTemplateSpecification.LaunchTemplateName)
}

// liveStates are the states of an instance that exists or is still going away.
var liveStates = []string{"pending", "running", "stopping", "stopped", "shutting-down"}

// Get returns the instance with id; ErrNotFound when it does not exist or has terminated.
func (p *Provider) Get(ctx context.Context, id string) (Instance, error) {
	out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if awserr.IsNotFound(err) {
		return Instance{}, fmt.Errorf("instance %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Instance{}, fmt.Errorf("describing instance %s: %w", id, awserr.Classify(err))
	}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			if aws.ToString(i.InstanceId) == id && i.State != nil && i.State.Name != ec2types.InstanceStateNameTerminated {
				return fromEC2(i), nil
			}
		}
	}
	return Instance{}, fmt.Errorf("instance %s: %w", id, ErrNotFound)
}

// List returns the cluster's live instances that joinery launched. They are found by their
// NodePool tag, not their NodeClaim tag: an instance of a batched launch gets its NodeClaim tag
// only after the fleet answers, and one whose tagging never happened (the controller died in
// between) must still be listed so that garbage collection terminates it.
func (p *Provider) List(ctx context.Context) ([]Instance, error) {
	return p.describe(ctx, []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{awsv1.TagNodePool}},
		{Name: aws.String("tag:" + ClusterTag(p.opts.ClusterName)), Values: []string{"owned"}},
		{Name: aws.String("instance-state-name"), Values: liveStates},
	})
}

// adoptableStates are the states of an instance a NodeClaim may take over as its own: one that
// is stopping or going away would never become its Node.
var adoptableStates = []string{"pending", "running"}

// maxFilterValues is how many values EC2 accepts in one filter.
const maxFilterValues = 200

// findByNodeClaims returns the cluster's pending or running instances tagged with one of the
// NodeClaims, by NodeClaim name.
func (p *Provider) findByNodeClaims(ctx context.Context, nodeClaims []string) (map[string]Instance, error) {
	found := map[string]Instance{}
	for chunk := range slices.Chunk(nodeClaims, maxFilterValues) {
		instances, err := p.describe(ctx, []ec2types.Filter{
			{Name: aws.String("tag:" + awsv1.TagNodeClaim), Values: chunk},
			{Name: aws.String("tag:" + ClusterTag(p.opts.ClusterName)), Values: []string{"owned"}},
			{Name: aws.String("instance-state-name"), Values: adoptableStates},
		})
		if err != nil {
			return nil, err
		}
		for _, inst := range instances {
			name := inst.Tags[awsv1.TagNodeClaim]
			if _, dup := found[name]; !dup {
				found[name] = inst
			}
		}
	}
	return found, nil
}

func (p *Provider) describe(ctx context.Context, filters []ec2types.Filter) ([]Instance, error) {
	var out []Instance
	paginator := ec2.NewDescribeInstancesPaginator(p.ec2, &ec2.DescribeInstancesInput{Filters: filters, MaxResults: aws.Int32(500)})
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing instances of cluster %s: %w", p.opts.ClusterName, awserr.Classify(err))
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				out = append(out, fromEC2(i))
			}
		}
	}
	return out, nil
}

// Terminate terminates the instance with id. It returns ErrNotFound when the instance does
// not exist or had already terminated, so callers can tell completion from progress; an
// instance still shutting down returns nil.
func (p *Provider) Terminate(ctx context.Context, id string) error {
	out, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if awserr.IsNotFound(err) {
		return fmt.Errorf("instance %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("terminating instance %s: %w", id, awserr.Classify(err))
	}
	for _, change := range out.TerminatingInstances {
		if aws.ToString(change.InstanceId) != id {
			continue
		}
		if change.PreviousState != nil && change.PreviousState.Name == ec2types.InstanceStateNameTerminated {
			return fmt.Errorf("instance %s already terminated: %w", id, ErrNotFound)
		}
		p.opts.Logger.V(1).Info("terminating instance", "instance", id, "state", stateName(change.CurrentState))
		return nil
	}
	return errors.New("terminating instance " + id + ": EC2 did not report its state")
}

func stateName(s *ec2types.InstanceState) string {
	if s == nil {
		return ""
	}
	return string(s.Name)
}

func fromEC2(i ec2types.Instance) Instance {
	out := Instance{
		ID: aws.ToString(i.InstanceId), InstanceType: string(i.InstanceType), SubnetID: aws.ToString(i.SubnetId),
		ImageID: aws.ToString(i.ImageId), PrivateIP: aws.ToString(i.PrivateIpAddress), State: stateName(i.State),
		CapacityReservationID: aws.ToString(i.CapacityReservationId), LaunchTime: aws.ToTime(i.LaunchTime),
		Tags: map[string]string{}, CapacityType: karpv1.CapacityTypeOnDemand,
	}
	if i.Placement != nil {
		out.Zone = aws.ToString(i.Placement.AvailabilityZone)
		out.PlacementGroupID = aws.ToString(i.Placement.GroupId)
		out.PartitionNumber = aws.ToInt32(i.Placement.PartitionNumber)
	}
	switch {
	case i.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot:
		out.CapacityType = karpv1.CapacityTypeSpot
	case out.CapacityReservationID != "":
		out.CapacityType = karpv1.CapacityTypeReserved
	}
	for _, t := range i.Tags {
		out.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	for _, g := range i.SecurityGroups {
		out.SecurityGroupIDs = append(out.SecurityGroupIDs, aws.ToString(g.GroupId))
	}
	return out
}

func ec2Tags(tags map[string]string) []ec2types.Tag {
	keys := slices.Sorted(maps.Keys(tags))
	out := make([]ec2types.Tag, 0, len(keys))
	for _, k := range keys {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

// Tags are the tags on an instance launched for a NodeClaim: the class's own tags, then
// joinery's, which win.
func Tags(clusterName, nodeClaim, nodePool, nodeClass string, classTags map[string]string) map[string]string {
	tags := maps.Clone(classTags)
	if tags == nil {
		tags = map[string]string{}
	}
	maps.Copy(tags, map[string]string{
		"Name":                  nodeClaim,
		awsv1.TagNodeClaim:      nodeClaim,
		awsv1.TagNodePool:       nodePool,
		awsv1.TagEC2NodeClass:   nodeClass,
		ClusterTag(clusterName): "owned",
		"eks:eks-cluster-name":  clusterName,
	})
	return tags
}
