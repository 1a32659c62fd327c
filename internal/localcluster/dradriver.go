package localcluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
	"github.com/joinery-dev/joinery/simulation"
)

// The DRA driver stand-in. kwok runs no DRA drivers, so no node would publish the
// ResourceSlices kube-scheduler's DynamicResources allocates claims from. With kwok among the
// components, the process that started the cluster publishes, for each Node of a kwok catalog
// type with GPUs or Neuron devices, the slices its drivers would (the same ones the
// simulation predicts for a hypothetical node of the type), owned by the Node so they go
// with it. It reconciles by listing every second; it stops with the cluster.

const draDriverResync = time.Second

// catalogDevices are the devices of the kwok catalog's types, by name.
var catalogDevices = sync.OnceValues(func() (map[string][]cloudprovider.DeviceSet, error) {
	f, err := catalog.Default()
	if err != nil {
		return nil, err
	}
	its, err := f.Build(catalog.BuildOptions{})
	if err != nil {
		return nil, err
	}
	devices := map[string][]cloudprovider.DeviceSet{}
	for _, it := range its {
		if len(it.Devices) > 0 {
			devices[it.Name] = it.Devices
		}
	}
	return devices, nil
})

// startDRADriver runs the stand-in until Stop.
func (c *Cluster) startDRADriver() error {
	client, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return fmt.Errorf("dra driver stand-in: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stopDRADriver = cancel
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := syncResourceSlices(ctx, client); err != nil && ctx.Err() == nil {
			c.log.Debug("dra driver stand-in", "err", err.Error())
		}
	}, draDriverResync)
	return nil
}

// syncResourceSlices publishes the slices of each Node of a device-bearing type that has none.
func syncResourceSlices(ctx context.Context, client kubernetes.Interface) error {
	devices, err := catalogDevices()
	if err != nil {
		return err
	}
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
	for i := range nodes.Items {
		node := &nodes.Items[i]
		sets := devices[node.Labels[corev1.LabelInstanceTypeStable]]
		if len(sets) == 0 || have[node.Name] || node.DeletionTimestamp != nil {
			continue
		}
		for _, rs := range simulation.NewHypotheticalResourceSlices(simulation.NodeTemplate{Name: node.Name, Devices: sets}) {
			rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
			if _, err := client.ResourceV1().ResourceSlices().Create(ctx, rs, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create ResourceSlice %s: %w", rs.Name, err)
			}
		}
	}
	return nil
}
