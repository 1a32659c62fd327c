package provisioning

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joinery-dev/joinery/internal/testpods"
)

// The pod builders are shared with the solver's tests (package testpods); these two names
// recur across the cases.
type podOption = testpods.Option

var labelled = testpods.Labelled

// Pods of the cases. Every pod is of the joinery profile.

func ofProfile(p *corev1.Pod) { p.Spec.SchedulerName = profileName }

func pod(name, cpu, memory string, opts ...podOption) *corev1.Pod {
	return testpods.New(name, cpu, memory, append([]podOption{ofProfile}, opts...)...)
}

func pods(n int, prefix, cpu, memory string, opts ...podOption) []*corev1.Pod {
	return testpods.Numbered(n, prefix, cpu, memory, append([]podOption{ofProfile}, opts...)...)
}

func join(groups ...[]*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// requireNodeTerms sets required node affinity: one term per requirement, ORed.
func requireNodeTerms(terms ...corev1.NodeSelectorRequirement) podOption {
	return func(p *corev1.Pod) {
		a := testpods.Affinity(p)
		if a.NodeAffinity == nil {
			a.NodeAffinity = &corev1.NodeAffinity{}
		}
		selector := &corev1.NodeSelector{}
		for _, term := range terms {
			selector.NodeSelectorTerms = append(selector.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{term}})
		}
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = selector
	}
}

func in(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func mountingClaim(claim string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
		}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: claim, MountPath: "/data/" + claim})
	}
}

// Other objects.

// daemonSet is a DaemonSet whose pods request cpu and memory; opts shape its pod template.
func daemonSet(name, cpu, memory string, opts ...podOption) *appsv1.DaemonSet {
	template := pod(name, cpu, memory, opts...)
	template.Labels["daemon"] = name
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"daemon": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: template.Labels}, Spec: template.Spec},
		},
	}
}

// tolerateEverything is a toleration with operator Exists and no key: it tolerates every
// taint, as many node agents do.
func tolerateEverything(p *corev1.Pod) {
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
}

const ebsDriver = "ebs.csi.aws.com"

// boundVolume is a PersistentVolume of the EBS CSI driver bound to the claim ns/claim, whose
// node affinity requires key In values (a zonal EBS volume).
func boundVolume(ns, name, claim, storageClass, key string, values ...string) (*corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              storageClass,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: ebsDriver, VolumeHandle: "vol-" + name}},
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{in(key, values...)},
			}}}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &storageClass,
			VolumeName:       name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		},
		Status: corev1.PersistentVolumeClaimStatus{
			Phase:       corev1.ClaimBound,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
		},
	}
	return pv, pvc
}

// waitForFirstConsumer is an EBS StorageClass that provisions in the zones given, once a pod
// uses the claim.
func waitForFirstConsumer(name string, zones ...string) *storagev1.StorageClass {
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       ebsDriver,
		VolumeBindingMode: &mode,
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: corev1.LabelTopologyZone, Values: zones},
		}}},
	}
}

func pendingClaim(name, storageClass string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &storageClass,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		},
	}
}
