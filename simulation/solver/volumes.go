package solver

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/joinery-dev/joinery/scheduling"
)

// volumeTopology reads the node label keys a pod's volumes constrain, through the informers
// VolumeBinding and VolumeZone use, so the solver can decide those labels on a new node
// before the Filters look at it.
type volumeTopology struct {
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
}

// newVolumeTopology registers its listers with factory; start the factory afterwards.
func newVolumeTopology(factory informers.SharedInformerFactory) *volumeTopology {
	return &volumeTopology{
		claims:  factory.Core().V1().PersistentVolumeClaims().Lister(),
		volumes: factory.Core().V1().PersistentVolumes().Lister(),
		classes: factory.Storage().V1().StorageClasses().Lister(),
	}
}

// zoneLabelKeys are the PersistentVolume labels VolumeZone matches against the node's.
var zoneLabelKeys = map[string]bool{
	corev1.LabelTopologyZone:            true,
	corev1.LabelTopologyRegion:          true,
	corev1.LabelFailureDomainBetaZone:   true,
	corev1.LabelFailureDomainBetaRegion: true,
}

// keys returns the label keys, normalized (the EBS CSI zone key reads as the zone), that
// pod's volumes constrain: a bound PersistentVolume's node affinity and zone labels, and a
// WaitForFirstConsumer StorageClass's allowed topologies. Claims or volumes not in the
// informers yet are skipped; VolumeBinding rejects the pod for them anyway.
func (v *volumeTopology) keys(pod *corev1.Pod) []string {
	if v == nil {
		return nil
	}
	var keys []string
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		var name string
		switch {
		case vol.PersistentVolumeClaim != nil:
			name = vol.PersistentVolumeClaim.ClaimName
		case vol.Ephemeral != nil:
			name = pod.Name + "-" + vol.Name // the generic ephemeral volume's claim
		default:
			continue
		}
		pvc, err := v.claims.PersistentVolumeClaims(pod.Namespace).Get(name)
		if err != nil {
			if vol.Ephemeral != nil && vol.Ephemeral.VolumeClaimTemplate != nil {
				keys = append(keys, v.classKeys(vol.Ephemeral.VolumeClaimTemplate.Spec.StorageClassName, nil)...)
			}
			continue
		}
		if pvc.Spec.VolumeName != "" {
			keys = append(keys, v.volumeKeys(pvc.Spec.VolumeName)...)
			continue
		}
		class := storagehelpers.GetPersistentVolumeClaimClass(pvc)
		keys = append(keys, v.classKeys(&class, pvc)...)
	}
	for i, k := range keys {
		keys[i] = scheduling.NormalizeLabelKey(k)
	}
	return keys
}

func (v *volumeTopology) volumeKeys(name string) []string {
	pv, err := v.volumes.Get(name)
	if err != nil {
		return nil
	}
	var keys []string
	for k := range pv.Labels {
		if zoneLabelKeys[k] {
			keys = append(keys, k)
		}
	}
	if na := pv.Spec.NodeAffinity; na != nil && na.Required != nil {
		for _, term := range na.Required.NodeSelectorTerms {
			for _, expr := range term.MatchExpressions {
				keys = append(keys, expr.Key)
			}
		}
	}
	return keys
}

// classKeys returns the keys a WaitForFirstConsumer class's allowed topologies constrain, and
// those of the node affinity of its volumes that claim (nil: a claim yet to be created) could
// bind to: a class without a provisioner binds only to volumes created beforehand, so they
// decide the zone.
func (v *volumeTopology) classKeys(name *string, claim *corev1.PersistentVolumeClaim) []string {
	if name == nil || *name == "" {
		return nil
	}
	sc, err := v.classes.Get(*name)
	if err != nil || sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return nil
	}
	var keys []string
	for _, term := range sc.AllowedTopologies {
		for _, expr := range term.MatchLabelExpressions {
			keys = append(keys, expr.Key)
		}
	}
	volumes, err := v.volumes.List(labels.Everything())
	if err != nil {
		return keys
	}
	for _, pv := range volumes {
		if pv.Spec.StorageClassName != sc.Name || !bindable(pv, claim) {
			continue
		}
		keys = append(keys, v.volumeKeys(pv.Name)...)
	}
	return keys
}

// bindable reports whether pv is free, or reserved for claim.
func bindable(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) bool {
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return pv.Status.Phase == corev1.VolumeAvailable || pv.Status.Phase == ""
	}
	return claim != nil && ref.Namespace == claim.Namespace && ref.Name == claim.Name && (ref.UID == "" || ref.UID == claim.UID)
}
