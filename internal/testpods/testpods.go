// Package testpods holds builders for the pods tests plan: functional options over
// corev1.Pod. What differs between test packages (namespace, scheduler name, UID) each
// package sets with an Option of its own.
package testpods

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Option shapes a pod under construction.
type Option func(*corev1.Pod)

// New is a pod named name, with no labels yet, whose one container requests cpu and memory,
// shaped by opts in order. Its image is real so that an apiserver accepts the pod.
func New(name, cpu, memory string, opts ...Option) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
			}},
		}}},
	}
	for _, opt := range opts {
		opt(p)
	}
	return p
}

// Numbered is n pods as New builds them, named prefix-0 to prefix-(n-1).
func Numbered(n int, prefix, cpu, memory string, opts ...Option) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = New(fmt.Sprintf("%s-%d", prefix, i), cpu, memory, opts...)
	}
	return out
}

// Labelled sets the label key=value. The pod's Labels map must exist.
func Labelled(key, value string) Option { return func(p *corev1.Pod) { p.Labels[key] = value } }

// Selecting adds key=value to the pod's node selector.
func Selecting(key, value string) Option {
	return func(p *corev1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[key] = value
	}
}

// Tolerating adds a toleration of every taint with key, whatever its value and effect.
func Tolerating(key string) Option {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	}
}

// HostPort makes the first container take TCP port on its node.
func HostPort(port int32) Option {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP})
	}
}

// Affinity returns the pod's affinity, creating an empty one first, for options that add
// terms to it.
func Affinity(p *corev1.Pod) *corev1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	return p.Spec.Affinity
}

// AppSelector selects the pods labelled app=app.
func AppSelector(app string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
}

// Spread adds a topology spread constraint of max skew 1 over key among the pods of app.
func Spread(key, app string, when corev1.UnsatisfiableConstraintAction) Option {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: when, LabelSelector: AppSelector(app),
		})
	}
}

// AntiAffine requires that no pod of app shares the pod's domain of key.
func AntiAffine(key, app string) Option {
	return func(p *corev1.Pod) {
		a := Affinity(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
			corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: AppSelector(app)})
	}
}

// PreferAntiAffine prefers, with weight, a domain of key that holds no pod of app.
func PreferAntiAffine(weight int32, key, app string) Option {
	return func(p *corev1.Pod) {
		a := Affinity(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: AppSelector(app)}})
	}
}

// PreferNode prefers, with weight, nodes whose label key is one of values.
func PreferNode(weight int32, key string, values ...string) Option {
	return func(p *corev1.Pod) {
		a := Affinity(p)
		if a.NodeAffinity == nil {
			a.NodeAffinity = &corev1.NodeAffinity{}
		}
		a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}}})
	}
}
