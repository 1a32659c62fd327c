// Package whatif runs joinery's engine offline over a snapshot: the snapshot's objects are
// served by in-memory API clients, and the planner joinery-scheduler builds (plugin/planner)
// and the disruption methods joinery-controller runs (controller/disruption) read them as
// they read a live cluster.
package whatif

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joinery-dev/joinery/apis"
	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	"github.com/joinery-dev/joinery/cli/snapshot"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/capacitybuffer"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/internal/featuregates"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// Scheme knows every kind a snapshot or a change holds.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := apis.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// defaultUnavailableNamespace holds the synthesized unavailable-offerings record when the
// snapshot does not say where the controller keeps it.
const defaultUnavailableNamespace = "kube-system"

// Cluster is a snapshot served in memory.
type Cluster struct {
	Snapshot *snapshot.Snapshot
	// Client serves every object (controller-runtime's reads: NodePools, NodeClaims, PDBs...).
	Client client.Client
	// ClientSet serves the core objects to the scheduler framework's informers.
	ClientSet kubernetes.Interface
	// Catalog is the recorded instance-type catalog.
	Catalog *snapshot.InstanceTypes
	// Now is the snapshot's time.
	Now time.Time
	// Gates are Karpenter's feature gates the simulation runs with.
	Gates featuregates.Gates
	// Warnings say what of the snapshot the simulation could not use.
	Warnings []string
	// unavailableNamespace is where the record of unavailable offerings is served.
	unavailableNamespace string
}

// gracefulDeletionFinalizer holds, in memory only, an object the snapshot shows being deleted
// without a finalizer (Load).
const gracefulDeletionFinalizer = "joinery.dev/snapshot-graceful-deletion"

// Load serves s in memory with gates, as the binaries run with them: with NodeOverlay the
// snapshot's NodeOverlays apply to its catalog, without ReservedCapacity its reserved
// offerings are left out, and with CapacityBuffer joinery-controller's buffer controller
// resolves every CapacityBuffer (so a changed buffer or workload counts) before anything plans.
// s is not modified.
func Load(s *snapshot.Snapshot, gates featuregates.Gates) (*Cluster, error) {
	scheme, err := Scheme()
	if err != nil {
		return nil, fmt.Errorf("building the scheme: %w", err)
	}
	ns := s.UnavailableOfferingsNamespace
	if ns == "" {
		ns = defaultUnavailableNamespace
	}
	var core []runtime.Object
	var all []client.Object
	add := func(obj client.Object, isCore bool) {
		obj.SetResourceVersion("")
		if obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0 {
			// A pod in its termination grace period has no finalizer; the in-memory client
			// refuses (panics on) an object being deleted without one. The copy keeps it
			// terminating, as the API server does until the grace period ends.
			obj.SetFinalizers([]string{gracefulDeletionFinalizer})
		}
		all = append(all, obj)
		if isCore {
			core = append(core, obj)
		}
	}
	for i := range s.NodePools {
		add(s.NodePools[i].DeepCopy(), false)
	}
	for i := range s.NodeClaims {
		add(s.NodeClaims[i].DeepCopy(), false)
	}
	for i := range s.NodeOverlays {
		add(s.NodeOverlays[i].DeepCopy(), false)
	}
	for i := range s.CapacityBuffers {
		add(s.CapacityBuffers[i].DeepCopy(), false)
	}
	for i := range s.Nodes {
		add(s.Nodes[i].DeepCopy(), true)
	}
	for i := range s.Pods {
		add(s.Pods[i].DeepCopy(), true)
	}
	for i := range s.PodDisruptionBudgets {
		add(s.PodDisruptionBudgets[i].DeepCopy(), true)
	}
	for i := range s.PersistentVolumes {
		add(s.PersistentVolumes[i].DeepCopy(), true)
	}
	for i := range s.PersistentVolumeClaims {
		add(s.PersistentVolumeClaims[i].DeepCopy(), true)
	}
	for i := range s.StorageClasses {
		add(s.StorageClasses[i].DeepCopy(), true)
	}
	for i := range s.CSINodes {
		add(s.CSINodes[i].DeepCopy(), true)
	}
	for i := range s.DaemonSets {
		add(s.DaemonSets[i].DeepCopy(), true)
	}
	for i := range s.Namespaces {
		add(s.Namespaces[i].DeepCopy(), true)
	}
	// What buffers resolve from: served to the buffer controller only (the scheduler's
	// informers would see a cluster's workloads partly).
	for i := range s.PodTemplates {
		add(s.PodTemplates[i].DeepCopy(), false)
	}
	for i := range s.Deployments {
		add(s.Deployments[i].DeepCopy(), false)
	}
	for i := range s.StatefulSets {
		add(s.StatefulSets[i].DeepCopy(), false)
	}
	for i := range s.ReplicaSets {
		add(s.ReplicaSets[i].DeepCopy(), false)
	}
	if len(s.UnavailableOfferings) > 0 {
		add(unavailableRecord(ns, s.UnavailableOfferings), false)
	}
	catalog := snapshot.CatalogOptions{NoReserved: !gates.Enabled(featuregates.ReservedCapacity)}
	if gates.Enabled(featuregates.NodeOverlay) && len(s.NodeOverlays) > 0 {
		// The overlay set joinery-controller and joinery-scheduler apply to their catalog.
		overlays := cloudprovider.NewNodeOverlays()
		overlays.Replace(s.NodeOverlays)
		catalog.Overlay = overlays
	}
	c := &Cluster{
		Snapshot: s,
		Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(all...).
			WithStatusSubresource(&autoscalingv1alpha1.CapacityBuffer{}).Build(),
		ClientSet:            kubefake.NewClientset(core...),
		Catalog:              s.CatalogWith(catalog),
		Now:                  s.TakenAt.Time,
		Gates:                gates,
		unavailableNamespace: ns,
	}
	if s.Legacy() {
		c.Warnings = append(c.Warnings, snapshot.ErrLegacy.Error())
	}
	if gates.Enabled(featuregates.CapacityBuffer) && len(s.CapacityBuffers) > 0 {
		if err := c.resolveBuffers(context.Background()); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// resolveBuffers runs joinery-controller's buffer controller over every CapacityBuffer at the
// snapshot's time, as it reconciles them live: each buffer's status (replicas, PodTemplate)
// then follows its spec and the PodTemplate or workload it names, changed or not. A legacy
// snapshot holds neither, so its buffers keep the status they were recorded with.
func (c *Cluster) resolveBuffers(ctx context.Context) error {
	if c.Snapshot.Legacy() {
		return nil
	}
	resolver := capacitybuffer.New(c.Client, nil, clocktesting.NewFakePassiveClock(c.Now))
	// Oldest first, the order in which buffers share the virtual-pod cap.
	buffers := make([]*autoscalingv1alpha1.CapacityBuffer, len(c.Snapshot.CapacityBuffers))
	for i := range c.Snapshot.CapacityBuffers {
		buffers[i] = &c.Snapshot.CapacityBuffers[i]
	}
	slices.SortFunc(buffers, func(a, b *autoscalingv1alpha1.CapacityBuffer) int {
		if buffer.Older(a, b) {
			return -1
		}
		if buffer.Older(b, a) {
			return 1
		}
		return 0
	})
	for _, b := range buffers {
		req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}}
		if _, err := resolver.Reconcile(ctx, req); err != nil {
			return fmt.Errorf("resolving CapacityBuffer %s/%s: %w", b.Namespace, b.Name, err)
		}
	}
	return nil
}

// virtualPods are the CapacityBuffers' virtual pods with the CapacityBuffer gate on, read as
// joinery-controller's disruption loop reads them (disruption.Buffers), of the pods
// schedulerNames provisions for.
func (c *Cluster) virtualPods(ctx context.Context, schedulerNames []string) ([]*corev1.Pod, error) {
	if !c.Gates.Enabled(featuregates.CapacityBuffer) {
		return nil, nil
	}
	pods, err := (&disruption.Buffers{Reader: c.Client}).VirtualPods(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(pods, func(p *corev1.Pod) bool { return !provisionedBy(p, schedulerNames) }), nil
}

// provisionedBy reports whether joinery provisions for p's scheduler among schedulerNames.
func provisionedBy(p *corev1.Pod, schedulerNames []string) bool {
	name := p.Spec.SchedulerName
	if name == "" {
		name = corev1.DefaultSchedulerName
	}
	return slices.Contains(schedulerNames, name)
}

// unavailableRecord is the controller's ConfigMap as the snapshot recorded its entries, so
// the planner reads it through the same code as in joinery-scheduler.
func unavailableRecord(namespace string, entries []snapshot.UnavailableOffering) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: cloudprovider.UnavailableOfferingsConfigMap},
		Data:       map[string]string{},
	}
	for _, e := range entries {
		key := cloudprovider.OfferingKey{CapacityType: e.CapacityType, InstanceType: e.InstanceType, Zone: e.Zone}
		cm.Data[key.ConfigMapKey()] = e.Until.UTC().Format(time.RFC3339)
	}
	return cm
}

// Unavailable implements disruption.UnavailableSource over the snapshot's record.
func (c *Cluster) Unavailable(context.Context) (map[cloudprovider.OfferingKey]time.Time, error) {
	out := map[cloudprovider.OfferingKey]time.Time{}
	for _, e := range c.Snapshot.UnavailableOfferings {
		if e.Until.After(c.Now) {
			out[cloudprovider.OfferingKey{CapacityType: e.CapacityType, InstanceType: e.InstanceType, Zone: e.Zone}] = e.Until.Time
		}
	}
	return out, nil
}
