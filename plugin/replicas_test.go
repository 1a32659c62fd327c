package plugin

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/simulation/buffer"
)

func testReplicaSet(name string, replicas int32, change ...func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{SchedulerName: "joinery", Containers: []corev1.Container{{Name: "c"}}},
			},
		},
	}
	for _, c := range change {
		c(rs)
	}
	return rs
}

// replicasOf returns n pods of rs, numbered from 0.
func replicasOf(rs *appsv1.ReplicaSet, n int, change ...func(*corev1.Pod)) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		p := testPod(rs.Namespace, fmt.Sprintf("%s-%d", rs.Name, i))
		p.Labels = map[string]string{"app": rs.Name}
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
		for _, c := range change {
			c(p)
		}
		out = append(out, p)
	}
	return out
}

// TestMissingReplicaPods: a batch's ReplicaSets get virtual pods for the replicas they want
// and have not created, counted as the ReplicaSet controller counts (pods being deleted or
// finished are replaced); a ReplicaSet being deleted or failing to create pods gets none, and
// the virtual-pod cap left by the buffers bounds them.
func TestMissingReplicaPods(t *testing.T) {
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{}; p.Finalizers = []string{"x"} }
	failed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	cases := []struct {
		name  string
		rs    *appsv1.ReplicaSet
		pods  []func(*appsv1.ReplicaSet) []*corev1.Pod
		limit int
		want  int
	}{
		{"ten wanted, three created: seven planned", testReplicaSet("web", 10), []func(*appsv1.ReplicaSet) []*corev1.Pod{
			func(rs *appsv1.ReplicaSet) []*corev1.Pod { return replicasOf(rs, 3) },
		}, buffer.MaxVirtualPods, 7},
		{"pods being deleted or finished are replaced", testReplicaSet("web", 4), []func(*appsv1.ReplicaSet) []*corev1.Pod{
			func(rs *appsv1.ReplicaSet) []*corev1.Pod {
				pods := replicasOf(rs, 3)
				deleting(pods[1])
				failed(pods[2])
				return pods
			},
		}, buffer.MaxVirtualPods, 3},
		{"the cap left by the buffers bounds them", testReplicaSet("web", 10), []func(*appsv1.ReplicaSet) []*corev1.Pod{
			func(rs *appsv1.ReplicaSet) []*corev1.Pod { return replicasOf(rs, 3) },
		}, 2, 2},
		{"all created: none", testReplicaSet("web", 3), []func(*appsv1.ReplicaSet) []*corev1.Pod{
			func(rs *appsv1.ReplicaSet) []*corev1.Pod { return replicasOf(rs, 3) },
		}, buffer.MaxVirtualPods, 0},
		{"a ReplicaSet whose creations fail: none", testReplicaSet("web", 10, func(rs *appsv1.ReplicaSet) {
			rs.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate"}}
		}), []func(*appsv1.ReplicaSet) []*corev1.Pod{
			func(rs *appsv1.ReplicaSet) []*corev1.Pod { return replicasOf(rs, 3) },
		}, buffer.MaxVirtualPods, 0},
		{"a ReplicaSet being deleted: none", testReplicaSet("web", 10, func(rs *appsv1.ReplicaSet) {
			rs.DeletionTimestamp = &metav1.Time{}
		}), []func(*appsv1.ReplicaSet) []*corev1.Pod{
			func(rs *appsv1.ReplicaSet) []*corev1.Pod { return replicasOf(rs, 3) },
		}, buffer.MaxVirtualPods, 0},
		{"a pod whose owner is a ReplicaSet of the same name but another UID: none", testReplicaSet("web", 10), []func(*appsv1.ReplicaSet) []*corev1.Pod{
			func(rs *appsv1.ReplicaSet) []*corev1.Pod {
				other := rs.DeepCopy()
				other.UID = "recreated"
				return replicasOf(other, 3)
			},
		}, buffer.MaxVirtualPods, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pods []*corev1.Pod
			for _, build := range tc.pods {
				pods = append(pods, build(tc.rs)...)
			}
			env := newTestPlugin(t, true, pods...)
			p := env.plugin
			p.workloads = testWorkloadListers(t, tc.rs)
			virtual := p.missingReplicaPods(t.Context(), pods[:1], tc.limit)
			if len(virtual) != tc.want {
				t.Fatalf("%d virtual pods, want %d", len(virtual), tc.want)
			}
			for _, v := range virtual {
				if !buffer.IsVirtual(v) || buffer.Of(v) != "" || metav1.GetControllerOf(v).UID != pods[0].OwnerReferences[0].UID {
					t.Errorf("virtual pod %s: not a missing replica of the batch's ReplicaSet: %+v", v.Name, v.ObjectMeta)
				}
			}
		})
	}
}

// testWorkloadListers serves objs (ReplicaSets, StatefulSets, Jobs, claims, classes) as the
// informers would.
func testWorkloadListers(t *testing.T, objs ...runtime.Object) *workloadListers {
	t.Helper()
	newIndexer := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	rs, sts, jobs, claims, classes := newIndexer(), newIndexer(), newIndexer(), newIndexer(), newIndexer()
	for _, obj := range objs {
		var indexer cache.Indexer
		switch obj.(type) {
		case *appsv1.ReplicaSet:
			indexer = rs
		case *appsv1.StatefulSet:
			indexer = sts
		case *batchv1.Job:
			indexer = jobs
		case *corev1.PersistentVolumeClaim:
			indexer = claims
		case *storagev1.StorageClass:
			indexer = classes
		default:
			t.Fatalf("no lister for %T", obj)
		}
		if err := indexer.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	return &workloadListers{
		replicaSets:  appslisters.NewReplicaSetLister(rs),
		statefulSets: appslisters.NewStatefulSetLister(sts),
		jobs:         batchlisters.NewJobLister(jobs),
		claims:       corelisters.NewPersistentVolumeClaimLister(claims),
		classes:      storagelisters.NewStorageClassLister(classes),
	}
}

// virtualReplicas maps each virtual pod's index (its name's suffix) to the claims it mounts.
func virtualReplicas(t *testing.T, virtual []*corev1.Pod, owner types.UID) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	for _, v := range virtual {
		if !buffer.IsVirtual(v) || metav1.GetControllerOf(v).UID != owner {
			t.Fatalf("virtual pod %s: not a missing replica of %s: %+v", v.Name, owner, v.ObjectMeta)
		}
		index, err := strconv.Atoi(v.Name[strings.LastIndexByte(v.Name, '-')+1:])
		if err != nil {
			t.Fatalf("virtual pod %s: no index: %v", v.Name, err)
		}
		claims := []string{}
		for _, vol := range v.Spec.Volumes {
			if vol.PersistentVolumeClaim != nil {
				claims = append(claims, vol.PersistentVolumeClaim.ClaimName)
			}
		}
		out[index] = claims
	}
	return out
}

func testStatefulSet(name string, replicas int32, change ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{SchedulerName: "joinery", Containers: []corev1.Container{{Name: "c"}}},
			},
		},
	}
	for _, c := range change {
		c(sts)
	}
	return sts
}

// ordinalsOf returns the pods of sts with these ordinals.
func ordinalsOf(sts *appsv1.StatefulSet, ordinals ...int) []*corev1.Pod {
	var out []*corev1.Pod
	for _, i := range ordinals {
		p := testPod(sts.Namespace, fmt.Sprintf("%s-%d", sts.Name, i))
		p.Labels = map[string]string{"app": sts.Name}
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
		out = append(out, p)
	}
	return out
}

func withClaimTemplate(class *string) func(*appsv1.StatefulSet) {
	return func(sts *appsv1.StatefulSet) {
		sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class}}}
		// A template volume of the claim's name is replaced by the replica's claim.
		sts.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	}
}

func storageClass(name string, mode storagev1.VolumeBindingMode, change ...func(*storagev1.StorageClass)) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &mode}
	for _, c := range change {
		c(sc)
	}
	return sc
}

func testClaim(name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

// TestStatefulSetMissingReplicas: a StatefulSet's missing replicas are its ordinals without a
// pod that counts, under either pod management policy, from spec.ordinals.start; each mounts
// its own claims when they exist, leaves out those a class will provision wherever the pod
// lands, and waits for its pod when a claim's placement cannot be known before.
func TestStatefulSetMissingReplicas(t *testing.T) {
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{}; p.Finalizers = []string{"x"} }
	cases := []struct {
		name  string
		sts   *appsv1.StatefulSet
		pods  func(*appsv1.StatefulSet) []*corev1.Pod
		other []runtime.Object
		limit int
		want  map[int][]string
	}{
		{name: "Parallel: the ordinals without a pod", sts: testStatefulSet("db", 6),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return ordinalsOf(s, 0, 1, 2) },
			want: map[int][]string{3: {}, 4: {}, 5: {}}},
		{name: "OrderedReady is planned ahead too: all its replicas will come", sts: testStatefulSet("db", 4, func(s *appsv1.StatefulSet) {
			s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
		}), pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return ordinalsOf(s, 0) },
			want: map[int][]string{1: {}, 2: {}, 3: {}}},
		{name: "ordinals from spec.ordinals.start; a pod of an ordinal past the end does not count", sts: testStatefulSet("db", 3, func(s *appsv1.StatefulSet) {
			s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5}
		}), pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return ordinalsOf(s, 5, 9) },
			want: map[int][]string{6: {}, 7: {}}},
		{name: "pods being deleted or finished are replaced", sts: testStatefulSet("db", 3),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				pods := ordinalsOf(s, 0, 1, 2)
				deleting(pods[1])
				pods[2].Status.Phase = corev1.PodFailed
				return pods
			},
			want: map[int][]string{1: {}, 2: {}}},
		{name: "the cap bounds them", sts: testStatefulSet("db", 6),
			pods:  func(s *appsv1.StatefulSet) []*corev1.Pod { return ordinalsOf(s, 0) },
			limit: 2, want: map[int][]string{1: {}, 2: {}}},
		{name: "a StatefulSet being deleted: none", sts: testStatefulSet("db", 6, func(s *appsv1.StatefulSet) { s.DeletionTimestamp = &metav1.Time{} }),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return ordinalsOf(s, 0) }, want: map[int][]string{}},
		{name: "claims: an existing claim is mounted, one its WaitForFirstConsumer class provisions anywhere is left out",
			sts:   testStatefulSet("db", 4, withClaimTemplate(ptr.To("gp3"))),
			pods:  func(s *appsv1.StatefulSet) []*corev1.Pod { return ordinalsOf(s, 0) },
			other: []runtime.Object{storageClass("gp3", wffc), testClaim("data-db-0"), testClaim("data-db-2")},
			want:  map[int][]string{1: {}, 2: {"data-db-2"}, 3: {}}},
		{name: "claims: the default class when the template names none", sts: testStatefulSet("db", 3, withClaimTemplate(nil)),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return ordinalsOf(s, 0) },
			other: []runtime.Object{storageClass("gp3", wffc, func(sc *storagev1.StorageClass) {
				sc.Annotations = map[string]string{defaultClassAnnotation: "true"}
			}), storageClass("slow", immediate)},
			want: map[int][]string{1: {}, 2: {}}},
		{name: "claims: an Immediate class binds before the pod is placed, so only replicas whose claims exist",
			sts:   testStatefulSet("db", 4, withClaimTemplate(ptr.To("io2"))),
			pods:  func(s *appsv1.StatefulSet) []*corev1.Pod { return ordinalsOf(s, 0) },
			other: []runtime.Object{storageClass("io2", immediate), testClaim("data-db-3")},
			want:  map[int][]string{3: {"data-db-3"}}},
		{name: "claims: a class limited to some topologies, no class, or a class not found: only existing claims",
			sts:  testStatefulSet("db", 3, withClaimTemplate(ptr.To("zonal"))),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return ordinalsOf(s, 0) },
			other: []runtime.Object{storageClass("zonal", wffc, func(sc *storagev1.StorageClass) {
				sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{"a"}}}}}
			})},
			want: map[int][]string{}},
		{name: "claims: a static class (no provisioner) waits for the pods", sts: testStatefulSet("db", 2, withClaimTemplate(ptr.To("local"))),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return ordinalsOf(s, 0) },
			other: []runtime.Object{storageClass("local", wffc, func(sc *storagev1.StorageClass) {
				sc.Provisioner = noProvisioner
			})},
			want: map[int][]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods := tc.pods(tc.sts)
			env := newTestPlugin(t, true, pods...)
			p := env.plugin
			p.workloads = testWorkloadListers(t, append(tc.other, tc.sts)...)
			limit := tc.limit
			if limit == 0 {
				limit = buffer.MaxVirtualPods
			}
			got := virtualReplicas(t, p.missingReplicaPods(t.Context(), pods[:1], limit), tc.sts.UID)
			if !maps.EqualFunc(got, tc.want, slices.Equal) {
				t.Fatalf("missing replicas (ordinal: claims mounted) %v, want %v", got, tc.want)
			}
		})
	}
}

// TestStatefulSetReplicaVolumes: a missing replica's template volume of a claim template's
// name is replaced by its claim (or dropped), as the StatefulSet controller replaces it.
func TestStatefulSetReplicaVolumes(t *testing.T) {
	sts := testStatefulSet("db", 2, withClaimTemplate(ptr.To("gp3")))
	sts.Spec.Template.Spec.Volumes = append(sts.Spec.Template.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	sts.Status.UpdateRevision = "db-7f9c"
	pods := ordinalsOf(sts, 0)
	env := newTestPlugin(t, true, pods...)
	env.plugin.workloads = testWorkloadListers(t, sts, storageClass("gp3", storagev1.VolumeBindingWaitForFirstConsumer), testClaim("data-db-1"))
	virtual := env.plugin.missingReplicaPods(t.Context(), pods, buffer.MaxVirtualPods)
	if len(virtual) != 1 {
		t.Fatalf("%d virtual pods, want 1", len(virtual))
	}
	var names []string
	for _, v := range virtual[0].Spec.Volumes {
		names = append(names, v.Name)
		if v.Name == "data" && (v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "data-db-1") {
			t.Errorf("volume data: %+v, want claim data-db-1", v.VolumeSource)
		}
	}
	if !slices.Equal(names, []string{"scratch", "data"}) {
		t.Errorf("volumes %v, want [scratch data]", names)
	}
	if got := virtual[0].Labels[appsv1.ControllerRevisionHashLabelKey]; got != "db-7f9c" {
		t.Errorf("revision label %q, want the update revision db-7f9c", got)
	}
	if len(sts.Spec.Template.Spec.Volumes) != 2 || sts.Spec.Template.Labels[appsv1.ControllerRevisionHashLabelKey] != "" {
		t.Errorf("the StatefulSet's template was modified: %+v", sts.Spec.Template)
	}
}

func testJob(name string, change ...func(*batchv1.Job)) *batchv1.Job {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](10),
			Completions: ptr.To[int32](100),
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"job": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"job": name}},
				Spec:       corev1.PodSpec{SchedulerName: "joinery", RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c"}}},
			},
		},
	}
	for _, c := range change {
		c(job)
	}
	return job
}

// jobPod is a pod of job; a non-negative index makes it an Indexed Job's.
func jobPod(job *batchv1.Job, name string, index int, change ...func(*corev1.Pod)) *corev1.Pod {
	p := testPod(job.Namespace, job.Name+"-"+name)
	p.Labels = map[string]string{"job": job.Name}
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
	if index >= 0 {
		p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: strconv.Itoa(index)}
	}
	for _, c := range change {
		c(p)
	}
	return p
}

// TestJobMissingReplicas: a Job's missing replicas are the pods its controller will create
// now: up to parallelism active, no more than the completions left, less the active pods; an
// Indexed Job's are its lowest pending indexes; a suspended, finished or externally managed
// Job plans none.
func TestJobMissingReplicas(t *testing.T) {
	succeeded := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	tracked := func(p *corev1.Pod) { p.Finalizers = []string{jobTrackingFinalizer} }
	failed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	terminating := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{}; p.Finalizers = []string{"x"} }
	active := func(job *batchv1.Job, n int) []*corev1.Pod {
		var out []*corev1.Pod
		for i := range n {
			out = append(out, jobPod(job, fmt.Sprintf("a%d", i), -1))
		}
		return out
	}
	indexed := func(completions, parallelism int32, completed string) func(*batchv1.Job) {
		return func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions, j.Spec.Parallelism = &completions, &parallelism
			j.Status.CompletedIndexes = completed
		}
	}
	condition := func(c batchv1.JobConditionType) func(*batchv1.Job) {
		return func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{{Type: c, Status: corev1.ConditionTrue}}
		}
	}
	cases := []struct {
		name string
		job  *batchv1.Job
		pods func(*batchv1.Job) []*corev1.Pod
		// want is the count for a NonIndexed Job; wantIndexes the indexes for an Indexed one.
		want        int
		wantIndexes []int
	}{
		{name: "parallelism less the active pods", job: testJob("batch"), pods: func(j *batchv1.Job) []*corev1.Pod { return active(j, 3) }, want: 7},
		{name: "no more than the completions left", job: testJob("batch", func(j *batchv1.Job) {
			j.Spec.Completions = ptr.To[int32](20)
			j.Status.Succeeded = 15
		}), pods: func(j *batchv1.Job) []*corev1.Pod { return active(j, 2) }, want: 3},
		{name: "succeeded pods the status does not count yet count as succeeded", job: testJob("batch", func(j *batchv1.Job) {
			j.Spec.Completions = ptr.To[int32](20)
			j.Status.Succeeded = 14
			j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"ns-batch-s0"}}
		}), pods: func(j *batchv1.Job) []*corev1.Pod {
			// s0 is listed as uncounted, s1 still tracked, s2 counted in status.succeeded.
			return append(active(j, 2), jobPod(j, "s0", -1, succeeded), jobPod(j, "s1", -1, succeeded, tracked), jobPod(j, "s2", -1, succeeded))
		}, want: 2},
		{name: "failed pods are replaced", job: testJob("batch", func(j *batchv1.Job) {
			j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](4), ptr.To[int32](4)
		}), pods: func(j *batchv1.Job) []*corev1.Pod {
			return append(active(j, 1), jobPod(j, "f0", -1, failed), jobPod(j, "f1", -1, failed))
		}, want: 3},
		{name: "terminating pods are replaced by default", job: testJob("batch", func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](3) }),
			pods: func(j *batchv1.Job) []*corev1.Pod { return append(active(j, 1), jobPod(j, "t0", -1, terminating)) }, want: 2},
		{name: "terminating pods are waited for with podReplacementPolicy Failed", job: testJob("batch", func(j *batchv1.Job) {
			j.Spec.Parallelism = ptr.To[int32](3)
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		}), pods: func(j *batchv1.Job) []*corev1.Pod { return append(active(j, 1), jobPod(j, "t0", -1, terminating)) }, want: 1},
		{name: "a work queue (no completions) runs parallelism pods", job: testJob("queue", func(j *batchv1.Job) {
			j.Spec.Completions, j.Spec.Parallelism = nil, ptr.To[int32](5)
		}), pods: func(j *batchv1.Job) []*corev1.Pod { return active(j, 2) }, want: 3},
		{name: "a work queue adds none once a pod succeeded", job: testJob("queue", func(j *batchv1.Job) {
			j.Spec.Completions, j.Spec.Parallelism = nil, ptr.To[int32](5)
			j.Status.Succeeded = 1
		}), pods: func(j *batchv1.Job) []*corev1.Pod { return active(j, 2) }, want: 0},
		{name: "a suspended Job creates no pods", job: testJob("batch", func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }),
			pods: func(j *batchv1.Job) []*corev1.Pod { return active(j, 1) }, want: 0},
		{name: "a complete Job: none", job: testJob("batch", condition(batchv1.JobComplete)), pods: func(j *batchv1.Job) []*corev1.Pod { return active(j, 1) }, want: 0},
		{name: "a Job about to fail: none", job: testJob("batch", condition(batchv1.JobFailureTarget)), pods: func(j *batchv1.Job) []*corev1.Pod { return active(j, 1) }, want: 0},
		{name: "a Job another controller manages: none", job: testJob("batch", func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue") }),
			pods: func(j *batchv1.Job) []*corev1.Pod { return active(j, 1) }, want: 0},
		{name: "a Job being deleted: none", job: testJob("batch", func(j *batchv1.Job) { j.DeletionTimestamp = &metav1.Time{} }),
			pods: func(j *batchv1.Job) []*corev1.Pod { return active(j, 1) }, want: 0},
		{name: "Indexed: the lowest pending indexes, up to parallelism", job: testJob("idx", indexed(8, 4, "0,2")),
			pods: func(j *batchv1.Job) []*corev1.Pod { return []*corev1.Pod{jobPod(j, "1", 1)} }, wantIndexes: []int{3, 4, 5}},
		{name: "Indexed: indexes that failed for good are not run again", job: testJob("idx", indexed(6, 6, "0"), func(j *batchv1.Job) {
			j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
			j.Status.FailedIndexes = ptr.To("1,3")
		}), pods: func(j *batchv1.Job) []*corev1.Pod { return []*corev1.Pod{jobPod(j, "2", 2)} }, wantIndexes: []int{4, 5}},
		{name: "Indexed: succeeded pods' indexes not in completedIndexes yet are done", job: testJob("idx", indexed(6, 6, "0-1")),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{jobPod(j, "2", 2), jobPod(j, "3", 3, succeeded, tracked), jobPod(j, "4", 4, failed)}
			}, wantIndexes: []int{4, 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods := tc.pods(tc.job)
			env := newTestPlugin(t, true, pods...)
			p := env.plugin
			p.workloads = testWorkloadListers(t, tc.job)
			got := virtualReplicas(t, p.missingReplicaPods(t.Context(), pods[:1], buffer.MaxVirtualPods), tc.job.UID)
			if tc.wantIndexes != nil {
				indexes := slices.Sorted(maps.Keys(got))
				if !slices.Equal(indexes, tc.wantIndexes) {
					t.Fatalf("missing indexes %v, want %v", indexes, tc.wantIndexes)
				}
				return
			}
			if len(got) != tc.want {
				t.Fatalf("%d missing replicas, want %d", len(got), tc.want)
			}
		})
	}
}

func TestParseIndexes(t *testing.T) {
	for in, want := range map[string][]int{"": nil, "3": {3}, "0,2-4,7": {0, 2, 3, 4, 7}, "x,1,5-3,6-": {1}} {
		if got := slices.Sorted(maps.Keys(parseIndexes(in))); !slices.Equal(got, want) {
			t.Errorf("parseIndexes(%q) = %v, want %v", in, got, want)
		}
	}
}
