package provider

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/amifamily"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instance"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instancetype"
	"github.com/joinery-dev/joinery/cloudprovider/aws/launchtemplate"
)

// Name is the provider's name in logs and metrics.
const Name = "aws"

// InstanceTypes lists the instance types an EC2NodeClass can launch (see package
// instancetype).
type InstanceTypes interface {
	List(ctx context.Context, nodeClass *awsv1.EC2NodeClass, opts instancetype.ListOptions) (cloudprovider.InstanceTypes, error)
}

// UnavailableOfferings is the cluster-wide record of offerings refused for capacity, shared with
// the scheduler plugin (controller/state.UnavailableOfferings implements it).
type UnavailableOfferings interface {
	Unavailable(ctx context.Context) (map[cloudprovider.OfferingKey]time.Time, error)
	MarkUnavailable(ctx context.Context, ttl time.Duration, offerings ...cloudprovider.OfferingKey) error
}

// ZonalShifts says which zones the cluster's traffic is shifted away from (zonalshift.Watcher
// implements it).
type ZonalShifts interface {
	// Active returns the zones under an active shift now, by zone ID, each with the kind of
	// its shift (zonal shift, zonal autoshift, practice run).
	Active() map[string]string
	// OnZonesReturn registers fn, called with why when a zone stops being shifted away from.
	OnZonesReturn(fn func(why string))
}

// Options configure a Provider.
type Options struct {
	// Cluster is what nodes need to join; Cluster.Name also tags and selects the cluster's
	// instances and launch templates.
	Cluster amifamily.Cluster
	// Unavailable is the shared record of refused offerings; without it refusals are only
	// remembered by this process.
	Unavailable UnavailableOfferings
	// ZonalShifts, when not nil (ENABLE_ZONAL_SHIFT), makes the offerings of zones under an
	// active zonal shift unavailable for listing and launching alike.
	ZonalShifts ZonalShifts
	// MaxInstanceTypes caps how many instance types one fleet request lists (cheapest kept);
	// DefaultMaxInstanceTypes when zero.
	MaxInstanceTypes int
	// LaunchBatch configures how concurrent launches share one CreateFleet (see
	// instance.BatchOptions); zero values take its defaults.
	LaunchBatch instance.BatchOptions
	Clock       clock.WithTicker
	Logger      logr.Logger
	// Overlay adjusts instance types (NodeOverlay) for listing and launching alike; with one,
	// on-demand fleets launch in the adjusted price order (prioritized) rather than EC2's
	// lowest price. nil for none.
	Overlay cloudprovider.Overlay
}

// DefaultMaxInstanceTypes is how many instance types a fleet request lists at most, as in
// Karpenter.
const DefaultMaxInstanceTypes = 60

// Provider is the AWS cloud provider. It is safe for concurrent use.
type Provider struct {
	kube          client.Client
	instanceTypes InstanceTypes
	templates     *launchtemplate.Provider
	instances     *instance.Provider
	opts          Options
	log           logr.Logger
	unavailable   *unavailable
}

var (
	_ cloudprovider.CloudProvider        = (*Provider)(nil)
	_ cloudprovider.AvailabilityNotifier = (*Provider)(nil)
)

// New returns a provider reading EC2NodeClasses through kube.
func New(kube client.Client, instanceTypes InstanceTypes, templates *launchtemplate.Provider, instances *instance.Provider, opts Options) *Provider {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.MaxInstanceTypes == 0 {
		opts.MaxInstanceTypes = DefaultMaxInstanceTypes
	}
	return &Provider{
		kube: kube, instanceTypes: instanceTypes, templates: templates, instances: instances, opts: opts,
		log: opts.Logger, unavailable: newUnavailable(opts.Clock, opts.Unavailable, opts.Logger),
	}
}

// NewFromConfig builds the launch template and instance providers from cfg.
func NewFromConfig(cfg aws.Config, kube client.Client, instanceTypes InstanceTypes, opts Options) *Provider {
	ec2Client := ec2.NewFromConfig(cfg)
	templates := launchtemplate.New(ec2Client, launchtemplate.Options{ClusterName: opts.Cluster.Name, Clock: opts.Clock, Logger: opts.Logger.WithName("launchtemplate")})
	instances := instance.New(ec2Client, instance.Options{ClusterName: opts.Cluster.Name, Batch: opts.LaunchBatch, Logger: opts.Logger.WithName("instance")})
	return New(kube, instanceTypes, templates, instances, opts)
}

// Name returns "aws".
func (p *Provider) Name() string { return Name }

// GetSupportedNodeClasses returns EC2NodeClass.
func (p *Provider) GetSupportedNodeClasses() []cloudprovider.NodeClass {
	return []cloudprovider.NodeClass{&awsv1.EC2NodeClass{}}
}

// RepairPolicies are the kubelet's and the EKS node monitoring agent's.
func (p *Provider) RepairPolicies() []cloudprovider.RepairPolicy {
	return slices.Concat(cloudprovider.KubeletRepairPolicies(), cloudprovider.NodeMonitoringAgentRepairPolicies())
}

// GetInstanceTypes returns the instance types nodePool's EC2NodeClass can launch, with offerings
// refused recently, and those in zones under a zonal shift, marked unavailable.
func (p *Provider) GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	if nodePool == nil {
		return nil, fmt.Errorf("aws provider: instance types need a nodepool's ec2nodeclass")
	}
	class, err := p.readyNodeClass(ctx, nodePool.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		return nil, fmt.Errorf("nodepool %s: %w", nodePool.Name, err)
	}
	return p.listInstanceTypes(ctx, class, nodePool.Name)
}

// listInstanceTypes lists what class can launch as the NodePool named nodePool sees it (with
// the overlay applied): listing and launching share it.
func (p *Provider) listInstanceTypes(ctx context.Context, class *awsv1.EC2NodeClass, nodePool string) (cloudprovider.InstanceTypes, error) {
	opts := instancetype.ListOptions{Unavailable: p.unavailable.offerings(ctx)}
	if p.opts.ZonalShifts != nil {
		opts.ZonesAway = sets.KeySet(p.opts.ZonalShifts.Active())
	}
	its, err := p.instanceTypes.List(ctx, class, opts)
	if err != nil {
		return nil, fmt.Errorf("listing instance types of ec2nodeclass %s: %w", class.Name, err)
	}
	if p.opts.Overlay != nil {
		its = p.opts.Overlay.Apply(nodePool, its)
	}
	return its, nil
}

// nodeClass reads the EC2NodeClass ref names.
func (p *Provider) nodeClass(ctx context.Context, ref *karpv1.NodeClassReference) (*awsv1.EC2NodeClass, error) {
	if ref == nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("no nodeClassRef"))
	}
	if ref.Group != "" && ref.Group != awsv1.Group || ref.Kind != "" && ref.Kind != "EC2NodeClass" {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("nodeClassRef %s/%s is not an EC2NodeClass", ref.Group, ref.Kind))
	}
	class := &awsv1.EC2NodeClass{}
	if err := p.kube.Get(ctx, client.ObjectKey{Name: ref.Name}, class); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %s not found", ref.Name))
		}
		return nil, fmt.Errorf("getting ec2nodeclass %s: %w", ref.Name, err)
	}
	return class, nil
}

// readyNodeClass reads the EC2NodeClass and requires it Ready and not being deleted.
func (p *Provider) readyNodeClass(ctx context.Context, ref *karpv1.NodeClassReference) (*awsv1.EC2NodeClass, error) {
	class, err := p.nodeClass(ctx, ref)
	if err != nil {
		return nil, err
	}
	if class.DeletionTimestamp != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %s is being deleted", class.Name))
	}
	ready := meta.FindStatusCondition(class.Status.Conditions, awsv1.ConditionTypeReady)
	if ready == nil || ready.Status != "True" {
		msg := "has no Ready condition yet"
		if ready != nil {
			msg = fmt.Sprintf("is not ready: %s: %s", ready.Reason, ready.Message)
		}
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %s %s", class.Name, msg))
	}
	return class, nil
}

// Run deletes launch templates unused for templateTTL every interval until ctx is done.
func (p *Provider) Run(ctx context.Context, interval, templateTTL time.Duration) {
	ticker := p.opts.Clock.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		if deleted, err := p.templates.DeleteUnused(ctx, templateTTL); err != nil && ctx.Err() == nil {
			p.log.Error(err, "deleting unused launch templates")
		} else if len(deleted) > 0 {
			p.log.Info("deleted unused launch templates", "count", len(deleted))
		}
	}
}

// DeleteLaunchTemplates deletes the launch templates of the EC2NodeClass className, for the
// class's finalizer.
func (p *Provider) DeleteLaunchTemplates(ctx context.Context, className string) error {
	_, err := p.templates.DeleteForNodeClass(ctx, className)
	return err
}

// DisruptionSuspended says why voluntary disruption of node is suspended: its zone (by the
// topology.k8s.aws/zone-id label joinery's nodes carry) is under an active ARC shift, as in
// Karpenter, where disrupting there would only move capacity into or out of an impaired
// zone. "" when it is not, or without ENABLE_ZONAL_SHIFT (disruption.ZoneSuspender).
func (p *Provider) DisruptionSuspended(node *corev1.Node) string {
	if p.opts.ZonalShifts == nil || node == nil {
		return ""
	}
	id := node.Labels[awsv1.LabelTopologyZoneID]
	kind, ok := p.opts.ZonalShifts.Active()[id]
	if id == "" || !ok {
		return ""
	}
	return fmt.Sprintf("zone %s (%s) is under an active ARC %s; voluntary disruption is suspended there until it ends", node.Labels[corev1.LabelTopologyZone], id, kind)
}

// OnOfferingsReturn registers fn, called with why when offerings this provider listed
// unavailable become available again without the unavailable-offerings record knowing: a
// zone's zonal shift ended (cloudprovider.AvailabilityNotifier). Without ENABLE_ZONAL_SHIFT
// nothing calls it.
func (p *Provider) OnOfferingsReturn(fn func(why string)) {
	if p.opts.ZonalShifts != nil {
		p.opts.ZonalShifts.OnZonesReturn(fn)
	}
}
