package solver

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joinery-dev/joinery/simulation"
)

// daemonTolerations are the tolerations the DaemonSet controller adds to every daemon pod, so
// that daemons run on nodes that are not ready yet or under pressure.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// daemonPods turns each DaemonSet's template into the pod it would run on a new node.
func daemonPods(daemonSets []*appsv1.DaemonSet) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(daemonSets))
	for _, ds := range daemonSets {
		if ds.DeletionTimestamp != nil {
			continue
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:   ds.Namespace,
				Name:        ds.Name + "-daemon",
				UID:         types.UID("daemonset-" + string(ds.UID)),
				Labels:      ds.Spec.Template.Labels,
				Annotations: ds.Spec.Template.Annotations,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: new(true),
				}},
			},
			Spec: *ds.Spec.Template.Spec.DeepCopy(),
		}
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, daemonTolerations...)
		if pod.Spec.HostNetwork {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
		}
		out = append(out, pod)
	}
	return out
}

// addDaemons places on node nodeName every daemon pod the Filters let onto it, each as its
// own pod (UID per node), and returns what they request.
func addDaemons(ctx context.Context, engine *simulation.Engine, daemons []*corev1.Pod, nodeName string) (vec, error) {
	total := vec{}
	for _, template := range daemons {
		if !engine.CheckPredicates(ctx, template, nodeName).IsSuccess() {
			continue
		}
		pod := template.DeepCopy()
		pod.UID = types.UID(string(template.UID) + "-" + nodeName)
		if err := engine.Snapshot().AddPod(pod, nodeName); err != nil {
			return vec{}, err
		}
		total = total.plus(podVec(pod))
	}
	return total, nil
}
