package simulation

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/joinery-dev/joinery/scheduling"
)

const zoneLabel = corev1.LabelTopologyZone

// newTestEngine builds an engine for the default profile (or profile) over nodes and pods,
// with informers on an empty fake clientset.
func newTestEngine(tb testing.TB, nodes []*corev1.Node, pods []*corev1.Pod, profile *config.KubeSchedulerProfile, outOfTree frameworkruntime.Registry) *Engine {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	if profile == nil {
		var err error
		if profile, err = DefaultProfile(); err != nil {
			tb.Fatal(err)
		}
	}
	snapshot, err := NewSnapshot(nodes, pods)
	if err != nil {
		tb.Fatal(err)
	}
	client, factory := fakeInformers()
	engine, err := NewEngine(ctx, snapshot, profile, outOfTree, FrameworkOptions{Client: client, InformerFactory: factory})
	if err != nil {
		tb.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return engine
}

func fakeInformers() (*fake.Clientset, informers.SharedInformerFactory) {
	client := fake.NewClientset()
	return client, informers.NewSharedInformerFactory(client, 0)
}

type nodeOption func(*NodeTemplate)

func inZone(zone string) nodeOption {
	return func(t *NodeTemplate) {
		t.Requirements = scheduling.NewRequirements(scheduling.NewRequirement(zoneLabel, corev1.NodeSelectorOpIn, zone))
	}
}

func withTaint(key, value string) nodeOption {
	return func(t *NodeTemplate) {
		t.Taints = append(t.Taints, corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoSchedule})
	}
}

func withLabel(key, value string) nodeOption {
	return func(t *NodeTemplate) {
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		t.Labels[key] = value
	}
}

func testNode(name, cpu, memory string, opts ...nodeOption) *corev1.Node {
	t := NodeTemplate{Name: name, Allocatable: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
		corev1.ResourcePods:   resource.MustParse("110"),
	}}
	for _, opt := range opts {
		opt(&t)
	}
	return NewHypotheticalNode(t)
}

type podOption func(*corev1.Pod)

func onNode(node string) podOption { return func(p *corev1.Pod) { p.Spec.NodeName = node } }

func labelled(key, value string) podOption {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[key] = value
	}
}

func hostPort(port int32) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP})
	}
}

func tolerating(key string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	}
}

func ownedByDaemonSet(name string) podOption {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: "apps/v1", Kind: "DaemonSet", Name: name, UID: types.UID("ds-" + name), Controller: new(true),
		})
	}
}

func requiringZone(zones ...string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: zoneLabel, Operator: corev1.NodeSelectorOpIn, Values: zones}},
			}}},
		}}
	}
}

func antiAffine(topologyKey, app string) podOption {
	return func(p *corev1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey:   topologyKey,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			}},
		}
	}
}

func spread(topologyKey, app string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew:           1,
			TopologyKey:       topologyKey,
			WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		})
	}
}

func withClaim(claim string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
		}})
	}
}

func testPod(name, cpu, memory string, opts ...podOption) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			SchedulerName: corev1.DefaultSchedulerName,
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "registry.example/app:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse(cpu),
					corev1.ResourceMemory: resource.MustParse(memory),
				}},
			}},
		},
	}
	for _, opt := range opts {
		opt(p)
	}
	return p
}

// podNames lists, per node, the names of the pods the snapshot holds.
func podNames(s *Snapshot) map[string][]string {
	out := map[string][]string{}
	list, _ := s.List()
	for _, ni := range list {
		names := []string{}
		for _, p := range ni.GetPods() {
			names = append(names, p.GetPod().Name)
		}
		out[ni.Node().Name] = names
	}
	return out
}

func describeStatus(plugin string, reasons []string) string {
	return fmt.Sprintf("%s %v", plugin, reasons)
}

// ebsZoneKey is a provider's CSI zone key (the EBS driver's), registered here as the AWS and
// kwok providers register it, so the simulation's tests run without a provider.
const ebsZoneKey = "topology.ebs.csi.aws.com/zone"

func init() { scheduling.RegisterLabelAlias(ebsZoneKey, corev1.LabelTopologyZone) }
