package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// seedFixtureDir holds every NodePool, EC2NodeClass, NodeOverlay and CapacityBuffer
// example of the seed documents, one per file, as literal as the API allows. Each
// file's header comments say where it comes from and what had to be substituted.
const seedFixtureDir = "testdata/seeds"

// seedKinds maps each kind a fixture may hold to its apiVersion and whether it is
// namespaced; a fixture of any other kind is a mistake.
var seedKinds = map[string]struct {
	apiVersion string
	namespaced bool
}{
	"NodePool":       {apiVersion: "karpenter.sh/v1"},
	"EC2NodeClass":   {apiVersion: "karpenter.k8s.aws/v1"},
	"NodeOverlay":    {apiVersion: "karpenter.sh/v1alpha1"},
	"CapacityBuffer": {apiVersion: "autoscaling.x-k8s.io/v1alpha1", namespaced: true},
}

// seedFileName is <seed prefix>-<line>-<kind>-<name>.yaml.
var seedFileName = regexp.MustCompile(`^(\d{3})-(\d{4})-([a-z0-9]+)-([a-z0-9.-]+)\.yaml$`)

// seedFixture is one parsed fixture file.
type seedFixture struct {
	file     string
	manifest string
	object   *unstructured.Unstructured
	// rejectedFields, from "# expect: rejected <field>...", are the fields the API
	// server must name when it refuses the fixture (docs fragments and examples that
	// document mutually exclusive alternatives side by side).
	rejectedFields []string
	// unknownFields, from "# expect: unknown <path>...", are fields that are not part
	// of the API (e.g. an RFC's future field): the object is accepted but they must
	// not be stored.
	unknownFields []string
}

func loadSeedFixtures() ([]seedFixture, error) {
	entries, err := os.ReadDir(seedFixtureDir)
	if err != nil {
		return nil, fmt.Errorf("reading seed fixtures: %w", err)
	}
	var fixtures []seedFixture
	for _, entry := range entries {
		if entry.IsDir() || filepath.Ext(entry.Name()) != ".yaml" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(seedFixtureDir, entry.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading seed fixture %s: %w", entry.Name(), err)
		}
		fixture, err := parseSeedFixture(entry.Name(), data)
		if err != nil {
			return nil, err
		}
		fixtures = append(fixtures, fixture)
	}
	if len(fixtures) == 0 {
		return nil, fmt.Errorf("no seed fixtures in %s", seedFixtureDir)
	}
	return fixtures, nil
}

func parseSeedFixture(file string, data []byte) (seedFixture, error) {
	fixture := seedFixture{file: file, manifest: string(data)}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "#") {
			break // directives live in the leading comment block only
		}
		directive, ok := strings.CutPrefix(line, "# expect: ")
		if !ok {
			continue
		}
		verb, rest, _ := strings.Cut(directive, " ")
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return seedFixture{}, fmt.Errorf("%s: %q names no field", file, line)
		}
		switch verb {
		case "rejected":
			fixture.rejectedFields = append(fixture.rejectedFields, fields...)
		case "unknown":
			fixture.unknownFields = append(fixture.unknownFields, fields...)
		default:
			return seedFixture{}, fmt.Errorf("%s: unknown directive %q", file, line)
		}
	}
	if len(fixture.rejectedFields) > 0 && len(fixture.unknownFields) > 0 {
		return seedFixture{}, fmt.Errorf("%s: a fixture is either rejected or accepted, not both", file)
	}

	jsonData, err := yaml.YAMLToJSON(data)
	if err != nil {
		return seedFixture{}, fmt.Errorf("%s: parsing YAML: %w", file, err)
	}
	object := &unstructured.Unstructured{}
	if err := object.UnmarshalJSON(jsonData); err != nil {
		return seedFixture{}, fmt.Errorf("%s: decoding object: %w", file, err)
	}
	fixture.object = object
	return fixture, nil
}

// TestSeedFixturesParse checks the fixtures themselves, without an API server, so a
// broken fixture fails here instead of as a confusing API error.
func TestSeedFixturesParse(t *testing.T) {
	fixtures, err := loadSeedFixtures()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{} // kind/namespace/name -> file
	for _, f := range fixtures {
		t.Run(f.file, func(t *testing.T) {
			obj := f.object
			kind, ok := seedKinds[obj.GetKind()]
			if !ok {
				t.Fatalf("kind %q is not one of the seed kinds", obj.GetKind())
			}
			if obj.GetAPIVersion() != kind.apiVersion {
				t.Errorf("apiVersion %q, want %q", obj.GetAPIVersion(), kind.apiVersion)
			}
			if obj.GetName() == "" {
				t.Errorf("metadata.name is empty")
			}
			if _, found := obj.Object["spec"]; !found {
				t.Errorf("no spec")
			}
			if _, found := obj.Object["status"]; found {
				t.Errorf("status is not settable on create; drop it and say so in the header")
			}

			m := seedFileName.FindStringSubmatch(f.file)
			if m == nil {
				t.Fatalf("file name does not follow <seed>-<line>-<kind>-<name>.yaml")
			}
			if m[3] != strings.ToLower(obj.GetKind()) || m[4] != obj.GetName() {
				t.Errorf("file name says %s %q, object is %s %q", m[3], m[4], obj.GetKind(), obj.GetName())
			}
			if !strings.Contains(f.manifest, "# Seed: "+m[1]+"_") {
				t.Errorf("header does not cite its seed file %s_*.txt", m[1])
			}
			line := strings.TrimLeft(m[2], "0")
			if !regexp.MustCompile(`\bline ` + line + `\b`).MatchString(f.manifest) {
				t.Errorf("header does not cite seed line %s", line)
			}

			key := obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName()
			if other, dup := names[key]; dup {
				t.Errorf("%s is also created by %s; suffix the name and note it", key, other)
			}
			names[key] = f.file

			for _, path := range f.unknownFields {
				if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(path, ".")...); !found {
					t.Errorf("expect: unknown %s, but the fixture has no such field", path)
				}
			}
		})
	}
}

// TestSeedExamples creates every seed example on the API server: the API must accept a
// Karpenter user's manifest unchanged and keep every field of it, or, for fixtures
// marked "# expect: rejected", refuse it naming the offending fields.
func TestSeedExamples(t *testing.T) {
	fixtures, err := loadSeedFixtures()
	if err != nil {
		t.Fatal(err)
	}
	// Namespaces are created once for all subtests: without a namespace controller a
	// deleted namespace stays Terminating, which would refuse the next fixture in it.
	for _, ns := range seedNamespaces(fixtures) {
		ensureNamespace(t, ns)
	}

	for _, f := range fixtures {
		t.Run(f.file, func(t *testing.T) {
			if len(f.rejectedFields) > 0 {
				expectRejections(t, []rejection{{
					name:       f.file,
					manifest:   f.manifest,
					wantFields: f.rejectedFields,
				}})
				return
			}

			stored := mustApply(t, f.manifest)

			want := f.object.DeepCopy()
			for _, path := range f.unknownFields {
				unstructured.RemoveNestedField(want.Object, strings.Split(path, ".")...)
				if _, found, _ := unstructured.NestedFieldNoCopy(stored.Object, strings.Split(path, ".")...); found {
					t.Errorf("stored object kept %s, which is not part of the API", path)
				}
			}
			for _, diff := range missingFromStored(want.Object["spec"], stored.Object["spec"], "spec") {
				t.Error(diff)
			}
		})
	}
}

// seedNamespaces lists, sorted, the namespaces that namespaced fixtures live in.
func seedNamespaces(fixtures []seedFixture) []string {
	var namespaces []string
	for _, f := range fixtures {
		if !seedKinds[f.object.GetKind()].namespaced {
			continue
		}
		if ns := namespaceOf(f.object); !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
	}
	sort.Strings(namespaces)
	return namespaces
}

func namespaceOf(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns
	}
	return "default"
}

// ensureNamespace creates ns for the rest of the test; "default" always exists.
func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	if ns == "default" {
		return
	}
	mustApply(t, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns))
}

// missingFromStored reports every value of want that got does not hold. got may have
// more keys (defaults); a null in want matches anything because the API server drops
// nulls of non-nullable fields and may default them.
func missingFromStored(want, got any, path string) []string {
	if want == nil {
		return nil
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: stored %s, want an object", path, describe(got))}
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var diffs []string
		for _, k := range keys {
			if w[k] == nil {
				continue
			}
			if _, found := g[k]; !found {
				diffs = append(diffs, fmt.Sprintf("%s.%s: missing from the stored object", path, k))
				continue
			}
			diffs = append(diffs, missingFromStored(w[k], g[k], path+"."+k)...)
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: stored %s, want %d items", path, describe(got), len(w))}
		}
		var diffs []string
		for i := range w {
			diffs = append(diffs, missingFromStored(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return diffs
	default:
		if !sameScalar(want, got) {
			return []string{fmt.Sprintf("%s: stored %s, want %s", path, describe(got), describe(want))}
		}
		return nil
	}
}

// sameScalar compares leaf values, accepting the spellings the API may normalise to:
// numbers of any Go type, quantities ("1000" vs 1000, "1Gi" vs "1024Mi") and
// durations ("1m" vs "1m0s").
func sameScalar(want, got any) bool {
	if reflect.DeepEqual(want, got) {
		return true
	}
	if wn, ok := asFloat(want); ok {
		if gn, ok := asFloat(got); ok && wn == gn {
			return true
		}
	}
	if wq, ok := asQuantity(want); ok {
		if gq, ok := asQuantity(got); ok && wq.Cmp(gq) == 0 {
			return true
		}
	}
	ws, wok := want.(string)
	gs, gok := got.(string)
	if wok && gok {
		wd, werr := time.ParseDuration(ws)
		gd, gerr := time.ParseDuration(gs)
		return werr == nil && gerr == nil && wd == gd
	}
	return false
}

func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func asQuantity(v any) (resource.Quantity, bool) {
	var text string
	switch x := v.(type) {
	case string:
		text = x
	case int64, int32, int, float64:
		text = fmt.Sprint(x)
	default:
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(text)
	return q, err == nil
}

func describe(v any) string {
	if v == nil {
		return "nothing"
	}
	return fmt.Sprintf("%#v", v)
}

func TestMissingFromStored(t *testing.T) {
	cases := []struct {
		name      string
		want, got any
		wantDiffs []string
	}{
		{name: "equal scalars", want: "a", got: "a"},
		{name: "integer read back as int64", want: float64(20), got: int64(20)},
		{name: "quantity spelled differently", want: "1Gi", got: "1024Mi"},
		{name: "int-or-string quantity", want: int64(1000), got: "1000"},
		{name: "duration normalised", want: "1m", got: "1m0s"},
		{name: "defaults add keys", want: map[string]any{"a": "x"}, got: map[string]any{"a": "x", "b": "y"}},
		{name: "null matches a default", want: map[string]any{"budgets": nil}, got: map[string]any{"budgets": []any{"10%"}}},
		{
			name:      "different value",
			want:      map[string]any{"weight": int64(10)},
			got:       map[string]any{"weight": int64(50)},
			wantDiffs: []string{"spec.weight: stored 50, want 10"},
		},
		{
			name:      "key dropped",
			want:      map[string]any{"kubelet": map[string]any{"maxPods": int64(42)}},
			got:       map[string]any{"kubelet": map[string]any{}},
			wantDiffs: []string{"spec.kubelet.maxPods: missing from the stored object"},
		},
		{
			name:      "list shortened",
			want:      map[string]any{"taints": []any{"a", "b"}},
			got:       map[string]any{"taints": []any{"a"}},
			wantDiffs: []string{`spec.taints: stored []interface {}{"a"}, want 2 items`},
		},
		{
			name:      "list item changed",
			want:      []any{map[string]any{"key": "a"}},
			got:       []any{map[string]any{"key": "b"}},
			wantDiffs: []string{`spec[0].key: stored "b", want "a"`},
		},
		{
			name:      "object replaced by scalar",
			want:      map[string]any{"a": "x"},
			got:       "x",
			wantDiffs: []string{`spec: stored "x", want an object`},
		},
		{name: "string is not a bool", want: "true", got: true, wantDiffs: []string{`spec: stored true, want "true"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			diffs := missingFromStored(tc.want, tc.got, "spec")
			if !slices.Equal(diffs, tc.wantDiffs) {
				t.Errorf("diffs = %q, want %q", diffs, tc.wantDiffs)
			}
		})
	}
}
