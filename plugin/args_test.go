package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/joinery-dev/joinery/simulation/solver"
)

func TestDecodeArgs(t *testing.T) {
	defaults := ProvisionerArgs{
		BatchIdleDuration:   metav1.Duration{Duration: time.Second},
		BatchMaxDuration:    metav1.Duration{Duration: 10 * time.Second},
		PreferencePolicy:    solver.PreferenceRespect,
		MinValuesPolicy:     solver.MinValuesStrict,
		MaxInstanceTypes:    60,
		SchedulerNames:      []string{"joinery"},
		PlanHoldDuration:    metav1.Duration{Duration: 5 * time.Minute},
		PlanTimeout:         metav1.Duration{Duration: time.Minute},
		QuarantineDuration:  metav1.Duration{Duration: 10 * time.Minute},
		PlanMissingReplicas: new(true),
	}
	with := func(change func(*ProvisionerArgs)) ProvisionerArgs {
		a := defaults
		a.SchedulerNames = append([]string(nil), defaults.SchedulerNames...)
		change(&a)
		return a
	}
	cases := []struct {
		name    string
		obj     runtime.Object
		want    ProvisionerArgs
		wantErr []string // substrings of the error; nil means success
	}{
		{name: "no args", obj: nil, want: defaults},
		{name: "empty args", obj: &runtime.Unknown{Raw: []byte(`{}`)}, want: defaults},
		{name: "every field", obj: &runtime.Unknown{Raw: []byte(`{"batchIdleDuration":"2s","batchMaxDuration":"30s","preferencePolicy":"Ignore","minValuesPolicy":"BestEffort","maxInstanceTypes":100,"schedulerNames":["a","b"],"planHoldDuration":"2m","planTimeout":"30s","quarantineDuration":"1h","planMissingReplicas":false}`)},
			want: ProvisionerArgs{
				BatchIdleDuration:   metav1.Duration{Duration: 2 * time.Second},
				BatchMaxDuration:    metav1.Duration{Duration: 30 * time.Second},
				PreferencePolicy:    solver.PreferenceIgnore,
				MinValuesPolicy:     solver.MinValuesBestEffort,
				MaxInstanceTypes:    100,
				SchedulerNames:      []string{"a", "b"},
				PlanHoldDuration:    metav1.Duration{Duration: 2 * time.Minute},
				PlanTimeout:         metav1.Duration{Duration: 30 * time.Second},
				QuarantineDuration:  metav1.Duration{Duration: time.Hour},
				PlanMissingReplicas: new(false),
			}},
		{name: "yaml content", obj: &runtime.Unknown{ContentType: runtime.ContentTypeYAML, Raw: []byte("batchIdleDuration: 500ms\npreferencePolicy: Ignore\n")},
			want: with(func(a *ProvisionerArgs) {
				a.BatchIdleDuration.Duration = 500 * time.Millisecond
				a.PreferencePolicy = solver.PreferenceIgnore
			})},
		{name: "unknown field", obj: &runtime.Unknown{Raw: []byte(`{"batchIdle":"2s"}`)}, wantErr: []string{"JoineryProvisioner args", `unknown field "batchIdle"`}},
		{name: "not a duration", obj: &runtime.Unknown{Raw: []byte(`{"batchMaxDuration":"soon"}`)}, wantErr: []string{"JoineryProvisioner args"}},
		{name: "negative idle", obj: &runtime.Unknown{Raw: []byte(`{"batchIdleDuration":"-1s"}`)},
			wantErr: []string{"pluginConfig[JoineryProvisioner].args.batchIdleDuration", "must be positive"}},
		{name: "idle longer than max", obj: &runtime.Unknown{Raw: []byte(`{"batchIdleDuration":"20s"}`)},
			wantErr: []string{"args.batchMaxDuration", "must not be shorter than batchIdleDuration (20s)"}},
		{name: "bad preference policy", obj: &runtime.Unknown{Raw: []byte(`{"preferencePolicy":"respect"}`)},
			wantErr: []string{"args.preferencePolicy", `"Respect"`, `"Ignore"`}},
		{name: "bad minValues policy", obj: &runtime.Unknown{Raw: []byte(`{"minValuesPolicy":"Loose"}`)},
			wantErr: []string{"args.minValuesPolicy", `"Strict"`, `"BestEffort"`}},
		{name: "negative max instance types", obj: &runtime.Unknown{Raw: []byte(`{"maxInstanceTypes":-3}`)},
			wantErr: []string{"args.maxInstanceTypes", "must be at least 1"}},
		{name: "bad and duplicate scheduler names", obj: &runtime.Unknown{Raw: []byte(`{"schedulerNames":["a","A_b","a"]}`)},
			wantErr: []string{"args.schedulerNames[1]", "args.schedulerNames[2]: Duplicate value"}},
		{name: "negative plan hold", obj: &runtime.Unknown{Raw: []byte(`{"planHoldDuration":"-1m"}`)},
			wantErr: []string{"args.planHoldDuration", "must be positive"}},
		{name: "negative plan timeout and quarantine", obj: &runtime.Unknown{Raw: []byte(`{"planTimeout":"-1s","quarantineDuration":"-1s"}`)},
			wantErr: []string{"args.planTimeout", "args.quarantineDuration"}},
		{name: "not runtime.Unknown", obj: &metav1.Status{}, wantErr: []string{"want runtime.Unknown"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeArgs(tc.obj, "joinery")
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("no error; got %+v", got)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultArgsWithoutProfileName(t *testing.T) {
	_, err := DecodeArgs(nil, "")
	if err == nil || !strings.Contains(err.Error(), "args.schedulerNames: Required value") {
		t.Errorf("error %v, want schedulerNames required", err)
	}
}

// TestDecodeArgsWithOverrides: environment overrides replace only what they set, the
// configuration keeps the rest, and a combination the args' rules refuse names the settings.
func TestDecodeArgsWithOverrides(t *testing.T) {
	config := &runtime.Unknown{Raw: []byte(`{"batchIdleDuration":"2s","batchMaxDuration":"30s","preferencePolicy":"Ignore"}`)}
	idle, longIdle := 5*time.Second, time.Minute
	bestEffort, ignore := solver.MinValuesBestEffort, true
	cases := []struct {
		name      string
		overrides ArgOverrides
		check     func(ProvisionerArgs) string
		wantErr   []string
	}{
		{name: "none", check: func(a ProvisionerArgs) string {
			return cmp.Diff([]any{2 * time.Second, 30 * time.Second, solver.PreferenceIgnore, solver.MinValuesStrict},
				[]any{a.BatchIdleDuration.Duration, a.BatchMaxDuration.Duration, a.PreferencePolicy, a.MinValuesPolicy})
		}},
		{name: "some", overrides: ArgOverrides{BatchIdleDuration: &idle, MinValuesPolicy: &bestEffort}, check: func(a ProvisionerArgs) string {
			return cmp.Diff([]any{5 * time.Second, 30 * time.Second, solver.PreferenceIgnore, solver.MinValuesBestEffort},
				[]any{a.BatchIdleDuration.Duration, a.BatchMaxDuration.Duration, a.PreferencePolicy, a.MinValuesPolicy})
		}},
		{name: "IGNORE_DRA_REQUESTS", overrides: ArgOverrides{IgnoreDRARequests: &ignore}, check: func(a ProvisionerArgs) string {
			return cmp.Diff(true, a.IgnoreDRARequests)
		}},
		{name: "refused combination", overrides: ArgOverrides{BatchIdleDuration: &longIdle},
			wantErr: []string{"with the environment's BATCH_IDLE_DURATION", "batchMaxDuration"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args, err := DecodeArgsWith(config, "joinery", tc.overrides)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatal("no error")
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := tc.check(args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}
