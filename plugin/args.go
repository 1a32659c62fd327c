package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"sigs.k8s.io/yaml"

	"github.com/joinery-dev/joinery/simulation/solver"
)

// Defaults of ProvisionerArgs; the provisioning policies' are the solver's
// (solver.DefaultPreferencePolicy, DefaultMinValuesPolicy, DefaultMaxInstanceTypes).
const (
	DefaultBatchIdleDuration = time.Second
	DefaultBatchMaxDuration  = 10 * time.Second
	DefaultPlanHoldDuration  = 5 * time.Minute
	DefaultPlanTimeout       = time.Minute
	DefaultQuarantine        = 10 * time.Minute
)

// ProvisionerArgs are the plugin's args, given in the KubeSchedulerConfiguration:
//
//	pluginConfig:
//	- name: JoineryProvisioner
//	  args:
//	    batchIdleDuration: 1s
//	    batchMaxDuration: 10s
//	    preferencePolicy: Respect
//	    minValuesPolicy: Strict
//	    maxInstanceTypes: 60
//	    schedulerNames: [joinery]
//	    planHoldDuration: 5m
//	    planTimeout: 1m
//	    quarantineDuration: 10m
//	    planMissingReplicas: true
type ProvisionerArgs struct {
	// BatchIdleDuration closes a batch when no pod joined it for this long.
	BatchIdleDuration metav1.Duration `json:"batchIdleDuration"`
	// BatchMaxDuration closes a batch this long after its first pod, however busy.
	BatchMaxDuration metav1.Duration `json:"batchMaxDuration"`
	// PreferencePolicy and MinValuesPolicy go to the solver as they are (solver.Options).
	PreferencePolicy solver.PreferencePolicy `json:"preferencePolicy"`
	MinValuesPolicy  solver.MinValuesPolicy  `json:"minValuesPolicy"`
	// MaxInstanceTypes bounds the instance types a NodeClaim lists (more if minValues needs).
	MaxInstanceTypes int `json:"maxInstanceTypes"`
	// SchedulerNames are the schedulerNames of the pods this profile provisions for; default
	// the profile's own name. Pods of a name no profile of this scheduler serves are picked up
	// from their Unschedulable condition, since this scheduler never runs PostFilter for them.
	SchedulerNames []string `json:"schedulerNames,omitempty"`
	// PlanHoldDuration bounds how long a pod keeps its pin to its planned node while that
	// node rejects it for a rule that counts other pods (PodTopologySpread, InterPodAffinity)
	// and other pods of its plan are still on their way there. After it, the pod is planned
	// again.
	PlanHoldDuration metav1.Duration `json:"planHoldDuration"`
	// PlanTimeout bounds one batch's planning; a batch that runs past it is abandoned and its
	// pods stay pending.
	PlanTimeout metav1.Duration `json:"planTimeout"`
	// QuarantineDuration is how long the pods of a batch whose planning panicked are left out
	// of batches, so one bad pod cannot crash planning in a loop.
	QuarantineDuration metav1.Duration `json:"quarantineDuration"`
	// IgnoreDRARequests leaves pods' resource claims out of planning, as Karpenter's
	// IGNORE_DRA_REQUESTS does: nodes are chosen without regard to the devices claims need.
	IgnoreDRARequests bool `json:"ignoreDRARequests,omitempty"`
	// PlanMissingReplicas (default true): a batch whose pending pods belong to a ReplicaSet,
	// a StatefulSet or a Job that will create more pods than it has plans the missing ones
	// too, as virtual pods of its template, so the first batch of a scale-up buys capacity
	// for all of it. They share the virtual-pod cap (buffer.MaxVirtualPods) with
	// CapacityBuffers.
	PlanMissingReplicas *bool `json:"planMissingReplicas,omitempty"`
}

// ArgOverrides replace args of the scheduler configuration: joinery-scheduler sets them from
// Karpenter's environment settings (BATCH_IDLE_DURATION, BATCH_MAX_DURATION,
// PREFERENCE_POLICY, MIN_VALUES_POLICY, IGNORE_DRA_REQUESTS), only those that are set. Nil fields override nothing.
type ArgOverrides struct {
	BatchIdleDuration *time.Duration
	BatchMaxDuration  *time.Duration
	PreferencePolicy  *solver.PreferencePolicy
	MinValuesPolicy   *solver.MinValuesPolicy
	IgnoreDRARequests *bool
}

// apply overrides args and returns the names of the settings it applied.
func (o ArgOverrides) apply(args *ProvisionerArgs) []string {
	var applied []string
	if o.BatchIdleDuration != nil {
		args.BatchIdleDuration.Duration = *o.BatchIdleDuration
		applied = append(applied, "BATCH_IDLE_DURATION")
	}
	if o.BatchMaxDuration != nil {
		args.BatchMaxDuration.Duration = *o.BatchMaxDuration
		applied = append(applied, "BATCH_MAX_DURATION")
	}
	if o.PreferencePolicy != nil {
		args.PreferencePolicy = *o.PreferencePolicy
		applied = append(applied, "PREFERENCE_POLICY")
	}
	if o.MinValuesPolicy != nil {
		args.MinValuesPolicy = *o.MinValuesPolicy
		applied = append(applied, "MIN_VALUES_POLICY")
	}
	if o.IgnoreDRARequests != nil {
		args.IgnoreDRARequests = *o.IgnoreDRARequests
		applied = append(applied, "IGNORE_DRA_REQUESTS")
	}
	return applied
}

// DecodeArgs turns the args the framework hands a plugin factory into defaulted, validated
// ProvisionerArgs. profileName is the default of SchedulerNames.
func DecodeArgs(obj runtime.Object, profileName string) (ProvisionerArgs, error) {
	return DecodeArgsWith(obj, profileName, ArgOverrides{})
}

// DecodeArgsWith is DecodeArgs with overrides applied to the configuration's args before
// they are defaulted and validated; an error names the overrides that took part.
func DecodeArgsWith(obj runtime.Object, profileName string, overrides ArgOverrides) (ProvisionerArgs, error) {
	var args ProvisionerArgs
	switch a := obj.(type) {
	case nil:
	case *runtime.Unknown:
		if err := decodeStrict(a, &args); err != nil {
			return ProvisionerArgs{}, fmt.Errorf("%s args: %w", Name, err)
		}
	default:
		return ProvisionerArgs{}, fmt.Errorf("%s args: want runtime.Unknown, got %T", Name, obj)
	}
	applied := overrides.apply(&args)
	args.Default(profileName)
	if errs := args.Validate(field.NewPath("pluginConfig").Key(Name).Child("args")); len(errs) > 0 {
		if len(applied) > 0 {
			return ProvisionerArgs{}, fmt.Errorf("invalid %s args (with the environment's %s): %w", Name, strings.Join(applied, ", "), errs.ToAggregate())
		}
		return ProvisionerArgs{}, fmt.Errorf("invalid %s args: %w", Name, errs.ToAggregate())
	}
	return args, nil
}

// decodeStrict decodes like frameworkruntime.DecodeInto, which the framework's own plugins
// use, after checking that every field is known: a misspelled arg must stop the scheduler
// rather than be silently defaulted.
func decodeStrict(raw *runtime.Unknown, into *ProvisionerArgs) error {
	if len(raw.Raw) > 0 {
		data := raw.Raw
		if raw.ContentType == runtime.ContentTypeYAML {
			var err error
			if data, err = yaml.YAMLToJSON(data); err != nil {
				return err
			}
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		var probe ProvisionerArgs
		if err := dec.Decode(&probe); err != nil {
			return err
		}
	}
	return frameworkruntime.DecodeInto(raw, into)
}

// Default fills the fields left empty.
func (a *ProvisionerArgs) Default(profileName string) {
	if a.BatchIdleDuration.Duration == 0 {
		a.BatchIdleDuration.Duration = DefaultBatchIdleDuration
	}
	if a.BatchMaxDuration.Duration == 0 {
		a.BatchMaxDuration.Duration = DefaultBatchMaxDuration
	}
	if a.PreferencePolicy == "" {
		a.PreferencePolicy = solver.DefaultPreferencePolicy
	}
	if a.MinValuesPolicy == "" {
		a.MinValuesPolicy = solver.DefaultMinValuesPolicy
	}
	if a.MaxInstanceTypes == 0 {
		a.MaxInstanceTypes = solver.DefaultMaxInstanceTypes
	}
	if a.PlanHoldDuration.Duration == 0 {
		a.PlanHoldDuration.Duration = DefaultPlanHoldDuration
	}
	if a.PlanTimeout.Duration == 0 {
		a.PlanTimeout.Duration = DefaultPlanTimeout
	}
	if a.QuarantineDuration.Duration == 0 {
		a.QuarantineDuration.Duration = DefaultQuarantine
	}
	if a.PlanMissingReplicas == nil {
		on := true
		a.PlanMissingReplicas = &on
	}
	if len(a.SchedulerNames) == 0 && profileName != "" {
		a.SchedulerNames = []string{profileName}
	}
}

// Validate checks defaulted args; path locates them in the configuration for messages.
func (a *ProvisionerArgs) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	idle, max := a.BatchIdleDuration.Duration, a.BatchMaxDuration.Duration
	if idle <= 0 {
		errs = append(errs, field.Invalid(path.Child("batchIdleDuration"), idle.String(), "must be positive"))
	}
	if max <= 0 {
		errs = append(errs, field.Invalid(path.Child("batchMaxDuration"), max.String(), "must be positive"))
	} else if idle > max {
		errs = append(errs, field.Invalid(path.Child("batchMaxDuration"), max.String(), "must not be shorter than batchIdleDuration ("+idle.String()+")"))
	}
	if valid := solver.PreferencePolicies(); !slices.Contains(valid, a.PreferencePolicy) {
		errs = append(errs, field.NotSupported(path.Child("preferencePolicy"), a.PreferencePolicy, valid))
	}
	if valid := solver.MinValuesPolicies(); !slices.Contains(valid, a.MinValuesPolicy) {
		errs = append(errs, field.NotSupported(path.Child("minValuesPolicy"), a.MinValuesPolicy, valid))
	}
	if hold := a.PlanHoldDuration.Duration; hold <= 0 {
		errs = append(errs, field.Invalid(path.Child("planHoldDuration"), hold.String(), "must be positive"))
	}
	if d := a.PlanTimeout.Duration; d <= 0 {
		errs = append(errs, field.Invalid(path.Child("planTimeout"), d.String(), "must be positive"))
	}
	if d := a.QuarantineDuration.Duration; d <= 0 {
		errs = append(errs, field.Invalid(path.Child("quarantineDuration"), d.String(), "must be positive"))
	}
	if a.MaxInstanceTypes < 1 {
		errs = append(errs, field.Invalid(path.Child("maxInstanceTypes"), a.MaxInstanceTypes, "must be at least 1"))
	}
	if len(a.SchedulerNames) == 0 {
		errs = append(errs, field.Required(path.Child("schedulerNames"), "no profile name to default it to"))
	}
	seen := map[string]bool{}
	for i, name := range a.SchedulerNames {
		p := path.Child("schedulerNames").Index(i)
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(p, name, msg))
		}
		if seen[name] {
			errs = append(errs, field.Duplicate(p, name))
		}
		seen[name] = true
	}
	return errs
}
