package aws

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/amifamily"
	"github.com/joinery-dev/joinery/cloudprovider/aws/controllers/interruption"
	nodeclasscontroller "github.com/joinery-dev/joinery/cloudprovider/aws/controllers/nodeclass"
	awsnodeclass "github.com/joinery-dev/joinery/cloudprovider/aws/nodeclass"
	awsprovider "github.com/joinery-dev/joinery/cloudprovider/aws/provider"
)

// Name is the provider's name: --cloud-provider=aws.
const Name = awsprovider.Name

// Options configure New.
type Options struct {
	// Settings are the AWS flags.
	Settings Settings
	// Namespace is the controller's namespace, which holds the unavailable-offerings ConfigMap
	// the interruption controller writes.
	Namespace string
	// InterruptionQueue names the SQS queue of interruption events (--interruption-queue);
	// empty leaves interruption handling off.
	InterruptionQueue string
	// Unavailable is the cluster-wide record of offerings refused for capacity, which the
	// NodeClaim lifecycle controller writes and the scheduler plugin reads.
	Unavailable awsprovider.UnavailableOfferings
	// Recorder records the EC2NodeClass controller's events; nil: the manager's recorder for
	// Karpenter's event source ("karpenter").
	Recorder events.EventRecorder
	// Preplanner, when not nil and a queue is named, is called once with the provider New
	// builds and returns what launches capacity for an interrupted node's pods before its
	// NodeClaim is deleted: the disruption controllers' disruption.Preplanner, whose
	// simulation needs the provider's instance types.
	Preplanner func(cloudprovider.CloudProvider) (cloudprovider.Preplanner, error)
	// Overlay adjusts the instance types (NodeOverlay) for every reader and for launches; nil
	// for none.
	Overlay cloudprovider.Overlay
}

// Launch template cleanup: how often, and how long a template may go unused before it goes.
const (
	templateCleanupInterval = 5 * time.Minute
	templateUnusedFor       = 15 * time.Minute
)

// New builds the AWS cloud provider on mgr and registers what it needs beside the neutral
// controllers: the EC2NodeClass controller, the interruption controller when a queue is named
// (pre-planning replacement capacity through Options.Preplanner),
// the instance-type, price and (ENABLE_ZONAL_SHIFT) zonal shift refresh loops (in every
// replica, so a new leader starts warm) and launch-template cleanup (leader only). With
// EKS_CONTROL_PLANE, what nodes join is read from eks:DescribeCluster first; an error there
// stops start-up.
func New(ctx context.Context, mgr ctrl.Manager, opts Options) (*awsprovider.Provider, error) {
	settings := opts.Settings
	if err := settings.Validate(true); err != nil {
		return nil, err
	}
	if opts.Recorder == nil {
		opts.Recorder = mgr.GetEventRecorder(interruption.EventSource)
	}
	log := ctrl.Log.WithName("aws")
	cfg, err := settings.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	cluster, err := settings.NodeCluster(ctx, cfg, mgr.GetConfig(), mgr.GetAPIReader())
	if err != nil {
		return nil, err
	}
	log.Info("AWS provider", "cluster", cluster.Name, "endpoint", cluster.Endpoint, "clusterDNS", cluster.DNSIP,
		"region", cfg.Region, "awsEndpointURL", settings.EndpointURL, "isolatedVPC", settings.IsolatedVPC,
		"amiRefreshInterval", settings.AMIRefreshInterval, "subnetRefreshInterval", settings.SubnetRefreshInterval, "disableDryRun", settings.DisableDryRun,
		"eksControlPlane", settings.EKSControlPlane, "zonalShift", settings.EnableZonalShift)

	instanceTypes := settings.NewInstanceTypes(cfg, log)
	if err := mgr.Add(background{run: instanceTypes.Run}); err != nil {
		return nil, fmt.Errorf("adding the instance-type refresh: %w", err)
	}
	shifts := settings.zonalShifts(ctx, cfg, log)
	if shifts != nil {
		if err := mgr.Add(background{run: func(ctx context.Context) { shifts.Run(ctx, settings.ZonalShiftPollInterval) }}); err != nil {
			return nil, fmt.Errorf("adding the zonal shift refresh: %w", err)
		}
	}

	disc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client: %w", err)
	}
	resolver, err := awsnodeclass.NewFromConfig(cfg, awsnodeclass.Options{
		ClusterName:       cluster.Name,
		Region:            cfg.Region,
		KubernetesVersion: awsnodeclass.DiscoveryKubernetesVersion(disc),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the EC2NodeClass resolver: %w", err)
	}
	provider := awsprovider.NewFromConfig(cfg, mgr.GetClient(), instanceTypes.Types, awsprovider.Options{
		Cluster:     cluster,
		Unavailable: opts.Unavailable,
		ZonalShifts: zonalShiftsOf(shifts),
		Logger:      log.WithName("provider"),
		Overlay:     opts.Overlay,
	})
	dryRun := awsnodeclass.NewDryRun(ec2.NewFromConfig(cfg), cluster.Name)
	if err := nodeclasscontroller.New(mgr.GetClient(), resolver, opts.Recorder, nil, nodeclasscontroller.Options{
		AMIRefreshInterval:    settings.AMIRefreshInterval,
		SubnetRefreshInterval: settings.SubnetRefreshInterval,
		DryRun:                dryRun.Check,
		DisableDryRun:         settings.DisableDryRun,
		// A deleted class takes its launch templates with it.
		OnDelete: func(ctx context.Context, nc *awsv1.EC2NodeClass) error {
			return provider.DeleteLaunchTemplates(ctx, nc.Name)
		},
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up %s: %w", nodeclasscontroller.Name, err)
	}

	cleanup := manager.RunnableFunc(func(ctx context.Context) error {
		provider.Run(ctx, templateCleanupInterval, templateUnusedFor)
		return nil
	})
	if err := mgr.Add(cleanup); err != nil {
		return nil, fmt.Errorf("adding launch template cleanup: %w", err)
	}
	var preplan cloudprovider.Preplanner
	if opts.InterruptionQueue != "" && opts.Preplanner != nil {
		if preplan, err = opts.Preplanner(provider); err != nil {
			return nil, fmt.Errorf("building the interruption controller's pre-planning: %w", err)
		}
	}
	if err := interruption.Setup(mgr, cfg, interruption.SetupOptions{Queue: opts.InterruptionQueue, Namespace: opts.Namespace, Preplanner: preplan}); err != nil {
		return nil, err
	}
	return provider, nil
}

// NodeCluster is what nodes need to join: the flags; with EKS_CONTROL_PLANE, what they leave
// unset read from eks:DescribeCluster on cfg's client (an error there is start-up's); then
// the API server and CA of restConfig, the controller's own connection, and the kube-dns
// Service's address that reader finds.
func (s Settings) NodeCluster(ctx context.Context, cfg awssdk.Config, restConfig *rest.Config, reader client.Reader) (amifamily.Cluster, error) {
	if s.needsEKS() {
		eksCluster, err := describeEKSCluster(ctx, eks.NewFromConfig(cfg), s.ClusterName)
		if err != nil {
			return amifamily.Cluster{}, err
		}
		s = s.withEKSCluster(eksCluster)
	}
	return clusterInfo(ctx, restConfig, reader, s)
}

// clusterInfo is what nodes need to join: the flags (with EKS_CONTROL_PLANE, completed from
// EKS), with the API server and CA of the controller's own connection and the kube-dns
// Service's address as defaults.
func clusterInfo(ctx context.Context, restConfig *rest.Config, reader client.Reader, settings Settings) (amifamily.Cluster, error) {
	cluster := amifamily.Cluster{
		Name:        settings.ClusterName,
		Endpoint:    settings.ClusterEndpoint,
		CABundle:    settings.ClusterCABundle,
		DNSIP:       settings.ClusterDNS,
		ServiceCIDR: settings.ClusterServiceCIDR,
		IPFamily:    settings.ClusterIPFamily,
	}
	if cluster.Endpoint == "" {
		cluster.Endpoint = restConfig.Host
	}
	if cluster.CABundle == "" {
		ca := restConfig.CAData
		if len(ca) == 0 && restConfig.CAFile != "" {
			var err error
			if ca, err = os.ReadFile(restConfig.CAFile); err != nil {
				return amifamily.Cluster{}, fmt.Errorf("reading the cluster CA for --cluster-ca-bundle: %w", err)
			}
		}
		cluster.CABundle = base64.StdEncoding.EncodeToString(ca)
	}
	if cluster.DNSIP == "" {
		dns, err := kubeDNS(ctx, reader)
		if err != nil {
			return amifamily.Cluster{}, err
		}
		cluster.DNSIP = dns
	}
	return cluster, nil
}

// kubeDNS is the ClusterIP of kube-system/kube-dns (CoreDNS keeps kube-dns's Service name), or
// DefaultClusterDNS when the cluster has no such Service.
func kubeDNS(ctx context.Context, reader client.Reader) (string, error) {
	var svc corev1.Service
	err := reader.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-dns"}, &svc)
	switch {
	case apierrors.IsNotFound(err):
		return DefaultClusterDNS, nil
	case err != nil:
		return "", fmt.Errorf("reading kube-system/kube-dns for the cluster DNS address (or set --cluster-dns): %w", err)
	case svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone:
		return DefaultClusterDNS, nil
	}
	return svc.Spec.ClusterIP, nil
}

// background is a runnable every replica runs, leader or not.
type background struct{ run func(context.Context) }

func (b background) Start(ctx context.Context) error {
	b.run(ctx)
	return nil
}

func (background) NeedLeaderElection() bool { return false }
