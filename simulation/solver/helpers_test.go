package solver

import (
	"context"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
	"github.com/joinery-dev/joinery/internal/testpods"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

var (
	catalogOnce  sync.Once
	catalogTypes cloudprovider.InstanceTypes
	catalogErr   error
)

// kwokTypes are the kwok provider's embedded catalog.
func kwokTypes(tb testing.TB) cloudprovider.InstanceTypes {
	tb.Helper()
	catalogOnce.Do(func() {
		var f *catalog.File
		if f, catalogErr = catalog.Default(); catalogErr == nil {
			catalogTypes, catalogErr = f.Build(catalog.BuildOptions{})
		}
	})
	if catalogErr != nil {
		tb.Fatal(catalogErr)
	}
	return catalogTypes
}

// staticTypes serves the same instance types to every NodePool.
type staticTypes cloudprovider.InstanceTypes

func (s staticTypes) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	return s, nil
}

type poolOption func(*karpv1.NodePool)

func nodePool(name string, opts ...poolOption) *karpv1.NodePool {
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("np-" + name), Annotations: map[string]string{karpv1.NodePoolHashAnnotationKey: "hash-" + name}},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
			},
		}}},
	}
	for _, opt := range opts {
		opt(np)
	}
	return np
}

func weighted(w int32) poolOption { return func(np *karpv1.NodePool) { np.Spec.Weight = &w } }

func requiring(key string, op corev1.NodeSelectorOperator, minValues *int, values ...string) poolOption {
	return func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values, MinValues: minValues})
	}
}

func tainted(key string) poolOption {
	return func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
	}
}

func softTainted(key string) poolOption {
	return func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectPreferNoSchedule})
	}
}

func notReady(np *karpv1.NodePool) {
	np.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "NodeClassNotReady"}}
}

func limited(resources corev1.ResourceList) poolOption {
	return func(np *karpv1.NodePool) { np.Spec.Limits = resources }
}

// The pod builders are shared with the plugin's integration tests (package testpods); these
// two names recur across the cases.
type podOption = testpods.Option

var labelled = testpods.Labelled

// solverPod places a pod of the default scheduler in namespace default, with a UID from its
// name: the solver tells pods apart by UID.
func solverPod(p *corev1.Pod) {
	p.Namespace, p.UID, p.Spec.SchedulerName = "default", types.UID("uid-"+p.Name), corev1.DefaultSchedulerName
}

// testPod is a pod of the solver whose container requests cpu and memory.
func testPod(name, cpu, memory string, opts ...podOption) *corev1.Pod {
	return testpods.New(name, cpu, memory, append([]podOption{solverPod}, opts...)...)
}

// pods is n pods as testPod builds them, named prefix-0 to prefix-(n-1).
func pods(n int, prefix, cpu, memory string, opts ...podOption) []*corev1.Pod {
	return testpods.Numbered(n, prefix, cpu, memory, append([]podOption{solverPod}, opts...)...)
}

func affine(key, app string) podOption {
	return func(p *corev1.Pod) {
		a := testpods.Affinity(p)
		if a.PodAffinity == nil {
			a.PodAffinity = &corev1.PodAffinity{}
		}
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
			corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: testpods.AppSelector(app)})
	}
}

func preferAffine(weight int32, key, app string) podOption {
	return func(p *corev1.Pod) {
		a := testpods.Affinity(p)
		if a.PodAffinity == nil {
			a.PodAffinity = &corev1.PodAffinity{}
		}
		a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: testpods.AppSelector(app)}})
	}
}

func requireNode(key string, values ...string) podOption {
	return func(p *corev1.Pod) {
		a := testpods.Affinity(p)
		a.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}},
		}}}}
	}
}

func daemonSet(name, cpu, memory string, opts ...podOption) *appsv1.DaemonSet {
	template := testPod(name, cpu, memory, opts...)
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID("ds-" + name)},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"daemon": name}},
			Spec:       template.Spec,
		}},
	}
}

type solverOption func(*Options)

func withPolicy(p PreferencePolicy) solverOption { return func(o *Options) { o.PreferencePolicy = p } }
func withMinValues(p MinValuesPolicy) solverOption {
	return func(o *Options) { o.MinValuesPolicy = p }
}

// testSolver is a solver and the test's state, which its Plan, PlanDisruption and
// PlanWithVirtual hand the solver on each call (tests may change it between calls).
type testSolver struct {
	*Solver
	state *StaticState
}

func (s *testSolver) Plan(ctx context.Context, pods []*corev1.Pod) (*simulation.Plan, error) {
	return s.Solver.Plan(ctx, s.state, pods)
}

func (s *testSolver) PlanDisruption(ctx context.Context, pods []*corev1.Pod) (*simulation.Plan, error) {
	return s.Solver.PlanDisruption(ctx, s.state, pods)
}

func (s *testSolver) PlanWithVirtual(ctx context.Context, pods, virtual []*corev1.Pod) (*simulation.Plan, sets.Set[types.UID], error) {
	return s.Solver.PlanWithVirtual(ctx, s.state, pods, virtual)
}

// newTestSolver builds a solver with the default profile and a fake clientset, planning over
// state.
func newTestSolver(tb testing.TB, state *StaticState, its cloudprovider.InstanceTypes, opts ...solverOption) *testSolver {
	tb.Helper()
	return newTestSolverWith(tb, state, its, nil, opts...)
}

// newTestSolverWith is newTestSolver with objects (volumes, storage classes) in the fake
// clientset the plugins read.
func newTestSolverWith(tb testing.TB, state *StaticState, its cloudprovider.InstanceTypes, objects []runtime.Object, opts ...solverOption) *testSolver {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	profile, err := simulation.DefaultProfile()
	if err != nil {
		tb.Fatal(err)
	}
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	o := Options{
		InstanceTypes: staticTypes(its), Profile: profile,
		Framework: simulation.FrameworkOptions{Client: client, InformerFactory: factory},
	}
	for _, opt := range opts {
		opt(&o)
	}
	s, err := New(ctx, o)
	if err != nil {
		tb.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return &testSolver{Solver: s, state: state}
}

// planAndVerify plans batch, with objects in the cluster besides state, and runs the
// fidelity check on the result.
func planAndVerify(t *testing.T, state *StaticState, objects []runtime.Object, batch []*corev1.Pod, opts ...solverOption) *simulation.Plan {
	t.Helper()
	its := kwokTypes(t)
	s := newTestSolverWith(t, state, its, objects, opts...)
	plan, err := s.Plan(t.Context(), batch)
	if err != nil {
		t.Fatal(err)
	}
	profile, _ := simulation.DefaultProfile()
	client := fake.NewClientset(objects...)
	verifyOpts := simulation.FrameworkOptions{Client: client, InformerFactory: informers.NewSharedInformerFactory(client, 0)}
	if err := VerifyPlan(t.Context(), plan, state, its, profile, nil, batch, verifyOpts); err != nil {
		t.Fatalf("fidelity check: %v", err)
	}
	return plan
}

// requirement returns nc's requirement on key as the algebra reads it.
func requirement(nc *karpv1.NodeClaim, key string) *scheduling.Requirement {
	return scheduling.FromNodeSelectorRequirementsWithMinValues(nc.Spec.Requirements...).Get(key)
}

// instanceTypes lists nc's instance types in the order it gives them.
func instanceTypes(nc *karpv1.NodeClaim) []string {
	for _, r := range nc.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable {
			return r.Values
		}
	}
	return nil
}

func mountingClaim(claim string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
		}})
	}
}

// boundVolume is a CSI PersistentVolume bound to the claim default/claim, whose node affinity
// requires key In values, with that claim.
func boundVolume(name, claim, key string, values ...string) []runtime.Object {
	class := "manual"
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:       class,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-" + name}},
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "default", Name: claim},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}},
			}}}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
	pvc := claimOf(claim, class)
	pvc.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
	pvc.Spec.VolumeName = name
	pvc.Status = corev1.PersistentVolumeClaimStatus{
		Phase:       corev1.ClaimBound,
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
	}
	return []runtime.Object{pv, pvc}
}

// delayedVolume is an unbound claim of a WaitForFirstConsumer StorageClass that provisions
// in zones.
func delayedVolume(claim string, zones ...string) []runtime.Object {
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	class := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: "zonal"},
		Provisioner:       "ebs.csi.aws.com",
		VolumeBindingMode: &mode,
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: corev1.LabelTopologyZone, Values: zones},
		}}},
	}
	return []runtime.Object{class, claimOf(claim, class.Name)}
}

func claimOf(name, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		},
	}
}

// availableVolume is an unbound claim of a WaitForFirstConsumer StorageClass without a
// provisioner (kubernetes.io/no-provisioner) and an available PersistentVolume of that class
// whose node affinity requires zone.
func availableVolume(name, class, claim, zone string) []runtime.Object {
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: class},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &mode,
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:       class,
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/" + name}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
			}}}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
	}
	return []runtime.Object{sc, pv, claimOf(claim, class)}
}
