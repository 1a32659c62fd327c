// Package volatile predicts the requests of pods whose requests are volatile (annotated
// autoscaling.k8s.io/volatile-requests: "true", e.g. managed by VPA): a pod recreated from its
// owner's template gets whatever the admission chain gives it now, not what the running pod
// asked for. A controller groups annotated pods by owner and dry-runs a pod built from the
// owner's template (POST pods?dryRun=All), caching the result by (namespace, owner UID) until
// the template changes; disruption simulates with the cached requests and, before evicting,
// dry-runs again and refuses a command whose prediction no longer holds.
package volatile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/scheduling"
)

// Annotation marks a pod (or a pod template) whose requests admission may change on recreation.
const Annotation = "autoscaling.k8s.io/volatile-requests"

// Volatile reports whether pod is annotated as having volatile requests.
func Volatile(pod *corev1.Pod) bool {
	return pod.Annotations[Annotation] == "true"
}

// Key identifies an owner's prediction: its namespace and UID.
type Key struct {
	Namespace string
	OwnerUID  types.UID
}

// Owner is a pod's controller with the template its pods are made from.
type Owner struct {
	Key      Key
	Ref      metav1.OwnerReference
	Template corev1.PodTemplateSpec
	// TemplateHash identifies the template: a prediction made from another hash is stale.
	TemplateHash string
}

// Prediction is what admission gives a pod made from an owner's template.
type Prediction struct {
	TemplateHash string
	// Made is when the dry-run ran.
	Made time.Time
	// Containers and InitContainers are each container's requests, by name.
	Containers     map[string]corev1.ResourceList
	InitContainers map[string]corev1.ResourceList
	// Ceiling is the pod's effective requests (the larger of its containers' sum and any init
	// container, plus overhead): what scheduling counts.
	Ceiling corev1.ResourceList
}

// Equal reports whether p and o predict the same requests.
func (p Prediction) Equal(o Prediction) bool {
	return equality.Semantic.DeepEqual(p.Containers, o.Containers) && equality.Semantic.DeepEqual(p.InitContainers, o.InitContainers)
}

// String summarises the prediction for messages: the ceiling, sorted.
func (p Prediction) String() string {
	parts := make([]string, 0, len(p.Ceiling))
	for _, name := range slices.Sorted(maps.Keys(p.Ceiling)) {
		q := p.Ceiling[name]
		parts = append(parts, fmt.Sprintf("%s=%s", name, q.String()))
	}
	return strings.Join(parts, ",")
}

// Predictor finds owners and dry-runs their templates.
type Predictor struct {
	// Reader reads the owners (ReplicaSets, StatefulSets, DaemonSets, Jobs).
	Reader client.Reader
	// Kube creates the dry-run pods.
	Kube kubernetes.Interface
}

// OwnerOf returns pod's controller and its template, or nil for a pod without a controller
// (unowned pods are skipped) or with a kind whose template is unknown.
func (p *Predictor) OwnerOf(ctx context.Context, pod *corev1.Pod) (*Owner, error) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return nil, nil
	}
	key := client.ObjectKey{Namespace: pod.Namespace, Name: ref.Name}
	var template corev1.PodTemplateSpec
	var obj client.Object
	switch {
	case ref.APIVersion == "apps/v1" && ref.Kind == "ReplicaSet":
		rs := &appsv1.ReplicaSet{}
		obj = rs
		if err := p.Reader.Get(ctx, key, rs); err != nil {
			return nil, client.IgnoreNotFound(fmt.Errorf("getting replicaset %s: %w", key, err))
		}
		template = rs.Spec.Template
	case ref.APIVersion == "apps/v1" && ref.Kind == "StatefulSet":
		ss := &appsv1.StatefulSet{}
		obj = ss
		if err := p.Reader.Get(ctx, key, ss); err != nil {
			return nil, client.IgnoreNotFound(fmt.Errorf("getting statefulset %s: %w", key, err))
		}
		template = ss.Spec.Template
	case ref.APIVersion == "apps/v1" && ref.Kind == "DaemonSet":
		ds := &appsv1.DaemonSet{}
		obj = ds
		if err := p.Reader.Get(ctx, key, ds); err != nil {
			return nil, client.IgnoreNotFound(fmt.Errorf("getting daemonset %s: %w", key, err))
		}
		template = ds.Spec.Template
	case ref.APIVersion == "batch/v1" && ref.Kind == "Job":
		job := &batchv1.Job{}
		obj = job
		if err := p.Reader.Get(ctx, key, job); err != nil {
			return nil, client.IgnoreNotFound(fmt.Errorf("getting job %s: %w", key, err))
		}
		template = job.Spec.Template
	default:
		return nil, nil
	}
	if obj.GetUID() != ref.UID {
		return nil, nil // the owner was replaced by another of the same name
	}
	hash, err := templateHash(template)
	if err != nil {
		return nil, err
	}
	return &Owner{Key: Key{Namespace: pod.Namespace, OwnerUID: ref.UID}, Ref: *ref, Template: template, TemplateHash: hash}, nil
}

func templateHash(t corev1.PodTemplateSpec) (string, error) {
	data, err := json.Marshal(t)
	if err != nil {
		return "", fmt.Errorf("hashing a pod template: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}

// DryRun submits a pod built from owner's template with dryRun=All, so the admission chain
// (mutating webhooks and policies, VPA's among them) runs and nothing is stored, and returns
// the requests it came back with.
func (p *Predictor) DryRun(ctx context.Context, owner *Owner) (Prediction, error) {
	// The pod is never stored, so it blocks no deletion; asking to would need update on the
	// owner's finalizers under OwnerReferencesPermissionEnforcement, a right joinery-controller
	// has no use for.
	ref := owner.Ref
	ref.BlockOwnerDeletion = nil
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    owner.Ref.Name + "-",
			Namespace:       owner.Key.Namespace,
			Labels:          owner.Template.Labels,
			Annotations:     owner.Template.Annotations,
			OwnerReferences: []metav1.OwnerReference{ref},
		},
		Spec: *owner.Template.Spec.DeepCopy(),
	}
	created, err := p.Kube.CoreV1().Pods(owner.Key.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return Prediction{}, fmt.Errorf("dry-run pod of %s %s/%s: %w", owner.Ref.Kind, owner.Key.Namespace, owner.Ref.Name, err)
	}
	out := predictionOf(created, owner.TemplateHash)
	out.Made = time.Now()
	return out, nil
}

func predictionOf(pod *corev1.Pod, hash string) Prediction {
	out := Prediction{TemplateHash: hash, Containers: map[string]corev1.ResourceList{}, InitContainers: map[string]corev1.ResourceList{}}
	for _, c := range pod.Spec.Containers {
		out.Containers[c.Name] = c.Resources.Requests.DeepCopy()
	}
	for _, c := range pod.Spec.InitContainers {
		out.InitContainers[c.Name] = c.Resources.Requests.DeepCopy()
	}
	out.Ceiling = scheduling.PodRequests(pod)
	return out
}

// apply sets pod's container requests to the prediction's (containers it does not name keep
// theirs). pod must be a copy the caller owns.
func (p Prediction) apply(pod *corev1.Pod) {
	set := func(cs []corev1.Container, by map[string]corev1.ResourceList) {
		for i := range cs {
			if req, ok := by[cs[i].Name]; ok {
				cs[i].Resources.Requests = req.DeepCopy()
			}
		}
	}
	set(pod.Spec.Containers, p.Containers)
	set(pod.Spec.InitContainers, p.InitContainers)
}
