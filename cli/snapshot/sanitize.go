package snapshot

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lastAppliedAnnotation holds kubectl's copy of the whole object, env values included.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Sanitize removes what the engine does not read and a snapshot must not carry: of every
// container of pods and pod templates, the environment (values and references), commands and
// arguments, probes and lifecycle hooks (exec commands, HTTP headers) and the Windows GMSA
// credential spec; kubectl's last-applied copy and managed fields of every object. Only env
// names stay.
func (s *Snapshot) Sanitize() {
	for i := range s.Pods {
		cleanMeta(&s.Pods[i].ObjectMeta)
		cleanPodSpec(&s.Pods[i].Spec)
	}
	for i := range s.DaemonSets {
		cleanMeta(&s.DaemonSets[i].ObjectMeta)
		cleanMeta(&s.DaemonSets[i].Spec.Template.ObjectMeta)
		cleanPodSpec(&s.DaemonSets[i].Spec.Template.Spec)
	}
	for _, t := range s.templates() {
		cleanMeta(t)
		cleanPodSpec(&t.Spec)
	}
	metas := []metav1.Object{}
	for i := range s.PodTemplates {
		metas = append(metas, &s.PodTemplates[i])
	}
	for i := range s.Deployments {
		metas = append(metas, &s.Deployments[i])
	}
	for i := range s.StatefulSets {
		metas = append(metas, &s.StatefulSets[i])
	}
	for i := range s.ReplicaSets {
		metas = append(metas, &s.ReplicaSets[i])
	}
	for i := range s.NodePools {
		metas = append(metas, &s.NodePools[i])
	}
	for i := range s.NodeClaims {
		metas = append(metas, &s.NodeClaims[i])
	}
	for i := range s.NodeOverlays {
		metas = append(metas, &s.NodeOverlays[i])
	}
	for i := range s.CapacityBuffers {
		metas = append(metas, &s.CapacityBuffers[i])
	}
	for i := range s.Nodes {
		metas = append(metas, &s.Nodes[i])
	}
	for i := range s.PodDisruptionBudgets {
		metas = append(metas, &s.PodDisruptionBudgets[i])
	}
	for i := range s.PersistentVolumes {
		metas = append(metas, &s.PersistentVolumes[i])
	}
	for i := range s.PersistentVolumeClaims {
		metas = append(metas, &s.PersistentVolumeClaims[i])
	}
	for i := range s.StorageClasses {
		metas = append(metas, &s.StorageClasses[i])
	}
	for i := range s.CSINodes {
		metas = append(metas, &s.CSINodes[i])
	}
	for i := range s.NodeClasses {
		metas = append(metas, &s.NodeClasses[i])
	}
	for _, m := range metas {
		dropMeta(m)
	}
}

// templates are the pod templates of the recorded PodTemplates and workloads.
func (s *Snapshot) templates() []*corev1.PodTemplateSpec {
	var out []*corev1.PodTemplateSpec
	for i := range s.PodTemplates {
		out = append(out, &s.PodTemplates[i].Template)
	}
	for i := range s.Deployments {
		out = append(out, &s.Deployments[i].Spec.Template)
	}
	for i := range s.StatefulSets {
		out = append(out, &s.StatefulSets[i].Spec.Template)
	}
	for i := range s.ReplicaSets {
		out = append(out, &s.ReplicaSets[i].Spec.Template)
	}
	return out
}

func cleanMeta(m metav1.Object) { dropMeta(m) }

func dropMeta(m metav1.Object) {
	m.SetManagedFields(nil)
	if a := m.GetAnnotations(); a != nil {
		if _, ok := a[lastAppliedAnnotation]; ok {
			delete(a, lastAppliedAnnotation)
			m.SetAnnotations(a)
		}
	}
}

func cleanPodSpec(spec *corev1.PodSpec) {
	for i := range spec.InitContainers {
		cleanContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		cleanContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i].EphemeralContainerCommon
		c.Command, c.Args, c.EnvFrom = nil, nil, nil
		c.Env = namesOnly(c.Env)
		c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
		cleanSecurityContext(c.SecurityContext)
	}
	if spec.SecurityContext != nil {
		cleanWindowsOptions(spec.SecurityContext.WindowsOptions)
	}
}

// cleanContainer drops every field of c that can hold a command or a credential; none of
// them decides where a pod fits.
func cleanContainer(c *corev1.Container) {
	c.Command, c.Args, c.EnvFrom = nil, nil, nil
	c.Env = namesOnly(c.Env)
	// Probes and hooks run commands and send HTTP headers (often a bearer token).
	c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
	cleanSecurityContext(c.SecurityContext)
}

func cleanSecurityContext(sc *corev1.SecurityContext) {
	if sc != nil {
		cleanWindowsOptions(sc.WindowsOptions)
	}
}

// cleanWindowsOptions drops the GMSA credential spec, a credential's JSON inline.
func cleanWindowsOptions(w *corev1.WindowsSecurityContextOptions) {
	if w != nil {
		w.GMSACredentialSpec = nil
	}
}

// namesOnly keeps each variable's name: neither its value nor where it comes from.
func namesOnly(env []corev1.EnvVar) []corev1.EnvVar {
	if env == nil {
		return nil
	}
	out := make([]corev1.EnvVar, len(env))
	for i, e := range env {
		out[i] = corev1.EnvVar{Name: e.Name}
	}
	return out
}
