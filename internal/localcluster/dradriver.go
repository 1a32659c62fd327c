package localcluster

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
	"github.com/joinery-dev/joinery/internal/featuregates"
	"github.com/joinery-dev/joinery/simulation"
)

// The DRA driver stand-in. kwok runs no DRA drivers, so no node would publish the
// ResourceSlices kube-scheduler's DynamicResources allocates claims from. With kwok among the
// components, the process that started the cluster publishes, for each Node of a kwok catalog
// type with GPUs or Neuron devices, the slices its drivers would (the same ones the
// simulation predicted for the node: the type's devices as the cluster's NodeOverlays set
// them for the node's NodePool, when the NodeOverlay gate is on in FEATURE_GATES, which the
// cluster's binaries read too), owned by the Node so they go with it. Like a driver, it
// publishes a node's slices once: a later overlay change applies to new nodes. It reconciles
// by listing every second; it stops with the cluster.

const draDriverResync = time.Second

var nodeOverlaysResource = schema.GroupVersionResource{Group: v1alpha1.Group, Version: "v1alpha1", Resource: "nodeoverlays"}

// catalogTypes are the kwok catalog's types.
var catalogTypes = sync.OnceValues(func() (cloudprovider.InstanceTypes, error) {
	f, err := catalog.Default()
	if err != nil {
		return nil, fmt.Errorf("loading the kwok catalog: %w", err)
	}
	its, err := f.Build(catalog.BuildOptions{})
	if err != nil {
		return nil, fmt.Errorf("building the kwok catalog: %w", err)
	}
	return its, nil
})

// nodeDevices predicts the devices of the cluster's nodes as the simulation does.
type nodeDevices struct {
	its cloudprovider.InstanceTypes
	// overlays are the cluster's NodeOverlays, refreshed from list on each sync; nil when the
	// gate is off (joinery ignores overlays then).
	overlays *cloudprovider.NodeOverlays
	list     func(ctx context.Context) ([]v1alpha1.NodeOverlay, error)
	// done are the nodes whose devices were decided (and published, if any), so that an
	// overlay added later does not give a running node devices it was not launched with.
	done map[types.UID]bool
}

// refresh re-reads the NodeOverlays.
func (d *nodeDevices) refresh(ctx context.Context) error {
	if d.overlays == nil {
		return nil
	}
	overlays, err := d.list(ctx)
	if err != nil {
		return fmt.Errorf("listing NodeOverlays: %w", err)
	}
	d.overlays.Replace(overlays)
	return nil
}

// of returns the devices of node: its type's, as the overlays set them for its NodePool.
func (d *nodeDevices) of(node *corev1.Node) []cloudprovider.DeviceSet {
	its := d.its
	if d.overlays != nil {
		its = d.overlays.Apply(node.Labels[karpv1.NodePoolLabelKey], its)
	}
	name := node.Labels[corev1.LabelInstanceTypeStable]
	for _, it := range its {
		if it.Name == name {
			return it.Devices
		}
	}
	return nil
}

// startDRADriver runs the stand-in until Stop.
func (c *Cluster) startDRADriver() error {
	client, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return fmt.Errorf("dra driver stand-in: %w", err)
	}
	its, err := catalogTypes()
	if err != nil {
		return fmt.Errorf("dra driver stand-in: %w", err)
	}
	devices := &nodeDevices{its: its}
	gates, err := featuregates.FromEnv(os.Getenv(featuregates.EnvVar))
	if err != nil {
		return fmt.Errorf("dra driver stand-in: %w", err)
	}
	if gates.Enabled(featuregates.NodeOverlay) {
		dyn, err := dynamic.NewForConfig(c.RESTConfig())
		if err != nil {
			return fmt.Errorf("dra driver stand-in: %w", err)
		}
		devices.overlays, devices.list = cloudprovider.NewNodeOverlays(), listNodeOverlays(dyn)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stopDRADriver = cancel
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := syncResourceSlices(ctx, client, devices); err != nil && ctx.Err() == nil {
			c.log.Debug("dra driver stand-in", "err", err.Error())
		}
	}, draDriverResync)
	return nil
}

// listNodeOverlays lists the cluster's NodeOverlays through dyn.
func listNodeOverlays(dyn dynamic.Interface) func(ctx context.Context) ([]v1alpha1.NodeOverlay, error) {
	return func(ctx context.Context) ([]v1alpha1.NodeOverlay, error) {
		list, err := dyn.Resource(nodeOverlaysResource).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := make([]v1alpha1.NodeOverlay, len(list.Items))
		for i := range list.Items {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
				return nil, fmt.Errorf("nodeoverlay %s: %w", list.Items[i].GetName(), err)
			}
		}
		return out, nil
	}
}

// syncResourceSlices publishes the slices of each new Node with devices.
func syncResourceSlices(ctx context.Context, client kubernetes.Interface, devices *nodeDevices) error {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	existing, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, rs := range existing.Items {
		if rs.Spec.NodeName != nil {
			have[*rs.Spec.NodeName] = true
		}
	}
	// Forget the nodes that are gone.
	done := make(map[types.UID]bool, len(nodes.Items))
	for i := range nodes.Items {
		if uid := nodes.Items[i].UID; devices.done[uid] || have[nodes.Items[i].Name] {
			done[uid] = true
		}
	}
	devices.done = done
	refreshed := false
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if done[node.UID] || node.DeletionTimestamp != nil {
			continue
		}
		// Overlays are read once a sync, and only when a node is new.
		if !refreshed {
			if err := devices.refresh(ctx); err != nil {
				return err
			}
			refreshed = true
		}
		for _, rs := range simulation.NewHypotheticalResourceSlices(simulation.NodeTemplate{Name: node.Name, Devices: devices.of(node)}) {
			rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
			if _, err := client.ResourceV1().ResourceSlices().Create(ctx, rs, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create ResourceSlice %s: %w", rs.Name, err)
			}
		}
		done[node.UID] = true
	}
	return nil
}
