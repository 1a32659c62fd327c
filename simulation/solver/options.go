package solver

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/simulation"
)

// PreferencePolicy says how pods' preferences (preferred node affinity, preferred pod
// (anti-)affinity, ScheduleAnyway spreads) shape capacity. The plugin's args use this type, so
// the provisioning policies are declared here only.
type PreferencePolicy string

const (
	// PreferenceRespect treats preferences as required and relaxes them one at a time.
	PreferenceRespect PreferencePolicy = "Respect"
	// PreferenceIgnore leaves preferences to the scheduler.
	PreferenceIgnore PreferencePolicy = "Ignore"
)

// PreferencePolicies are the valid PreferencePolicy values.
func PreferencePolicies() []PreferencePolicy {
	return []PreferencePolicy{PreferenceRespect, PreferenceIgnore}
}

// MinValuesPolicy says what happens when a NodePool's minValues cannot be met.
type MinValuesPolicy string

const (
	// MinValuesStrict leaves the pods unschedulable for that NodePool.
	MinValuesStrict MinValuesPolicy = "Strict"
	// MinValuesBestEffort lowers minValues to what the instance types allow and marks the
	// NodeClaim with karpenter.sh/nodeclaim-min-values-relaxed.
	MinValuesBestEffort MinValuesPolicy = "BestEffort"
)

// MinValuesPolicies are the valid MinValuesPolicy values.
func MinValuesPolicies() []MinValuesPolicy {
	return []MinValuesPolicy{MinValuesStrict, MinValuesBestEffort}
}

// Defaults of the provisioning policies, for Options and the plugin's args alike.
const (
	DefaultPreferencePolicy = PreferenceRespect
	DefaultMinValuesPolicy  = MinValuesStrict
	// DefaultMaxInstanceTypes bounds the instance types a NodeClaim lists.
	DefaultMaxInstanceTypes = 60
)

// Policies are the provisioning policies of a scheduler profile's Provisioner args
// (plugin.ProvisionerArgs.Policies). joinery-scheduler's planner, joinery-controller's
// disruption simulation and the CLI plan with the same Policies, read from the same
// --scheduler-config, so that none of them can plan differently.
type Policies struct {
	PreferencePolicy  PreferencePolicy
	MinValuesPolicy   MinValuesPolicy
	MaxInstanceTypes  int
	IgnoreDRARequests bool
}

// WithPolicies returns o planning with p.
func (o Options) WithPolicies(p Policies) Options {
	o.PreferencePolicy, o.MinValuesPolicy = p.PreferencePolicy, p.MinValuesPolicy
	o.MaxInstanceTypes, o.IgnoreDRARequests = p.MaxInstanceTypes, p.IgnoreDRARequests
	return o
}

// ClusterState is the cluster one planning call reads: every call (Plan, PlanDisruption,
// PlanWithVirtual, PlanDisruptionWithout) takes its own, so the solver holds no cluster
// between calls and callers never point it at one. The plugin backs it with informer
// listers; joinery-controller with an immutable view of one simulation; tests with slices
// (StaticState).
type ClusterState interface {
	NodePools(ctx context.Context) ([]*karpv1.NodePool, error)
	// NodeClaims returns every NodeClaim; those without a registered Node are in flight.
	NodeClaims(ctx context.Context) ([]*karpv1.NodeClaim, error)
	Nodes(ctx context.Context) ([]*corev1.Node, error)
	// Pods returns the cluster's pods: bound ones occupy nodes, pending ones may be planned
	// onto in-flight NodeClaims (simulation.PlannedPodsAnnotationKey).
	Pods(ctx context.Context) ([]*corev1.Pod, error)
	DaemonSets(ctx context.Context) ([]*appsv1.DaemonSet, error)
}

// OfferingState is a ClusterState that carries its own record of offerings known not to
// launch, read together with the cluster (joinery-controller reads its record once per
// simulation). A plan over it skips those offerings as well as Options.Unavailable's.
type OfferingState interface {
	ClusterState
	OfferingUnavailable(capacityType, instanceType, zone string) bool
}

// StaticState is a ClusterState over fixed slices.
type StaticState struct {
	NodePoolList  []*karpv1.NodePool
	NodeClaimList []*karpv1.NodeClaim
	NodeList      []*corev1.Node
	PodList       []*corev1.Pod
	DaemonSetList []*appsv1.DaemonSet
}

var _ ClusterState = (*StaticState)(nil)

func (s *StaticState) NodePools(context.Context) ([]*karpv1.NodePool, error) {
	return s.NodePoolList, nil
}
func (s *StaticState) NodeClaims(context.Context) ([]*karpv1.NodeClaim, error) {
	return s.NodeClaimList, nil
}
func (s *StaticState) Nodes(context.Context) ([]*corev1.Node, error) { return s.NodeList, nil }
func (s *StaticState) Pods(context.Context) ([]*corev1.Pod, error)   { return s.PodList, nil }
func (s *StaticState) DaemonSets(context.Context) ([]*appsv1.DaemonSet, error) {
	return s.DaemonSetList, nil
}

// UnavailableFunc reports an offering known not to launch (for example after an
// insufficient-capacity error); the solver skips it.
type UnavailableFunc func(capacityType, instanceType, zone string) bool

// Options build a Solver.
type Options struct {
	InstanceTypes cloudprovider.InstanceTypeLister
	// Profile is the scheduler profile whose Filters decide fits; OutOfTree the plugins
	// compiled into the binary; Framework the client and informers the plugins need.
	Profile   *config.KubeSchedulerProfile
	OutOfTree frameworkruntime.Registry
	Framework simulation.FrameworkOptions

	PreferencePolicy PreferencePolicy
	MinValuesPolicy  MinValuesPolicy
	// MaxInstanceTypes bounds each NodeClaim's instance types (more if minValues needs);
	// DefaultMaxInstanceTypes when zero.
	MaxInstanceTypes int
	// Unavailable, when not nil, is a record of offerings known not to launch that outlives
	// plans (joinery-scheduler's, which refreshes itself); each plan also skips those of its
	// state when it is an OfferingState.
	Unavailable UnavailableFunc
	// IgnoreDRARequests (Karpenter's IGNORE_DRA_REQUESTS) leaves pods' resource claims out of
	// the simulation, as Karpenter does: DynamicResources does not run, and nodes are chosen
	// without regard to devices.
	IgnoreDRARequests bool
}

func (o *Options) defaultAndValidate() error {
	if o.PreferencePolicy == "" {
		o.PreferencePolicy = DefaultPreferencePolicy
	}
	if o.MinValuesPolicy == "" {
		o.MinValuesPolicy = DefaultMinValuesPolicy
	}
	if o.MaxInstanceTypes == 0 {
		o.MaxInstanceTypes = DefaultMaxInstanceTypes
	}
	var errs []error
	if o.InstanceTypes == nil {
		errs = append(errs, errors.New("an instance type source is required"))
	}
	if o.Profile == nil {
		errs = append(errs, errors.New("a scheduler profile is required"))
	}
	if !slices.Contains(PreferencePolicies(), o.PreferencePolicy) {
		errs = append(errs, fmt.Errorf("preference policy %q is not Respect or Ignore", o.PreferencePolicy))
	}
	if !slices.Contains(MinValuesPolicies(), o.MinValuesPolicy) {
		errs = append(errs, fmt.Errorf("minValues policy %q is not Strict or BestEffort", o.MinValuesPolicy))
	}
	if o.MaxInstanceTypes < 0 {
		errs = append(errs, fmt.Errorf("maxInstanceTypes %d is negative", o.MaxInstanceTypes))
	}
	return errors.Join(errs...)
}
