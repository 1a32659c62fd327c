package simulation

import (
	"encoding/hex"
	"encoding/json"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// EquivalenceKey returns a key shared by pods that every Filter treats alike: same
// controller, namespace and labels (selectors of spread and affinity match on them) and the
// same scheduling-relevant spec. Per-pod details the scheduler ignores (names, generated
// service-account volumes) are left out, so the replicas of one ReplicaSet share a key. Pods
// with PersistentVolumeClaims get distinct keys through the claim names; pods with
// ResourceClaims never share a key, since their generated claims are per pod.
func EquivalenceKey(pod *corev1.Pod) string {
	owner := ""
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		owner = string(ref.UID)
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return owner + "/pod:" + string(pod.UID)
	}
	hash := fnv.New128a()
	// Marshalling these types cannot fail (no channels, funcs or cyclic values); map keys
	// are sorted, so equal inputs give equal bytes.
	_ = json.NewEncoder(hash).Encode(schedulingView(pod))
	return owner + "/" + hex.EncodeToString(hash.Sum(nil))
}

type podSchedulingView struct {
	Namespace                 string                            `json:"ns"`
	Labels                    map[string]string                 `json:"labels,omitempty"`
	NodeName                  string                            `json:"nodeName,omitempty"`
	NodeSelector              map[string]string                 `json:"nodeSelector,omitempty"`
	Affinity                  *corev1.Affinity                  `json:"affinity,omitempty"`
	Tolerations               []corev1.Toleration               `json:"tolerations,omitempty"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"spread,omitempty"`
	SchedulerName             string                            `json:"scheduler,omitempty"`
	PriorityClassName         string                            `json:"priorityClass,omitempty"`
	Priority                  *int32                            `json:"priority,omitempty"`
	RuntimeClassName          *string                           `json:"runtimeClass,omitempty"`
	Overhead                  corev1.ResourceList               `json:"overhead,omitempty"`
	Resources                 *corev1.ResourceRequirements      `json:"resources,omitempty"`
	OS                        *corev1.PodOS                     `json:"os,omitempty"`
	HostNetwork               bool                              `json:"hostNetwork,omitempty"`
	Containers                []containerSchedulingView         `json:"containers"`
	InitContainers            []containerSchedulingView         `json:"initContainers,omitempty"`
	Volumes                   []corev1.Volume                   `json:"volumes,omitempty"`
	SchedulingGates           []corev1.PodSchedulingGate        `json:"gates,omitempty"`
}

type containerSchedulingView struct {
	Resources     corev1.ResourceRequirements    `json:"resources"`
	Ports         []corev1.ContainerPort         `json:"ports,omitempty"`
	RestartPolicy *corev1.ContainerRestartPolicy `json:"restartPolicy,omitempty"`
	Image         string                         `json:"image,omitempty"`
}

func schedulingView(pod *corev1.Pod) podSchedulingView {
	spec := &pod.Spec
	return podSchedulingView{
		Namespace:                 pod.Namespace,
		Labels:                    pod.Labels,
		NodeName:                  spec.NodeName,
		NodeSelector:              spec.NodeSelector,
		Affinity:                  spec.Affinity,
		Tolerations:               spec.Tolerations,
		TopologySpreadConstraints: spec.TopologySpreadConstraints,
		SchedulerName:             spec.SchedulerName,
		PriorityClassName:         spec.PriorityClassName,
		Priority:                  spec.Priority,
		RuntimeClassName:          spec.RuntimeClassName,
		Overhead:                  spec.Overhead,
		Resources:                 spec.Resources,
		OS:                        spec.OS,
		HostNetwork:               spec.HostNetwork,
		Containers:                containerViews(spec.Containers),
		InitContainers:            containerViews(spec.InitContainers),
		Volumes:                   schedulingVolumes(spec.Volumes),
		SchedulingGates:           spec.SchedulingGates,
	}
}

func containerViews(containers []corev1.Container) []containerSchedulingView {
	views := make([]containerSchedulingView, len(containers))
	for i := range containers {
		c := &containers[i]
		views[i] = containerSchedulingView{Resources: c.Resources, Ports: c.Ports, RestartPolicy: c.RestartPolicy, Image: c.Image}
	}
	return views
}

// schedulingVolumes keeps the volumes a Filter looks at (claims, inline cloud and CSI
// volumes, generic ephemeral volumes) and drops the per-pod projected, secret, config map,
// downward API and emptyDir volumes, whose names differ between replicas.
func schedulingVolumes(volumes []corev1.Volume) []corev1.Volume {
	var kept []corev1.Volume
	for _, v := range volumes {
		src := v.VolumeSource
		if src.Projected != nil || src.Secret != nil || src.ConfigMap != nil || src.DownwardAPI != nil || src.EmptyDir != nil {
			continue
		}
		kept = append(kept, v)
	}
	return kept
}

// preFilterShareKey returns a key shared by pods for which plugin's PreFilter computes the
// same state over the same snapshot, so that one class can start from another's state; false
// when the engine does not know what the state depends on.
//
//   - PodTopologySpread counts, per DoNotSchedule constraint, the pods of the pod's namespace
//     that its selector matches on the nodes the constraint's inclusion policies admit (the
//     pod's required node affinity and node selector, its tolerations). matchLabelKeys make
//     the selector depend on the pod's labels. Pods without constraints of their own get the
//     profile's default ones, which depend on the pod's services and owners: not shared.
//   - InterPodAffinity counts the existing pods whose required anti-affinity matches the pod
//     (its namespace and labels) and the pods matching its own required terms.
func preFilterShareKey(plugin string, pod *corev1.Pod) (string, bool) {
	var view any
	switch plugin {
	case names.PodTopologySpread:
		if len(pod.Spec.TopologySpreadConstraints) == 0 {
			return "", false
		}
		v := spreadShareView{Namespace: pod.Namespace, Constraints: pod.Spec.TopologySpreadConstraints,
			NodeSelector: pod.Spec.NodeSelector, Tolerations: pod.Spec.Tolerations}
		if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
			v.NodeAffinity = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
		for _, c := range pod.Spec.TopologySpreadConstraints {
			for _, key := range c.MatchLabelKeys {
				if value, ok := pod.Labels[key]; ok {
					if v.MatchLabels == nil {
						v.MatchLabels = map[string]string{}
					}
					v.MatchLabels[key] = value
				}
			}
		}
		view = v
	case names.InterPodAffinity:
		v := affinityShareView{Namespace: pod.Namespace, Labels: pod.Labels}
		if a := pod.Spec.Affinity; a != nil {
			v.Affinity, v.AntiAffinity = a.PodAffinity, a.PodAntiAffinity
		}
		view = v
	default:
		return "", false
	}
	hash := fnv.New128a()
	_ = json.NewEncoder(hash).Encode(view)
	return plugin + "/" + hex.EncodeToString(hash.Sum(nil)), true
}

type spreadShareView struct {
	Namespace    string                            `json:"ns"`
	Constraints  []corev1.TopologySpreadConstraint `json:"spread"`
	MatchLabels  map[string]string                 `json:"matchLabels,omitempty"`
	NodeSelector map[string]string                 `json:"nodeSelector,omitempty"`
	NodeAffinity *corev1.NodeSelector              `json:"nodeAffinity,omitempty"`
	Tolerations  []corev1.Toleration               `json:"tolerations,omitempty"`
}

type affinityShareView struct {
	Namespace    string                  `json:"ns"`
	Labels       map[string]string       `json:"labels,omitempty"`
	Affinity     *corev1.PodAffinity     `json:"affinity,omitempty"`
	AntiAffinity *corev1.PodAntiAffinity `json:"antiAffinity,omitempty"`
}
