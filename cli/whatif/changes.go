package whatif

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	karpv1alpha1 "github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/cli/snapshot"
	"github.com/joinery-dev/joinery/scheduling"
)

// ReadChanges reads the objects of YAML or JSON files (several documents each).
func ReadChanges(paths ...string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("reading changes: %w", err)
		}
		objs, err := DecodeChanges(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// DecodeChanges reads the objects of one YAML or JSON stream.
func DecodeChanges(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(r), 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		obj := map[string]any{}
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("document %d: an object needs apiVersion, kind and metadata.name", i)
		}
		if u.GetKind() == "List" {
			return nil, fmt.Errorf("document %d: give the list's items as separate documents", i)
		}
		out = append(out, u)
	}
}

// supportedKinds are the kinds a change may hold; workloads become their pods.
var supportedKinds = []string{
	"NodePool", "NodeClaim", "<node class>", "NodeOverlay", "CapacityBuffer", "PodTemplate", "Node", "Pod",
	"PodDisruptionBudget", "DaemonSet", "Namespace", "PersistentVolume", "PersistentVolumeClaim", "StorageClass",
	"CSINode", "Deployment", "ReplicaSet", "StatefulSet", "Job",
}

// Apply adds each object to s, replacing the object of the same kind, namespace and name.
// Deployments, ReplicaSets, StatefulSets and Jobs become their replicas, as pending pods from
// their template (a scale-down removes pending pods first); the first three are also kept
// for the CapacityBuffers whose scalableRef names them. NodeOverlay and CapacityBuffer changes
// need a snapshot of Format 2 (the catalog without overlays, the buffers' PodTemplates).
func Apply(s *snapshot.Snapshot, objs []*unstructured.Unstructured) error {
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	for _, u := range objs {
		if err := apply(s, scheme, u); err != nil {
			return fmt.Errorf("%s %s: %w", u.GetKind(), key(u.GetNamespace(), u.GetName()), err)
		}
	}
	s.Sort()
	return nil
}

func key(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func apply(s *snapshot.Snapshot, scheme *runtime.Scheme, u *unstructured.Unstructured) error {
	if u.GetNamespace() == "" && namespaced(u.GetKind()) {
		u.SetNamespace(metav1.NamespaceDefault)
	}
	gvk := u.GroupVersionKind()
	obj, err := scheme.New(gvk)
	if err != nil {
		return fmt.Errorf("unknown kind %s; a change may hold %s", gvk, strings.Join(supportedKinds, ", "))
	}
	// A NodePool, NodeOverlay, CapacityBuffer or node class the API server would refuse is
	// refused here, by the same schema and CEL rules, not simulated.
	if err := validateCRD(context.Background(), u); err != nil {
		return err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	switch o := obj.(type) {
	case *karpv1.NodePool:
		if i := index(s.NodePools, o); i >= 0 && len(o.Status.Conditions) == 0 {
			o.Status = s.NodePools[i].Status // a spec change keeps the NodePool's readiness
		}
		s.NodePools = upsert(s.NodePools, o)
	case *karpv1.NodeClaim:
		s.NodeClaims = upsert(s.NodeClaims, o)
	case *karpv1alpha1.NodeOverlay:
		if s.Legacy() {
			// Refused rather than applied twice over a catalog that has the overlays already.
			return fmt.Errorf("NodeOverlay changes cannot be simulated: %w", snapshot.ErrLegacy)
		}
		s.NodeOverlays = upsert(s.NodeOverlays, o)
	case *autoscalingv1alpha1.CapacityBuffer:
		if s.Legacy() {
			return fmt.Errorf("CapacityBuffer changes cannot be simulated: %w", snapshot.ErrLegacy)
		}
		// The status is joinery-controller's: Load resolves it again from the spec. A changed
		// buffer stays the buffer it was (its UID owns its PodTemplate; its age orders the cap).
		if i := index(s.CapacityBuffers, o); i >= 0 && o.UID == "" {
			o.UID, o.CreationTimestamp = s.CapacityBuffers[i].UID, s.CapacityBuffers[i].CreationTimestamp
		}
		s.CapacityBuffers = upsert(s.CapacityBuffers, o)
	case *corev1.PodTemplate:
		s.PodTemplates = upsert(s.PodTemplates, o)
	case *corev1.Node:
		s.Nodes = upsert(s.Nodes, o)
	case *corev1.Pod:
		s.Pods = upsert(s.Pods, pendingPod(o))
	case *corev1.Namespace:
		s.Namespaces = upsert(s.Namespaces, o)
	case *corev1.PersistentVolume:
		s.PersistentVolumes = upsert(s.PersistentVolumes, o)
	case *corev1.PersistentVolumeClaim:
		s.PersistentVolumeClaims = upsert(s.PersistentVolumeClaims, o)
	case *appsv1.DaemonSet:
		s.DaemonSets = upsert(s.DaemonSets, o)
	case *appsv1.Deployment:
		if err := scale(s, o, "ReplicaSet", "spec.replicas", ptr.Deref(o.Spec.Replicas, 1), o.Spec.Selector, o.Spec.Template); err != nil {
			return err
		}
		s.Deployments = upsert(s.Deployments, o)
	case *appsv1.ReplicaSet:
		if err := scale(s, o, "ReplicaSet", "spec.replicas", ptr.Deref(o.Spec.Replicas, 1), o.Spec.Selector, o.Spec.Template); err != nil {
			return err
		}
		s.ReplicaSets = upsert(s.ReplicaSets, o)
	case *appsv1.StatefulSet:
		if len(o.Spec.VolumeClaimTemplates) > 0 {
			return errors.New("StatefulSets with volumeClaimTemplates are not simulated: give their PersistentVolumeClaims and Pods instead")
		}
		if err := scale(s, o, "StatefulSet", "spec.replicas", ptr.Deref(o.Spec.Replicas, 1), o.Spec.Selector, o.Spec.Template); err != nil {
			return err
		}
		s.StatefulSets = upsert(s.StatefulSets, o)
	case *batchv1.Job:
		return scale(s, o, "Job", "spec.parallelism", ptr.Deref(o.Spec.Parallelism, 1), o.Spec.Selector, o.Spec.Template)
	default:
		return applyOther(s, u, obj)
	}
	return nil
}

// applyOther takes PDBs, storage and node classes, and refuses the rest.
func applyOther(s *snapshot.Snapshot, u *unstructured.Unstructured, obj runtime.Object) error {
	switch o := obj.(type) {
	case interface{ GetConditions() []metav1.Condition }:
		_ = o // a node class: kept as the cluster would serve it
		s.NodeClasses = slices.DeleteFunc(s.NodeClasses, func(c unstructured.Unstructured) bool {
			return c.GetKind() == u.GetKind() && c.GetName() == u.GetName()
		})
		s.NodeClasses = append(s.NodeClasses, *u)
		return nil
	}
	switch o := obj.(type) {
	case *policyv1.PodDisruptionBudget:
		s.PodDisruptionBudgets = upsert(s.PodDisruptionBudgets, o)
	case *storagev1.StorageClass:
		s.StorageClasses = upsert(s.StorageClasses, o)
	case *storagev1.CSINode:
		s.CSINodes = upsert(s.CSINodes, o)
	default:
		return fmt.Errorf("kind %s cannot be simulated; a change may hold %s", u.GetKind(), strings.Join(supportedKinds, ", "))
	}
	return nil
}

func namespaced(kind string) bool {
	switch kind {
	case "NodePool", "NodeClaim", "NodeOverlay", "Node", "Namespace", "PersistentVolume", "StorageClass", "CSINode":
		return false
	}
	return !strings.HasSuffix(kind, "NodeClass")
}

// index finds obj's namespace and name in items.
func index[T any, PT interface {
	*T
	metav1.Object
}](items []T, obj PT) int {
	return slices.IndexFunc(items, func(item T) bool {
		p := PT(&item)
		return p.GetNamespace() == obj.GetNamespace() && p.GetName() == obj.GetName()
	})
}

func upsert[T any, PT interface {
	*T
	metav1.Object
}](items []T, obj PT) []T {
	if obj.GetUID() == "" {
		obj.SetUID(types.UID("whatif-" + key(obj.GetNamespace(), obj.GetName())))
	}
	if i := index(items, obj); i >= 0 {
		items[i] = *obj
		return items
	}
	return append(items, *obj)
}

// pendingPod is a pod a change adds: not bound unless it says so, Pending.
func pendingPod(p *corev1.Pod) *corev1.Pod {
	if p.Spec.SchedulerName == "" {
		p.Spec.SchedulerName = corev1.DefaultSchedulerName
	}
	if p.Status.Phase == "" {
		p.Status.Phase = corev1.PodPending
	}
	return p
}

// scale makes the workload's pods number replicas: new ones are pending pods from its
// template, owned by one controller (so they are one equivalence class, like a ReplicaSet's
// pods); surplus ones are removed, pending first. field names replicas in the workload, for
// errors.
func scale(s *snapshot.Snapshot, workload metav1.Object, ownerKind, field string, replicas int32, selector *metav1.LabelSelector, tmpl corev1.PodTemplateSpec) error {
	if replicas < 0 {
		return fmt.Errorf("%s: Invalid value: %d: must be greater than or equal to 0", field, replicas)
	}
	if selector == nil {
		selector = &metav1.LabelSelector{MatchLabels: tmpl.Labels}
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return fmt.Errorf("selector: %w", err)
	}
	if !sel.Matches(labels.Set(tmpl.Labels)) {
		return errors.New("the selector does not match the pod template's labels")
	}
	ns := workload.GetNamespace()
	var mine []int
	for i := range s.Pods {
		p := &s.Pods[i]
		if p.Namespace == ns && sel.Matches(labels.Set(p.Labels)) && p.DeletionTimestamp == nil &&
			!scheduling.PodFinished(p) {
			mine = append(mine, i)
		}
	}
	have := int32(len(mine))
	if have > replicas {
		// Pending pods go first, then the last by name.
		slices.SortStableFunc(mine, func(a, b int) int {
			pa, pb := &s.Pods[a], &s.Pods[b]
			if (pa.Spec.NodeName == "") != (pb.Spec.NodeName == "") {
				if pa.Spec.NodeName == "" {
					return -1
				}
				return 1
			}
			return strings.Compare(pb.Name, pa.Name)
		})
		drop := map[int]bool{}
		for _, i := range mine[:have-replicas] {
			drop[i] = true
		}
		var kept []corev1.Pod
		for i := range s.Pods {
			if !drop[i] {
				kept = append(kept, s.Pods[i])
			}
		}
		s.Pods = kept
		return nil
	}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: ownerKind, Name: workload.GetName(),
		UID: types.UID("whatif-" + ownerKind + "-" + key(ns, workload.GetName())), Controller: ptr.To(true)}
	for i := have; i < replicas; i++ {
		name := fmt.Sprintf("%s-whatif-%d", workload.GetName(), i)
		p := corev1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: name, UID: types.UID("whatif-" + key(ns, name)),
				Labels: tmpl.Labels, Annotations: tmpl.Annotations, OwnerReferences: []metav1.OwnerReference{owner},
			},
			Spec: *tmpl.Spec.DeepCopy(),
		}
		s.Pods = append(s.Pods, *pendingPod(&p))
	}
	return nil
}
