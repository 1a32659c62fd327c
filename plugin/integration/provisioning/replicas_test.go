package provisioning

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/internal/testpods"
)

// TestMissingReplicasPlannedWithTheFirstWave (issue 24): a workload of six zone-spread
// replicas (maxSkew 1 over three zones) — a ReplicaSet, a Parallel StatefulSet, a Job of
// parallelism six — creates its pods in two waves, two then four, as the controllers' growing
// bursts do. The first wave's batch plans the four replicas not created yet too
// (planMissingReplicas, on by default), so its NodeClaims cover all three zones, as one plan
// of all six would; the second wave lands on them, two pods per zone, and no NodeClaim is
// added. Without the missing replicas, the first batch buys two zones' NodeClaims and the
// second wave a third.
func TestMissingReplicasPlannedWithTheFirstWave(t *testing.T) {
	replicas := int32(6)
	template := func() corev1.PodTemplateSpec {
		replica := pod("template", "500m", "512Mi", labelled("app", "web"), testpods.Spread(zone, "web", corev1.DoNotSchedule))
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: replica.Labels}, Spec: replica.Spec}
	}
	// Each kind creates its workload and returns its controller reference, the name of its
	// i-th pod and the template its pods are made of (as the API server defaulted it).
	kinds := []struct {
		kind   string
		create func(t *testing.T, e *env, ns string) (metav1.OwnerReference, func(int) string, corev1.PodTemplateSpec)
	}{
		{"ReplicaSet", func(t *testing.T, e *env, ns string) (metav1.OwnerReference, func(int) string, corev1.PodTemplateSpec) {
			rs, err := e.kube.AppsV1().ReplicaSets(ns).Create(t.Context(), &appsv1.ReplicaSet{
				ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f", Namespace: ns},
				Spec:       appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: testpods.AppSelector("web"), Template: template()},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating the ReplicaSet: %v", err)
			}
			return *metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet")), func(i int) string { return fmt.Sprintf("web-5d8f-%d", i) }, rs.Spec.Template
		}},
		{"StatefulSet", func(t *testing.T, e *env, ns string) (metav1.OwnerReference, func(int) string, corev1.PodTemplateSpec) {
			sts, err := e.kube.AppsV1().StatefulSets(ns).Create(t.Context(), &appsv1.StatefulSet{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
				Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Selector: testpods.AppSelector("web"), Template: template(),
					ServiceName: "web", PodManagementPolicy: appsv1.ParallelPodManagement},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating the StatefulSet: %v", err)
			}
			return *metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet")), func(i int) string { return fmt.Sprintf("web-%d", i) }, sts.Spec.Template
		}},
		{"Job", func(t *testing.T, e *env, ns string) (metav1.OwnerReference, func(int) string, corev1.PodTemplateSpec) {
			tmpl := template()
			tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
			job, err := e.kube.BatchV1().Jobs(ns).Create(t.Context(), &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
				Spec:       batchv1.JobSpec{Parallelism: &replicas, Completions: &replicas, Template: tmpl},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating the Job: %v", err)
			}
			// The API server gave the template the Job's selector labels (controller-uid).
			return *metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job")), func(i int) string { return fmt.Sprintf("web-%c", 'a'+i) }, job.Spec.Template
		}},
	}
	e := testEnv(t)
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			ns := e.newNamespace(t)
			missingReplicasPlannedWithTheFirstWave(t, e, ns, func(t *testing.T) (metav1.OwnerReference, func(int) string, corev1.PodTemplateSpec) {
				return k.create(t, e, ns)
			})
		})
	}
}

func missingReplicasPlannedWithTheFirstWave(t *testing.T, e *env, ns string, create func(*testing.T) (metav1.OwnerReference, func(int) string, corev1.PodTemplateSpec)) {
	e.create(t, ns, nodePool("default", requires(familyLabel, corev1.NodeSelectorOpIn, nil, "c5")))
	owner, name, tmpl := create(t)
	// No controller runs here: the test creates the workload's pods, as it would.
	wave := func(from, n int) []*corev1.Pod {
		var out []*corev1.Pod
		for i := from; i < from+n; i++ {
			p := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
			p.Name = name(i)
			p.OwnerReferences = []metav1.OwnerReference{owner}
			out = append(out, p)
		}
		return e.createPlainPods(t, ns, out...)
	}
	e.startKubeScheduler(t, ns)
	first := wave(0, 2)

	// The plugin creates a plan's NodeClaims one after the other: the two real pods can be
	// planned onto the first two before the third (only missing replicas) exists, so the wait
	// is for the whole plan. A first batch without the missing replicas never covers three
	// zones, and the wait times out with the zones it saw.
	var firstClaims []*karpv1.NodeClaim
	pollUntil(t, "waiting for the first wave's plan to cover all three zones (the four replicas not created yet planned with it)", func(ctx context.Context) (bool, string, error) {
		claims, err := e.nodeClaims(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		firstClaims = claims
		onto := podsPlannedOnto(claims)
		planned := 0
		for _, p := range first {
			if onto[p.UID] != nil {
				planned++
			}
		}
		zones := claimZones(claims)
		return planned == len(first) && zones.Len() == 3,
			fmt.Sprintf("%d of %d pods planned onto %d NodeClaims covering zones %v", planned, len(first), len(claims), sets.List(zones)), nil
	})
	names := sets.New[string]()
	for _, nc := range firstClaims {
		names.Insert(nc.Name)
	}

	all := append(first, wave(2, 4)...)
	pollUntil(t, "waiting for the second wave to be planned onto the first wave's NodeClaims", func(ctx context.Context) (bool, string, error) {
		claims, err := e.nodeClaims(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		for _, nc := range claims {
			if !names.Has(nc.Name) {
				return false, "", fmt.Errorf("NodeClaim %s was added for the second wave; the first wave's %v were bought for it", nc.Name, sets.List(names))
			}
		}
		onto := podsPlannedOnto(claims)
		perZone := map[string]int{}
		var waiting []string
		for _, p := range all {
			nc := onto[p.UID]
			if nc == nil {
				waiting = append(waiting, p.Name)
				continue
			}
			perZone[requirement(nc, zone).Values[0]]++
		}
		if len(waiting) > 0 {
			return false, fmt.Sprintf("not planned yet: %v", waiting), nil
		}
		if want := map[string]int{"test-zone-a": 2, "test-zone-b": 2, "test-zone-c": 2}; !maps.Equal(perZone, want) {
			return false, "", fmt.Errorf("pods per zone %v, want %v (maxSkew 1)", perZone, want)
		}
		return true, "", nil
	})
}

// claimZones is the set of zones the NodeClaims are pinned to (a single-value zone requirement).
func claimZones(claims []*karpv1.NodeClaim) sets.Set[string] {
	zones := sets.New[string]()
	for _, nc := range claims {
		if r := requirement(nc, zone); r != nil && len(r.Values) == 1 {
			zones.Insert(r.Values[0])
		}
	}
	return zones
}

// TestMissingStatefulSetReplicaPlannedWhereItsClaimIs: a StatefulSet replica mounts its own
// claim, data-<set>-<ordinal>. Replica 1's claim exists (kept from an earlier scale-up),
// bound to a volume in zone c, while replica 0 uses one in zone a. The batch of replica 0
// plans replica 1, not created yet, onto a NodeClaim in zone c, where its volume can be
// attached, though both would fit one node; replica 1's pod then lands on it.
func TestMissingStatefulSetReplicaPlannedWhereItsClaimIs(t *testing.T) {
	e := testEnv(t)
	ns := e.newNamespace(t)
	e.create(t, ns, nodePool("default", requires(familyLabel, corev1.NodeSelectorOpIn, nil, "c5")))
	for ordinal, z := range []string{"test-zone-a", "test-zone-c"} {
		pv, pvc := boundVolume(ns, fmt.Sprintf("%s-data-%d", ns, ordinal), fmt.Sprintf("data-db-%d", ordinal), "manual", zone, z)
		e.create(t, ns, pv)
		e.create(t, ns, pvc)
	}
	replica := pod("template", "500m", "512Mi", labelled("app", "db"))
	replicas := int32(2)
	sts, err := e.kube.AppsV1().StatefulSets(ns).Create(t.Context(), &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas, Selector: testpods.AppSelector("db"), ServiceName: "db", PodManagementPolicy: appsv1.ParallelPodManagement,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: replica.Labels}, Spec: replica.Spec},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To("manual"),
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
			}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the StatefulSet: %v", err)
	}
	// The pods as the StatefulSet controller makes them: each mounts its ordinal's claim.
	replicaPod := func(ordinal int) *corev1.Pod {
		p := pod(fmt.Sprintf("db-%d", ordinal), "500m", "512Mi", labelled("app", "db"))
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: fmt.Sprintf("data-db-%d", ordinal)},
		}})
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
		return p
	}
	e.startKubeScheduler(t, ns)
	first := e.createPlainPods(t, ns, replicaPod(0))[0]

	var names []string
	pollUntil(t, "waiting for replica 0's batch to plan replica 1 onto a NodeClaim in its volume's zone", func(ctx context.Context) (bool, string, error) {
		claims, err := e.nodeClaims(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		names = nil
		for _, nc := range claims {
			names = append(names, nc.Name)
		}
		onto := podsPlannedOnto(claims)
		zones := claimZones(claims)
		ok := onto[first.UID] != nil && requirement(onto[first.UID], zone).Values[0] == "test-zone-a" && zones.Has("test-zone-c")
		return ok, fmt.Sprintf("%d NodeClaims covering zones %v", len(claims), sets.List(zones)), nil
	})
	second := e.createPlainPods(t, ns, replicaPod(1))[0]
	pollUntil(t, "waiting for replica 1 to be planned onto the NodeClaim bought for it in zone c", func(ctx context.Context) (bool, string, error) {
		claims, err := e.nodeClaims(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		for _, nc := range claims {
			if !slices.Contains(names, nc.Name) {
				return false, "", fmt.Errorf("NodeClaim %s was added for replica 1; %v were bought with it", nc.Name, names)
			}
		}
		nc := podsPlannedOnto(claims)[second.UID]
		if nc == nil {
			return false, "replica 1 not planned yet", nil
		}
		if z := requirement(nc, zone).Values; len(z) != 1 || z[0] != "test-zone-c" {
			return false, "", fmt.Errorf("replica 1 planned onto %s in zones %v, want test-zone-c (its volume's)", nc.Name, z)
		}
		return true, "", nil
	})
}

// TestReplicasTakeTheirSlotsOverARoomierNode (issue 24): a ReplicaSet of three replicas that
// prefer a node each creates one pod, whose batch plans the two replicas not created yet as
// well and buys their NodeClaims. A roomy node then registers, planned for nothing of theirs.
// The two replicas that follow take the places planned for them — they wait for those
// NodeClaims, whose planned-pods annotations list them instead of virtual pods — and land on
// their nodes. Before, kube-scheduler bound them to the roomy node (free, and preferred by
// LeastAllocated) and the NodeClaims bought for them ended with none of their pods.
func TestReplicasTakeTheirSlotsOverARoomierNode(t *testing.T) {
	e := testEnv(t)
	ns := e.newNamespace(t)
	e.create(t, ns, nodePool("default", requires(familyLabel, corev1.NodeSelectorOpIn, nil, "c5")))
	replicas := int32(3)
	replica := pod("template", "500m", "512Mi", labelled("app", "web"), testpods.PreferAntiAffine(100, corev1.LabelHostname, "web"))
	rs, err := e.kube.AppsV1().ReplicaSets(ns).Create(t.Context(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f", Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: testpods.AppSelector("web"),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: replica.Labels}, Spec: replica.Spec}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the ReplicaSet: %v", err)
	}
	owner := *metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	// No controller runs here: the test creates the ReplicaSet's pods, as it would.
	replicaPods := func(from, n int) []*corev1.Pod {
		var out []*corev1.Pod
		for i := from; i < from+n; i++ {
			p := &corev1.Pod{ObjectMeta: *rs.Spec.Template.ObjectMeta.DeepCopy(), Spec: *rs.Spec.Template.Spec.DeepCopy()}
			p.Name = fmt.Sprintf("web-5d8f-%d", i)
			p.OwnerReferences = []metav1.OwnerReference{owner}
			out = append(out, p)
		}
		return e.createPlainPods(t, ns, out...)
	}
	e.startKubeScheduler(t, ns)
	first := replicaPods(0, 1)

	var claims []*karpv1.NodeClaim
	pollUntil(t, "waiting for the first replica's batch to plan all three replicas", func(ctx context.Context) (bool, string, error) {
		var err error
		if claims, err = e.nodeClaims(ctx); err != nil {
			return false, err.Error(), nil
		}
		onto := podsPlannedOnto(claims)
		return onto[first[0].UID] != nil && len(onto) == 3, fmt.Sprintf("%d pods planned onto %d NodeClaims", len(onto), len(claims)), nil
	})
	names := sets.New[string]()
	for _, nc := range claims {
		names.Insert(nc.Name)
	}

	// A roomy node, and proof that kube-scheduler sees it: a pod of no workload binds there.
	roomy := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-roomy", Labels: map[string]string{
			zone: "test-zone-a", corev1.LabelHostname: ns + "-roomy", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110"),
		}},
	}
	e.create(t, ns, roomy)
	// Registered and Ready: the not-ready taint the API server put on it is lifted.
	roomy.Spec.Taints = nil
	if err := e.client.Update(t.Context(), roomy); err != nil {
		t.Fatalf("registering node %s: %v", roomy.Name, err)
	}
	canary := e.createPlainPods(t, ns, pod("canary", "100m", "128Mi"))[0]
	pollUntil(t, "waiting for kube-scheduler to bind a pod of no workload to the roomy node", func(ctx context.Context) (bool, string, error) {
		got, err := e.kube.CoreV1().Pods(ns).Get(t.Context(), canary.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return got.Spec.NodeName == roomy.Name, fmt.Sprintf("bound to %q; conditions %+v", got.Spec.NodeName, got.Status.Conditions), nil
	})

	all := append(first, replicaPods(1, 2)...)
	pollUntil(t, "waiting for the later replicas to take the places planned for them", func(ctx context.Context) (bool, string, error) {
		claims, err := e.nodeClaims(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		for _, nc := range claims {
			if !names.Has(nc.Name) {
				return false, "", fmt.Errorf("NodeClaim %s was added for the later replicas; %v were bought for them", nc.Name, sets.List(names))
			}
		}
		for _, p := range all {
			got, err := e.kube.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			if got.Spec.NodeName != "" {
				return false, "", fmt.Errorf("replica %s was bound to %s instead of waiting for the NodeClaim planned for it", p.Name, got.Spec.NodeName)
			}
		}
		onto := podsPlannedOnto(claims)
		var real int
		for _, p := range all {
			if onto[p.UID] != nil {
				real++
			}
		}
		return real == len(all) && len(onto) == len(all), fmt.Sprintf("%d of %d replicas listed, %d entries in all", real, len(all), len(onto)), nil
	})

	for _, nc := range claims {
		e.launchAndInitialize(t, nc)
	}
	pollUntil(t, "waiting for each replica to run on a node bought for the ReplicaSet", func(ctx context.Context) (bool, string, error) {
		perNode := map[string]int{}
		for _, p := range all {
			got, err := e.kube.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			if got.Spec.NodeName == roomy.Name {
				return false, "", fmt.Errorf("replica %s was bound to the roomy node", p.Name)
			}
			if got.Spec.NodeName != "" {
				perNode[got.Spec.NodeName]++
			}
		}
		for name := range names {
			if perNode[name] == 0 {
				return false, fmt.Sprintf("replicas per node %v; NodeClaim %s has none yet", perNode, name), nil
			}
		}
		return true, "", nil
	})
}
