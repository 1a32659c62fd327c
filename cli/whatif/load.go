// Package whatif runs joinery's engine offline over a snapshot: the snapshot's objects are
// served by in-memory API clients, and the planner joinery-scheduler builds (plugin/planner)
// and the disruption methods joinery-controller runs (controller/disruption) read them as
// they read a live cluster.
package whatif

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joinery-dev/joinery/apis"
	"github.com/joinery-dev/joinery/cli/snapshot"
	"github.com/joinery-dev/joinery/cloudprovider"
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
	// unavailableNamespace is where the record of unavailable offerings is served.
	unavailableNamespace string
}

// Load serves s in memory. s is not modified.
func Load(s *snapshot.Snapshot) (*Cluster, error) {
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
	if len(s.UnavailableOfferings) > 0 {
		add(unavailableRecord(ns, s.UnavailableOfferings), false)
	}
	return &Cluster{
		Snapshot:             s,
		Client:               fake.NewClientBuilder().WithScheme(scheme).WithObjects(all...).Build(),
		ClientSet:            kubefake.NewClientset(core...),
		Catalog:              s.Catalog(),
		Now:                  s.TakenAt.Time,
		unavailableNamespace: ns,
	}, nil
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
