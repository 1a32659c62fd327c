package kwok

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	kwokv1alpha1 "github.com/joinery-dev/joinery/apis/kwok/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
)

// Name is the provider's name in logs and metrics.
const Name = "kwok"

// Options configure the provider.
type Options struct {
	// CatalogPath is a catalog file to use instead of the embedded one.
	CatalogPath string
	// VMMemoryOverheadPercent is the fraction of advertised memory nodes do not report;
	// cloudprovider.DefaultVMMemoryOverheadPercent if nil.
	VMMemoryOverheadPercent *float64
	// Kubelet settings that shape allocatable (maxPods, podsPerCore, reserved, eviction).
	Kubelet cloudprovider.KubeletSettings
	// EphemeralStorage is each node's ephemeral-storage capacity; 20Gi if zero.
	EphemeralStorage resource.Quantity
	// Overlay adjusts the catalog (NodeOverlay) for listing and launching alike; nil for none.
	Overlay cloudprovider.Overlay
	// DisableReservedCapacity leaves the catalog's reserved offerings out: Karpenter's
	// ReservedCapacity feature gate turned off.
	DisableReservedCapacity bool
	// Unavailable is the cluster's record of exhausted offerings (state.UnavailableOfferings);
	// nil for none. The emulator treats a recorded offering as out of capacity, as the cloud
	// would be, so a test can exhaust spot by writing the record.
	Unavailable UnavailableSource
}

// UnavailableSource reads the offerings recorded as exhausted (state.UnavailableOfferings).
type UnavailableSource interface {
	Unavailable(ctx context.Context) (map[cloudprovider.OfferingKey]time.Time, error)
}

// CloudProvider is the kwok provider. It is safe for concurrent use.
type CloudProvider struct {
	client        client.Client
	instanceTypes cloudprovider.InstanceTypes
	overlay       cloudprovider.Overlay
	unavailable   UnavailableSource
	// launchMu serializes launches that may take reserved capacity, so two cannot both take a
	// reservation's last slot.
	launchMu sync.Mutex
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// New returns a provider that manages Nodes through c, with the instance types of the catalog
// opts names (the embedded one by default).
func New(c client.Client, opts Options) (*CloudProvider, error) {
	var (
		file *catalog.File
		err  error
	)
	if opts.CatalogPath != "" {
		file, err = catalog.Load(opts.CatalogPath)
	} else {
		file, err = catalog.Default()
	}
	if err != nil {
		return nil, err
	}
	its, err := file.Build(catalog.BuildOptions{
		VMMemoryOverheadPercent: opts.VMMemoryOverheadPercent,
		Kubelet:                 opts.Kubelet,
		EphemeralStorage:        opts.EphemeralStorage,
		DisableReservedCapacity: opts.DisableReservedCapacity,
	})
	if err != nil {
		return nil, fmt.Errorf("building instance types: %w", err)
	}
	p := NewWithOverlay(c, its, opts.Overlay)
	p.unavailable = opts.Unavailable
	return p, nil
}

// NewWithInstanceTypes returns a provider that launches from its, which it treats as immutable.
func NewWithInstanceTypes(c client.Client, its cloudprovider.InstanceTypes) *CloudProvider {
	return NewWithOverlay(c, its, nil)
}

// NewWithOverlay returns a provider that launches from its as overlay adjusts them (nil for
// none).
func NewWithOverlay(c client.Client, its cloudprovider.InstanceTypes, overlay cloudprovider.Overlay) *CloudProvider {
	return &CloudProvider{client: c, instanceTypes: its, overlay: overlay}
}

// catalog is the instance types as the NodePool named nodePool sees them: the overlay's view
// of the catalog, which listing and launching share.
func (p *CloudProvider) catalog(nodePool string) cloudprovider.InstanceTypes {
	if p.overlay == nil {
		return p.instanceTypes
	}
	return p.overlay.Apply(nodePool, p.instanceTypes)
}

// Name returns "kwok".
func (p *CloudProvider) Name() string { return Name }

// GetSupportedNodeClasses returns KWOKNodeClass.
func (p *CloudProvider) GetSupportedNodeClasses() []cloudprovider.NodeClass {
	return []cloudprovider.NodeClass{&kwokv1alpha1.KWOKNodeClass{}}
}

// RepairPolicies are the kubelet's: kwok reports the Ready condition and nothing else.
func (p *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	return cloudprovider.KubeletRepairPolicies()
}

// IsDrifted never reports drift: a KWOKNodeClass has no settings an instance could drift from.
// Drift from the NodePool is decided outside the provider.
func (p *CloudProvider) IsDrifted(context.Context, *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", nil
}

// GetInstanceTypes returns the catalog's instance types for nodePool once its KWOKNodeClass is
// Ready; a nil nodePool gets them unconditionally. The types are shared between calls and must
// not be modified; copy one to change its offerings.
func (p *CloudProvider) GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	name := ""
	if nodePool != nil {
		if err := p.checkNodeClass(ctx, nodePool.Spec.Template.Spec.NodeClassRef); err != nil {
			return nil, fmt.Errorf("nodepool %s: %w", nodePool.Name, err)
		}
		name = nodePool.Name
	}
	return append([]*cloudprovider.InstanceType(nil), p.catalog(name)...), nil
}
