package featuregates

import (
	"flag"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    map[string]bool
		wantErr string
	}{
		{name: "empty keeps Karpenter's defaults", value: "", want: map[string]bool{
			NodeRepair: false, ReservedCapacity: true, SpotToSpotConsolidation: false,
			NodeOverlay: false, StaticCapacity: false, CapacityBuffer: false,
		}},
		{name: "one gate on", value: "NodeRepair=true", want: map[string]bool{NodeRepair: true, ReservedCapacity: true}},
		{name: "several, spaces and a default turned off", value: " NodeRepair=true , ReservedCapacity=false,", want: map[string]bool{NodeRepair: true, ReservedCapacity: false, CapacityBuffer: false}},
		{name: "last value wins", value: "NodeOverlay=true,NodeOverlay=false", want: map[string]bool{NodeOverlay: false}},
		{name: "unknown gate", value: "Drift=true", wantErr: `FEATURE_GATES: unknown feature gate "Drift"`},
		{name: "not a boolean", value: "NodeRepair=yes", wantErr: `FEATURE_GATES: feature gate NodeRepair has value "yes", want true or false`},
		{name: "no value", value: "NodeRepair", wantErr: `FEATURE_GATES: "NodeRepair" is not Name=true|false`},
		{name: "StaticCapacity on is accepted", value: "StaticCapacity=true", want: map[string]bool{StaticCapacity: true}},
		{name: "StaticCapacity off is its default", value: "StaticCapacity=false", want: map[string]bool{StaticCapacity: false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := FromEnv(tt.value)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for gate, want := range tt.want {
				if got := g.Enabled(gate); got != want {
					t.Errorf("%s = %t, want %t", gate, got, want)
				}
			}
		})
	}
}

func TestFlagValue(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	gates := Default()
	fs.Var(&Value{Gates: &gates}, FlagName, "gates")
	if err := fs.Parse([]string{"--feature-gates=NodeRepair=true,SpotToSpotConsolidation=true"}); err != nil {
		t.Fatal(err)
	}
	if !gates.Enabled(NodeRepair) || !gates.Enabled(SpotToSpotConsolidation) || !gates.Enabled(ReservedCapacity) {
		t.Errorf("gates = %s", gates)
	}
	err := fs.Parse([]string{"--feature-gates=Bogus=true"})
	if err == nil || !strings.Contains(err.Error(), `--feature-gates: unknown feature gate "Bogus"`) {
		t.Errorf("error = %v, want one naming --feature-gates and the gate", err)
	}
}

func TestString(t *testing.T) {
	g, err := Parse("x", "NodeRepair=true")
	if err != nil {
		t.Fatal(err)
	}
	want := "CapacityBuffer=false,NodeOverlay=false,NodeRepair=true,ReservedCapacity=true,SpotToSpotConsolidation=false,StaticCapacity=false"
	if got := g.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestNewValue: every binary reads the gates the same way: the environment's value, replaced
// whole by --feature-gates when the flag is given; an invalid environment value names it.
func TestNewValue(t *testing.T) {
	tests := []struct {
		name, env string
		flag      *string
		want      map[string]bool
		wantErr   string
	}{
		{name: "environment only", env: "NodeOverlay=true", want: map[string]bool{NodeOverlay: true, CapacityBuffer: false}},
		{name: "the flag replaces the environment whole", env: "NodeOverlay=true", flag: ptrTo("CapacityBuffer=true"),
			want: map[string]bool{NodeOverlay: false, CapacityBuffer: true}},
		{name: "neither: Karpenter's defaults", want: map[string]bool{ReservedCapacity: true, NodeOverlay: false}},
		{name: "an invalid environment value", env: "NodeOverlay=maybe", wantErr: `FEATURE_GATES: feature gate NodeOverlay has value "maybe"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewValue(tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.flag != nil {
				if err := v.Set(*tt.flag); err != nil {
					t.Fatal(err)
				}
			}
			for gate, want := range tt.want {
				if got := v.Get().Enabled(gate); got != want {
					t.Errorf("%s = %v, want %v", gate, got, want)
				}
			}
		})
	}
}

func ptrTo(s string) *string { return &s }
