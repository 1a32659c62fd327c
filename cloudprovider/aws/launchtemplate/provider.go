package launchtemplate

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/go-logr/logr"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/clock"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
)

// EC2API is the part of the EC2 client the provider uses (ec2:CreateLaunchTemplate,
// ec2:DescribeLaunchTemplates, ec2:DeleteLaunchTemplate).
type EC2API interface {
	CreateLaunchTemplate(ctx context.Context, in *ec2.CreateLaunchTemplateInput, optFns ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error)
	DescribeLaunchTemplates(ctx context.Context, in *ec2.DescribeLaunchTemplatesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	DeleteLaunchTemplate(ctx context.Context, in *ec2.DeleteLaunchTemplateInput, optFns ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error)
}

// Options configure a Provider.
type Options struct {
	// ClusterName tags every template (karpenter.k8s.aws/cluster) so cleanup finds only this
	// cluster's.
	ClusterName string
	Clock       clock.PassiveClock
	Logger      logr.Logger
}

// Template is an existing launch template.
type Template struct {
	ID   string
	Name string
}

// Provider creates, finds and deletes launch templates. It is safe for concurrent use.
type Provider struct {
	ec2     EC2API
	opts    Options
	flight  singleflight.Group
	started time.Time

	mu    sync.Mutex
	known map[string]*known // by name
}

type known struct {
	id       string
	lastUsed time.Time
}

// New returns a provider that manages templates through ec2API.
func New(ec2API EC2API, opts Options) *Provider {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Provider{ec2: ec2API, opts: opts, started: opts.Clock.Now(), known: map[string]*known{}}
}

// Ensure returns the template for spec, creating it when it does not exist yet.
func (p *Provider) Ensure(ctx context.Context, spec Spec) (Template, error) {
	name := spec.Name()
	if t, ok := p.use(name); ok {
		return t, nil
	}
	// Concurrent launches of the same configuration create the template once.
	v, err, _ := p.flight.Do(name, func() (any, error) {
		if t, ok := p.use(name); ok {
			return t, nil
		}
		t, err := p.findOrCreate(ctx, name, spec)
		if err != nil {
			return nil, err
		}
		p.remember(t)
		return t, nil
	})
	if err != nil {
		return Template{}, err
	}
	return v.(Template), nil
}

func (p *Provider) use(name string) (Template, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k, ok := p.known[name]
	if !ok {
		return Template{}, false
	}
	k.lastUsed = p.opts.Clock.Now()
	return Template{ID: k.id, Name: name}, true
}

func (p *Provider) remember(t Template) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.known[t.Name] = &known{id: t.ID, lastUsed: p.opts.Clock.Now()}
}

// Invalidate forgets a template, e.g. after EC2 said it does not exist, so the next Ensure
// looks it up (and recreates it) again.
func (p *Provider) Invalidate(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.known, name)
}

func (p *Provider) findOrCreate(ctx context.Context, name string, spec Spec) (Template, error) {
	if t, found, err := p.describe(ctx, name); err != nil || found {
		return t, err
	}
	out, err := p.ec2.CreateLaunchTemplate(ctx, p.createInput(name, spec))
	if awserr.Code(err) == "InvalidLaunchTemplateName.AlreadyExistsException" {
		// Another replica created it between our describe and create.
		t, found, err := p.describe(ctx, name)
		if err == nil && !found {
			err = fmt.Errorf("launch template %s exists and cannot be found", name)
		}
		return t, err
	}
	if err != nil {
		return Template{}, fmt.Errorf("creating launch template %s: %w", name, awserr.Classify(err))
	}
	t := Template{ID: aws.ToString(out.LaunchTemplate.LaunchTemplateId), Name: name}
	p.opts.Logger.V(1).Info("created launch template", "name", name, "id", t.ID, "image", spec.ImageID, "nodeclass", spec.NodeClass)
	return t, nil
}

func (p *Provider) describe(ctx context.Context, name string) (Template, bool, error) {
	out, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	if awserr.Code(err) == "InvalidLaunchTemplateName.NotFoundException" {
		return Template{}, false, nil
	}
	if err != nil {
		return Template{}, false, fmt.Errorf("describing launch template %s: %w", name, awserr.Classify(err))
	}
	if len(out.LaunchTemplates) == 0 {
		return Template{}, false, nil
	}
	return Template{ID: aws.ToString(out.LaunchTemplates[0].LaunchTemplateId), Name: name}, true, nil
}

// TemplateTags are the tags on a template made for spec: the class's, then joinery's.
func (p *Provider) TemplateTags(spec Spec) map[string]string {
	tags := maps.Clone(spec.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[awsv1.TagManagedLaunchTemplate] = p.opts.ClusterName
	tags[awsv1.TagEC2NodeClass] = spec.NodeClass
	tags["kubernetes.io/cluster/"+p.opts.ClusterName] = "owned"
	tags["eks:eks-cluster-name"] = p.opts.ClusterName
	return tags
}

func (p *Provider) createInput(name string, spec Spec) *ec2.CreateLaunchTemplateInput {
	m := spec.MetadataOptions
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:             aws.String(spec.ImageID),
		UserData:            aws.String(base64.StdEncoding.EncodeToString([]byte(spec.UserData))),
		BlockDeviceMappings: blockDeviceMappings(spec.BlockDeviceMappings),
		Monitoring:          &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(spec.DetailedMonitoring)},
		MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(aws.ToString(m.HTTPEndpoint)),
			HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(aws.ToString(m.HTTPProtocolIPv6)),
			HttpTokens:              ec2types.LaunchTemplateHttpTokensState(aws.ToString(m.HTTPTokens)),
			HttpPutResponseHopLimit: int32Of(m.HTTPPutResponseHopLimit),
		},
	}
	if spec.InstanceProfile != "" {
		data.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(spec.InstanceProfile)}
	}
	// A public IP setting or prefixes live on the primary interface, which then carries the
	// groups too (EC2 refuses groups both on the template and on an interface).
	if spec.AssociatePublicIPAddress != nil || spec.IPv4PrefixCount != nil {
		data.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: spec.AssociatePublicIPAddress, Groups: spec.SecurityGroupIDs,
			Ipv4PrefixCount: spec.IPv4PrefixCount,
		}}
	} else {
		data.SecurityGroupIds = spec.SecurityGroupIDs
	}
	if spec.PlacementGroupID != "" {
		data.Placement = &ec2types.LaunchTemplatePlacementRequest{GroupId: aws.String(spec.PlacementGroupID)}
	}
	if spec.CapacityReservationID != "" {
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(spec.CapacityReservationID)},
		}
		if spec.CapacityBlock {
			data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
		}
	}
	tags := p.TemplateTags(spec)
	data.TagSpecifications = []ec2types.LaunchTemplateTagSpecificationRequest{{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: ec2Tags(tags)}}
	return &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: data,
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: ec2Tags(tags)}},
	}
}

func blockDeviceMappings(in []awsv1.BlockDeviceMapping) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	var out []ec2types.LaunchTemplateBlockDeviceMappingRequest
	for _, m := range in {
		req := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: m.DeviceName}
		if e := m.EBS; e != nil {
			ebs := &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted, KmsKeyId: e.KMSKeyID,
				SnapshotId: e.SnapshotID, Iops: int32Of(e.IOPS), Throughput: int32Of(e.Throughput),
				VolumeInitializationRate: e.VolumeInitializationRate,
			}
			if e.VolumeType != nil {
				ebs.VolumeType = ec2types.VolumeType(*e.VolumeType)
			}
			if e.VolumeSize != nil {
				// EC2 sizes volumes in whole GiB; round up so the volume is never smaller.
				const gib = 1 << 30
				ebs.VolumeSize = aws.Int32(int32((e.VolumeSize.Value() + gib - 1) / gib))
			}
			req.Ebs = ebs
		}
		out = append(out, req)
	}
	return out
}

func int32Of(v *int64) *int32 {
	if v == nil {
		return nil
	}
	return aws.Int32(int32(*v))
}

func ec2Tags(tags map[string]string) []ec2types.Tag {
	out := make([]ec2types.Tag, 0, len(tags))
	for _, k := range sortedKeys(tags) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

// DeleteUnused deletes this cluster's templates that no launch has used for unusedFor (those
// this process has not used count from its start), and returns their names.
func (p *Provider) DeleteUnused(ctx context.Context, unusedFor time.Duration) ([]string, error) {
	now := p.opts.Clock.Now()
	return p.deleteMatching(ctx, nil, func(name string) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		last := p.started
		if k, ok := p.known[name]; ok {
			last = k.lastUsed
		}
		return now.Sub(last) >= unusedFor
	})
}

// DeleteForNodeClass deletes every template made for the EC2NodeClass className, e.g. once
// the class is deleted.
func (p *Provider) DeleteForNodeClass(ctx context.Context, className string) ([]string, error) {
	filter := ec2types.Filter{Name: aws.String("tag:" + awsv1.TagEC2NodeClass), Values: []string{className}}
	return p.deleteMatching(ctx, &filter, func(string) bool { return true })
}

func (p *Provider) deleteMatching(ctx context.Context, extra *ec2types.Filter, shouldDelete func(name string) bool) ([]string, error) {
	filters := []ec2types.Filter{{Name: aws.String("tag:" + awsv1.TagManagedLaunchTemplate), Values: []string{p.opts.ClusterName}}}
	if extra != nil {
		filters = append(filters, *extra)
	}
	var deleted []string
	var errs []error
	paginator := ec2.NewDescribeLaunchTemplatesPaginator(p.ec2, &ec2.DescribeLaunchTemplatesInput{Filters: filters, MaxResults: aws.Int32(200)})
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(ctx)
		if err != nil {
			return deleted, fmt.Errorf("listing launch templates of cluster %s: %w", p.opts.ClusterName, awserr.Classify(err))
		}
		for _, lt := range page.LaunchTemplates {
			name := aws.ToString(lt.LaunchTemplateName)
			if !shouldDelete(name) {
				continue
			}
			_, err := p.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: lt.LaunchTemplateId})
			if err != nil && !awserr.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting launch template %s: %w", name, awserr.Classify(err)))
				continue
			}
			p.Invalidate(name)
			deleted = append(deleted, name)
			p.opts.Logger.V(1).Info("deleted launch template", "name", name, "id", aws.ToString(lt.LaunchTemplateId))
		}
	}
	return deleted, errors.Join(errs...)
}
