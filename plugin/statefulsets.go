package plugin

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// statefulSetReplicas: the ordinals of [start, start+spec.replicas) without a pod that
// counts (not being deleted, not finished: the StatefulSet controller replaces those), each
// a replica of its own. Both pod management policies are planned ahead: Parallel creates
// the pods in bursts like a ReplicaSet, and OrderedReady creates them one at a time, each
// after the one before it is Ready, but all of them come, so the first batch buys for all
// as one plan would, instead of a small NodeClaim per ordinal. A replica mounts its own
// claims (volumeClaimTemplates): see replicaClaims.
func (p *Plugin) statefulSetReplicas(namespace string, ref *metav1.OwnerReference) (buffer.Workload, bool) {
	sts, err := p.workloads.statefulSets.StatefulSets(namespace).Get(ref.Name)
	if err != nil || sts.UID != ref.UID || sts.DeletionTimestamp != nil || sts.Spec.Replicas == nil {
		return buffer.Workload{}, false
	}
	present := sets.New[int]()
	for _, pod := range p.controlledPods(namespace, sts.Spec.Selector, sts.UID) {
		if pod.DeletionTimestamp != nil || scheduling.PodFinished(pod) {
			continue
		}
		if ordinal, ok := statefulSetOrdinal(sts.Name, pod.Name); ok {
			present.Insert(ordinal)
		}
	}
	start := 0
	if sts.Spec.Ordinals != nil {
		start = int(sts.Spec.Ordinals.Start)
	}
	replicas := []buffer.Replica{}
	for ordinal := start; ordinal < start+int(*sts.Spec.Replicas); ordinal++ {
		if present.Has(ordinal) {
			continue
		}
		if volumes, ok := p.replicaClaims(sts, ordinal); ok {
			replicas = append(replicas, buffer.Replica{Index: ordinal, Volumes: volumes})
		}
	}
	return buffer.Workload{Ref: *ref, Namespace: namespace, Template: statefulSetTemplate(sts), Replicas: replicas}, true
}

// statefulSetTemplate is the template a StatefulSet's new pods are made of: without the
// volumes its claim templates replace (each replica mounts its own, replicaClaims), and with
// the revision label the controller adds (a spread's matchLabelKeys may name it). The
// per-pod labels (pod-name, pod-index) are not added: a selector naming one pod is rare, and
// they would make each virtual pod an equivalence class of its own.
func statefulSetTemplate(sts *appsv1.StatefulSet) *corev1.PodTemplateSpec {
	t := sts.Spec.Template.DeepCopy()
	if len(sts.Spec.VolumeClaimTemplates) > 0 {
		claimed := sets.New[string]()
		for _, c := range sts.Spec.VolumeClaimTemplates {
			claimed.Insert(c.Name)
		}
		var volumes []corev1.Volume
		for _, v := range t.Spec.Volumes {
			if !claimed.Has(v.Name) {
				volumes = append(volumes, v)
			}
		}
		t.Spec.Volumes = volumes
	}
	if sts.Status.UpdateRevision != "" {
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		t.Labels[appsv1.ControllerRevisionHashLabelKey] = sts.Status.UpdateRevision
	}
	return t
}

// statefulSetOrdinal parses the ordinal of a StatefulSet's pod from its name, <set>-<ordinal>.
func statefulSetOrdinal(set, pod string) (int, bool) {
	suffix, ok := strings.CutPrefix(pod, set+"-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(suffix)
	if err != nil || n < 0 || strconv.Itoa(n) != suffix {
		return 0, false
	}
	return n, true
}

// replicaClaims returns the volumes of ordinal's claims, <template>-<set>-<ordinal>, and
// whether the replica can be planned before it exists:
//   - a claim that exists (an earlier replica's, kept after a scale-down) is mounted, so the
//     simulation's volume Filters place the replica where its volume can be used (a bound
//     volume's zone, its class's topologies, attach limits);
//   - a claim not created yet that its class provisions where the pod is scheduled, anywhere
//     (WaitForFirstConsumer, a provisioner, no allowedTopologies, no selector or volume
//     name), constrains nothing and is left out: the controller creates it with the pod;
//   - any other (an Immediate class binds it before the pod is placed, to a zone not known
//     yet; a class or a selector that binds only volumes made beforehand; a claim being
//     deleted) leaves the replica out until its pod exists.
//
// A claim left out does not count against the planned node's attach limit; the real pod's
// Filters still decide, and a pod the limit refuses is planned again.
func (p *Plugin) replicaClaims(sts *appsv1.StatefulSet, ordinal int) ([]corev1.Volume, bool) {
	var volumes []corev1.Volume
	for i := range sts.Spec.VolumeClaimTemplates {
		tmpl := &sts.Spec.VolumeClaimTemplates[i]
		name := tmpl.Name + "-" + sts.Name + "-" + strconv.Itoa(ordinal)
		claim, err := p.workloads.claims.PersistentVolumeClaims(sts.Namespace).Get(name)
		switch {
		case err == nil && claim.DeletionTimestamp == nil:
			volumes = append(volumes, corev1.Volume{Name: tmpl.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
		case apierrors.IsNotFound(err) && p.provisionedAnywhere(tmpl):
		default:
			return nil, false
		}
	}
	return volumes, true
}

// noProvisioner is the provisioner of classes whose claims bind only volumes made beforehand.
const noProvisioner = "kubernetes.io/no-provisioner"

// provisionedAnywhere reports whether a claim made from tmpl gets a volume provisioned where
// its pod is scheduled, wherever that is.
func (p *Plugin) provisionedAnywhere(tmpl *corev1.PersistentVolumeClaim) bool {
	if tmpl.Spec.Selector != nil || tmpl.Spec.VolumeName != "" {
		return false
	}
	class := p.claimClass(tmpl.Spec.StorageClassName)
	return class != nil && class.Provisioner != noProvisioner && len(class.AllowedTopologies) == 0 &&
		class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// defaultClassAnnotation marks the StorageClass claims without a class get.
const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// claimClass is the StorageClass a claim naming name gets: the named one, or for none the
// default class (the newest, as the DefaultStorageClass admission picks); nil for "" (no
// class) or one not found.
func (p *Plugin) claimClass(name *string) *storagev1.StorageClass {
	if name != nil {
		if *name == "" {
			return nil
		}
		class, err := p.workloads.classes.Get(*name)
		if err != nil {
			return nil
		}
		return class
	}
	classes, err := p.workloads.classes.List(labels.Everything())
	if err != nil {
		return nil
	}
	var chosen *storagev1.StorageClass
	for _, c := range classes {
		if c.Annotations[defaultClassAnnotation] != "true" {
			continue
		}
		if chosen == nil || c.CreationTimestamp.After(chosen.CreationTimestamp.Time) ||
			(c.CreationTimestamp.Equal(&chosen.CreationTimestamp) && c.Name < chosen.Name) {
			chosen = c
		}
	}
	return chosen
}
