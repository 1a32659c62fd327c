package snapshot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	karpv1alpha1 "github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// CaptureOptions say what to record besides the cluster's objects.
type CaptureOptions struct {
	// InstanceTypes is the cloud provider's catalog, asked once per NodePool; required. It is
	// recorded as the provider lists it: without NodeOverlays and with reserved offerings, which
	// the reader applies according to its own gates (Format 2).
	InstanceTypes cloudprovider.InstanceTypeLister
	// CloudProvider names it in the file.
	CloudProvider string
	// Scheme knows the node-class kinds NodePools reference (apis.AddToScheme).
	Scheme *runtime.Scheme
	// UnavailableOfferingsNamespace holds joinery-controller's record of unavailable
	// offerings (the controller's namespace).
	UnavailableOfferingsNamespace string
	// Now is the capture time; time.Now when zero.
	Now time.Time
}

// Capture reads the cluster through r. Secrets are never read; of ConfigMaps only the
// unavailable-offerings record is, and only its parsed entries are kept; environment values,
// commands and the last-applied annotation are removed (Sanitize).
func Capture(ctx context.Context, r client.Reader, opts CaptureOptions) (*Snapshot, error) {
	if opts.InstanceTypes == nil || opts.Scheme == nil {
		return nil, fmt.Errorf("capture: an instance-type source and a scheme are required")
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	s := New(now)
	s.CloudProvider = opts.CloudProvider
	s.UnavailableOfferingsNamespace = opts.UnavailableOfferingsNamespace

	var (
		nps   karpv1.NodePoolList
		ncs   karpv1.NodeClaimList
		nodes corev1.NodeList
		pods  corev1.PodList
		pdbs  policyv1.PodDisruptionBudgetList
		pvs   corev1.PersistentVolumeList
		pvcs  corev1.PersistentVolumeClaimList
		scs   storagev1.StorageClassList
		csis  storagev1.CSINodeList
		dss   appsv1.DaemonSetList
		nss   corev1.NamespaceList
	)
	required := []struct {
		what string
		list client.ObjectList
	}{
		{"nodepools", &nps}, {"nodeclaims", &ncs}, {"nodes", &nodes}, {"pods", &pods},
		{"poddisruptionbudgets", &pdbs}, {"persistentvolumes", &pvs}, {"persistentvolumeclaims", &pvcs},
		{"storageclasses", &scs}, {"csinodes", &csis}, {"daemonsets", &dss}, {"namespaces", &nss},
	}
	for _, l := range required {
		if err := r.List(ctx, l.list); err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	// NodeOverlays and CapacityBuffers are behind feature gates; a cluster without their
	// CRDs simply has none.
	var (
		overlays karpv1alpha1.NodeOverlayList
		buffers  autoscalingv1alpha1.CapacityBufferList
	)
	for _, l := range []struct {
		what string
		list client.ObjectList
	}{{"nodeoverlays", &overlays}, {"capacitybuffers", &buffers}} {
		if err := r.List(ctx, l.list); err != nil && !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}

	s.NodePools, s.NodeClaims, s.Nodes, s.Pods = nps.Items, ncs.Items, nodes.Items, pods.Items
	s.PodDisruptionBudgets, s.PersistentVolumes, s.PersistentVolumeClaims = pdbs.Items, pvs.Items, pvcs.Items
	s.StorageClasses, s.CSINodes, s.DaemonSets = scs.Items, csis.Items, dss.Items
	s.NodeOverlays, s.CapacityBuffers = overlays.Items, buffers.Items
	for _, ns := range nss.Items {
		s.Namespaces = append(s.Namespaces, corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns.Name, UID: ns.UID, Labels: ns.Labels},
		})
	}

	if err := s.captureBufferSources(ctx, r); err != nil {
		return nil, err
	}
	if err := s.captureNodeClasses(ctx, r, opts.Scheme); err != nil {
		return nil, err
	}
	if err := s.captureCatalogs(ctx, opts.InstanceTypes); err != nil {
		return nil, err
	}
	if err := s.captureUnavailable(ctx, r, now); err != nil {
		return nil, err
	}
	s.Sanitize()
	s.Sort()
	return s, nil
}

// captureBufferSources records what the CapacityBuffers' pod templates come from: the
// PodTemplates they name (spec and status: a scalableRef buffer's status names the PodTemplate
// joinery-controller keeps for it) and the workloads of their scalableRefs. A reference to
// something that does not exist is left out, as the buffer controller finds it.
func (s *Snapshot) captureBufferSources(ctx context.Context, r client.Reader) error {
	seen := map[string]bool{}
	get := func(obj client.Object, namespace, name string) (bool, error) {
		k := fmt.Sprintf("%T/%s/%s", obj, namespace, name)
		if seen[k] {
			return false, nil
		}
		seen[k] = true
		err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading %T %s/%s for a capacity buffer: %w", obj, namespace, name, err)
		}
		return true, nil
	}
	for i := range s.CapacityBuffers {
		b := &s.CapacityBuffers[i]
		var templates []string
		if b.Spec.PodTemplateRef != nil {
			templates = append(templates, b.Spec.PodTemplateRef.Name)
		}
		if b.Status.PodTemplateRef != nil {
			templates = append(templates, b.Status.PodTemplateRef.Name)
		}
		for _, name := range templates {
			if err := record(get, &s.PodTemplates, b.Namespace, name); err != nil {
				return err
			}
		}
		ref := b.Spec.ScalableRef
		if ref == nil || ref.APIGroup != appsv1.GroupName {
			continue
		}
		var err error
		switch ref.Kind {
		case "Deployment":
			err = record(get, &s.Deployments, b.Namespace, ref.Name)
		case "StatefulSet":
			err = record(get, &s.StatefulSets, b.Namespace, ref.Name)
		case "ReplicaSet":
			err = record(get, &s.ReplicaSets, b.Namespace, ref.Name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// record appends namespace/name to into when get finds it.
func record[T any, PT interface {
	*T
	client.Object
}](get func(client.Object, string, string) (bool, error), into *[]T, namespace, name string) error {
	obj := PT(new(T))
	ok, err := get(obj, namespace, name)
	if err != nil || !ok {
		return err
	}
	*into = append(*into, *obj)
	return nil
}

// captureNodeClasses records every node class a NodePool references, as the cluster has it.
func (s *Snapshot) captureNodeClasses(ctx context.Context, r client.Reader, scheme *runtime.Scheme) error {
	seen := map[string]bool{}
	for i := range s.NodePools {
		ref := s.NodePools[i].Spec.Template.Spec.NodeClassRef
		if ref == nil || seen[refString(ref)] {
			continue
		}
		seen[refString(ref)] = true
		gvk, ok := kindOf(scheme, ref.Group, ref.Kind)
		if !ok {
			return fmt.Errorf("nodepool %s references node class kind %s.%s, which this joinery does not know", s.NodePools[i].Name, ref.Kind, ref.Group)
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		if err := r.Get(ctx, client.ObjectKey{Name: ref.Name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				continue // the NodePool's status says so; the snapshot records what exists
			}
			return fmt.Errorf("reading node class %s: %w", refString(ref), err)
		}
		s.NodeClasses = append(s.NodeClasses, *obj)
	}
	return nil
}

// kindOf finds the served version of group/kind in scheme.
func kindOf(scheme *runtime.Scheme, group, kind string) (gvk schema.GroupVersionKind, ok bool) {
	var versions []string
	for known := range scheme.AllKnownTypes() {
		if known.Group == group && known.Kind == kind {
			versions = append(versions, known.Version)
		}
	}
	if len(versions) == 0 {
		return schema.GroupVersionKind{}, false
	}
	slices.Sort(versions)
	return schema.GroupVersionKind{Group: group, Version: versions[len(versions)-1], Kind: kind}, true
}

// captureCatalogs asks the provider for each NodePool's instance types. A NodePool the
// provider refuses (its node class is not ready) is left without: the solver skips it live too.
func (s *Snapshot) captureCatalogs(ctx context.Context, source cloudprovider.InstanceTypeLister) error {
	for i := range s.NodePools {
		np := &s.NodePools[i]
		its, err := source.GetInstanceTypes(ctx, np)
		if err != nil {
			if cloudprovider.IsNodeClassNotReadyError(err) {
				continue
			}
			return fmt.Errorf("listing the instance types of nodepool %s: %w", np.Name, err)
		}
		if err := s.addCatalog(np, its); err != nil {
			return err
		}
	}
	return nil
}

// captureUnavailable keeps the parsed entries of the controller's record, nothing else of it.
func (s *Snapshot) captureUnavailable(ctx context.Context, r client.Reader, now time.Time) error {
	if s.UnavailableOfferingsNamespace == "" {
		return nil
	}
	var cm corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKey{Namespace: s.UnavailableOfferingsNamespace, Name: cloudprovider.UnavailableOfferingsConfigMap}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading unavailable offerings: %w", err)
	}
	for key, until := range cloudprovider.ParseUnavailableOfferings(&cm, now) {
		s.UnavailableOfferings = append(s.UnavailableOfferings, UnavailableOffering{
			CapacityType: key.CapacityType, InstanceType: key.InstanceType, Zone: key.Zone, Until: metav1.NewTime(until),
		})
	}
	return nil
}

// Sort orders every list by namespace and name.
func (s *Snapshot) Sort() {
	sortObjects(s.NodePools)
	sortObjects(s.NodeClaims)
	sortObjects(s.NodeOverlays)
	sortObjects(s.CapacityBuffers)
	sortObjects(s.Nodes)
	sortObjects(s.Pods)
	sortObjects(s.PodDisruptionBudgets)
	sortObjects(s.PersistentVolumes)
	sortObjects(s.PersistentVolumeClaims)
	sortObjects(s.StorageClasses)
	sortObjects(s.CSINodes)
	sortObjects(s.DaemonSets)
	sortObjects(s.PodTemplates)
	sortObjects(s.Deployments)
	sortObjects(s.StatefulSets)
	sortObjects(s.ReplicaSets)
	sortObjects(s.Namespaces)
	slices.SortFunc(s.NodeClasses, func(a, b unstructured.Unstructured) int {
		return strings.Compare(a.GetKind()+"/"+a.GetName(), b.GetKind()+"/"+b.GetName())
	})
	slices.SortFunc(s.UnavailableOfferings, func(a, b UnavailableOffering) int {
		return strings.Compare(a.CapacityType+a.InstanceType+a.Zone, b.CapacityType+b.InstanceType+b.Zone)
	})
}

// sortObjects sorts a slice of API objects (values whose pointers are metav1.Objects).
func sortObjects[T any, PT interface {
	*T
	metav1.Object
}](items []T) {
	slices.SortFunc(items, func(a, b T) int {
		pa, pb := PT(&a), PT(&b)
		return strings.Compare(pa.GetNamespace()+"/"+pa.GetName(), pb.GetNamespace()+"/"+pb.GetName())
	})
}
