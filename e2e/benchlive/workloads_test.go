package benchlive

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deployment is one Deployment of a workload; constrain adds its scheduling constraints to
// the pod spec (own selects the Deployment's own pods).
type deployment struct {
	name        string
	replicas    int32
	cpu, memory string
	labels      map[string]string
	constrain   func(spec *corev1.PodSpec, own *metav1.LabelSelector)
}

// workload is what one fresh cluster runs: its Deployments, created at once, and optionally a
// scale-down of one of them afterwards.
type workload struct {
	name        string
	deployments []deployment
	// scaleDown, if set, scales the named Deployment to replicas once every pod runs and
	// measures how long consolidation takes to settle.
	scaleDown *scaleDown
	// plain, if set, runs the workload as Karpenter's users do, for the scheduler's cost alone:
	// joinery-scheduler without its plugin (plain kube-scheduler) places the pods, onto the
	// NodeClaims of the offline plan, which the benchmark creates plainClaimsAfter the apply.
	plain bool
}

// plainClaimsAfter is when a plain workload's NodeClaims are created after the apply: when
// Karpenter v1.14.1 created its first batch's in issue 24's runs (+10 s, for 222 pods).
const plainClaimsAfter = 10 * time.Second

type scaleDown struct {
	deployment string
	replicas   int32
}

func selector(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func zoneSpread(maxSkew int32, when corev1.UnsatisfiableConstraintAction, sel *metav1.LabelSelector) corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: when, LabelSelector: sel}
}

func affinity(spec *corev1.PodSpec) *corev1.Affinity {
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	return spec.Affinity
}

func antiAffinity(spec *corev1.PodSpec) *corev1.PodAntiAffinity {
	a := affinity(spec)
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	return a.PodAntiAffinity
}

func podAffinity(spec *corev1.PodSpec) *corev1.PodAffinity {
	a := affinity(spec)
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	return a.PodAffinity
}

// workloads are the benchmark's cases, in the order they run.
var workloads = []workload{
	{
		// Issue 24's case: one Deployment of 500 small pods spread over zones, then scaled to 50
		// under WhenEmptyOrUnderutilized with consolidateAfter 30s.
		name: "zone-spread-500",
		deployments: []deployment{{
			name: "inflate", replicas: 500, cpu: "250m", memory: "256Mi",
			constrain: func(spec *corev1.PodSpec, own *metav1.LabelSelector) {
				spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{zoneSpread(1, corev1.DoNotSchedule, own)}
			},
		}},
		scaleDown: &scaleDown{deployment: "inflate", replicas: 50},
	},
	{
		// The same scale-up with plain kube-scheduler and NodeClaims made as Karpenter's first
		// batch was: the baseline of joinery-scheduler's CPU for it (issue 24's goal: no more
		// than 1.5 times plain kube-scheduler's), on the same machine and hour.
		name: "zone-spread-500-plain",
		deployments: []deployment{{
			name: "inflate", replicas: 500, cpu: "250m", memory: "256Mi",
			constrain: func(spec *corev1.PodSpec, own *metav1.LabelSelector) {
				spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{zoneSpread(1, corev1.DoNotSchedule, own)}
			},
		}},
		plain: true,
	},
	{
		// Three tiers at once: a zone-spread web tier that prefers a node per pod, an api tier
		// that keeps off batch nodes and prefers the web pods' zones, and a cache tier with one
		// pod per node.
		name: "mixed-affinity",
		deployments: []deployment{
			{
				name: "web", replicas: 150, cpu: "500m", memory: "512Mi", labels: map[string]string{"tier": "web"},
				constrain: func(spec *corev1.PodSpec, own *metav1.LabelSelector) {
					spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{zoneSpread(1, corev1.DoNotSchedule, own)}
					anti := antiAffinity(spec)
					anti.PreferredDuringSchedulingIgnoredDuringExecution = append(anti.PreferredDuringSchedulingIgnoredDuringExecution, corev1.WeightedPodAffinityTerm{
						Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: own},
					})
				},
			},
			{
				name: "api", replicas: 100, cpu: "1", memory: "1Gi", labels: map[string]string{"tier": "api"},
				constrain: func(spec *corev1.PodSpec, own *metav1.LabelSelector) {
					anti := antiAffinity(spec)
					anti.RequiredDuringSchedulingIgnoredDuringExecution = append(anti.RequiredDuringSchedulingIgnoredDuringExecution, corev1.PodAffinityTerm{
						TopologyKey: corev1.LabelHostname, LabelSelector: selector("tier", "cache"),
					})
					aff := podAffinity(spec)
					aff.PreferredDuringSchedulingIgnoredDuringExecution = append(aff.PreferredDuringSchedulingIgnoredDuringExecution, corev1.WeightedPodAffinityTerm{
						Weight: 80, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: corev1.LabelTopologyZone, LabelSelector: selector("tier", "web")},
					})
				},
			},
			{
				name: "cache", replicas: 24, cpu: "250m", memory: "2Gi", labels: map[string]string{"tier": "cache"},
				constrain: func(spec *corev1.PodSpec, own *metav1.LabelSelector) {
					anti := antiAffinity(spec)
					anti.RequiredDuringSchedulingIgnoredDuringExecution = append(anti.RequiredDuringSchedulingIgnoredDuringExecution, corev1.PodAffinityTerm{
						TopologyKey: corev1.LabelHostname, LabelSelector: own,
					})
				},
			},
		},
	},
	{
		// Spreads with policies and pod affinity between Deployments, four at once.
		name: "mixed-spreads",
		deployments: []deployment{
			{
				name: "a", replicas: 120, cpu: "250m", memory: "256Mi",
				constrain: func(spec *corev1.PodSpec, own *metav1.LabelSelector) {
					host := zoneSpread(2, corev1.DoNotSchedule, own)
					host.TopologyKey = corev1.LabelHostname
					spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{host, zoneSpread(1, corev1.ScheduleAnyway, own)}
				},
			},
			{
				name: "b", replicas: 80, cpu: "500m", memory: "1Gi",
				constrain: func(spec *corev1.PodSpec, own *metav1.LabelSelector) {
					s := zoneSpread(1, corev1.DoNotSchedule, own)
					s.MinDomains = ptrTo[int32](3)
					s.NodeAffinityPolicy = ptrTo(corev1.NodeInclusionPolicyHonor)
					s.NodeTaintsPolicy = ptrTo(corev1.NodeInclusionPolicyHonor)
					spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{s}
				},
			},
			{
				// Required zone affinity to a's pods: nothing can run until a's pods do.
				name: "c", replicas: 60, cpu: "100m", memory: "128Mi",
				constrain: func(spec *corev1.PodSpec, own *metav1.LabelSelector) {
					aff := podAffinity(spec)
					aff.RequiredDuringSchedulingIgnoredDuringExecution = append(aff.RequiredDuringSchedulingIgnoredDuringExecution, corev1.PodAffinityTerm{
						TopologyKey: corev1.LabelTopologyZone, LabelSelector: selector("app", "a"),
					})
				},
			},
			{
				name: "d", replicas: 40, cpu: "1", memory: "2Gi",
				constrain: func(spec *corev1.PodSpec, own *metav1.LabelSelector) {
					affinity(spec).NodeAffinity = &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
						Weight: 50, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
							Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"},
						}}},
					}}}
					anti := antiAffinity(spec)
					anti.PreferredDuringSchedulingIgnoredDuringExecution = append(anti.PreferredDuringSchedulingIgnoredDuringExecution, corev1.WeightedPodAffinityTerm{
						Weight: 20, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: selector("app", "a")},
					})
				},
			},
		},
	},
}

func ptrTo[T any](v T) *T { return &v }
