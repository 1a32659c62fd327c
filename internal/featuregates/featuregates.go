// Package featuregates holds Karpenter's feature gates with Karpenter's names and defaults,
// parsed from the --feature-gates flag or the FEATURE_GATES environment variable
// ("NodeRepair=true,SpotToSpotConsolidation=true"). Binaries parse once at start-up and hand
// the result to the controllers that need it; an unknown gate or a value that is not a
// boolean fails start-up with a message naming the setting, and so would a gate value joinery
// cannot act on (none today).
package featuregates

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Gate names, Karpenter's spelling.
const (
	NodeRepair              = "NodeRepair"
	ReservedCapacity        = "ReservedCapacity"
	SpotToSpotConsolidation = "SpotToSpotConsolidation"
	NodeOverlay             = "NodeOverlay"
	StaticCapacity          = "StaticCapacity"
	CapacityBuffer          = "CapacityBuffer"
)

// EnvVar is the environment variable read when the flag is not given.
const EnvVar = "FEATURE_GATES"

// FlagName is the command-line flag.
const FlagName = "feature-gates"

// defaults are Karpenter's defaults for each gate.
var defaults = map[string]bool{
	NodeRepair:              false,
	ReservedCapacity:        true,
	SpotToSpotConsolidation: false,
	NodeOverlay:             false,
	StaticCapacity:          false,
	CapacityBuffer:          false,
}

// refused are gate values joinery cannot honour: start-up fails with the reason rather than
// accept a setting that would change nothing.
var refused = map[string]map[bool]string{}

// Gates is the set of enabled and disabled gates. The zero value has every gate at its default.
type Gates struct {
	overrides map[string]bool
}

// Default returns the gates at Karpenter's defaults.
func Default() Gates { return Gates{} }

// Enabled reports whether gate is on. An unknown name panics: gate names are constants.
func (g Gates) Enabled(gate string) bool {
	def, ok := defaults[gate]
	if !ok {
		panic(fmt.Sprintf("featuregates: unknown gate %q", gate))
	}
	if v, ok := g.overrides[gate]; ok {
		return v
	}
	return def
}

// Known returns the known gate names, sorted.
func Known() []string {
	return slices.Sorted(maps.Keys(defaults))
}

// Parse reads "Name=bool,Name=bool". Spaces around items are ignored; an empty string keeps
// every default. source names the setting in errors (the flag or the environment variable).
func Parse(source, value string) (Gates, error) {
	g := Gates{overrides: map[string]bool{}}
	for _, item := range strings.Split(value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, raw, ok := strings.Cut(item, "=")
		name, raw = strings.TrimSpace(name), strings.TrimSpace(raw)
		if !ok || name == "" {
			return Gates{}, fmt.Errorf("%s: %q is not Name=true|false", source, item)
		}
		if _, known := defaults[name]; !known {
			return Gates{}, fmt.Errorf("%s: unknown feature gate %q (known: %s)", source, name, strings.Join(Known(), ", "))
		}
		on, err := strconv.ParseBool(raw)
		if err != nil {
			return Gates{}, fmt.Errorf("%s: feature gate %s has value %q, want true or false", source, name, raw)
		}
		if why, ok := refused[name][on]; ok {
			return Gates{}, fmt.Errorf("%s: feature gate %s=%t is refused: %s", source, name, on, why)
		}
		g.overrides[name] = on
	}
	return g, nil
}

// String lists every gate with its value, sorted, in the flag's syntax.
func (g Gates) String() string {
	parts := make([]string, 0, len(defaults))
	for _, name := range Known() {
		parts = append(parts, fmt.Sprintf("%s=%t", name, g.Enabled(name)))
	}
	return strings.Join(parts, ",")
}

// Value is a flag.Value (and a pflag.Value) over Gates, so a binary binds --feature-gates
// directly. Set reports parse errors at flag parsing, naming the flag.
type Value struct {
	Gates *Gates
	raw   string
}

// NewValue is how every joinery binary reads the gates: env is the environment variable's
// value, which the returned --feature-gates flag replaces whole when given (joinery-scheduler,
// whose --feature-gates is kube-scheduler's own, never binds it). An invalid env value is an
// error naming FEATURE_GATES.
func NewValue(env string) (*Value, error) {
	g, err := FromEnv(env)
	if err != nil {
		return nil, err
	}
	return &Value{Gates: &g}, nil
}

// Get returns the gates read so far: the flag's when it was set, else the environment's.
func (v *Value) Get() Gates { return *v.Gates }

// Usage is the --feature-gates flag's help text.
func Usage() string {
	return "comma-separated Name=true|false feature gates, Karpenter's names: " + strings.Join(Known(), ", ") +
		" (env " + EnvVar + "; the flag wins)"
}

// Type implements pflag.Value, for the joinery CLI's cobra flags.
func (v *Value) Type() string { return "gates" }

// String implements flag.Value.
func (v *Value) String() string { return v.raw }

// Set implements flag.Value.
func (v *Value) Set(s string) error {
	g, err := Parse("--"+FlagName, s)
	if err != nil {
		return err
	}
	v.raw = s
	*v.Gates = g
	return nil
}

// FromEnv parses the environment variable's value (the caller reads it, so tests need no
// process environment); an empty value keeps the defaults.
func FromEnv(value string) (Gates, error) {
	return Parse(EnvVar, value)
}
