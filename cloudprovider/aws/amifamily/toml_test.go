package amifamily

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

func TestDecodeTOML(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]any
	}{
		{
			name: "tables, dotted and quoted keys, super-table after sub-table",
			in: `# comment
[settings.kubernetes.eviction-hard]
"memory.available" = "12%"
[settings.kubernetes]
"unknown-setting" = "unknown"   # trailing comment
max-pods = 110
[settings.kubernetes.node-labels]
'field.controlled.by/karpenter' = 'will-be-overridden'
`,
			want: map[string]any{"settings": map[string]any{"kubernetes": map[string]any{
				"eviction-hard":   map[string]any{"memory.available": "12%"},
				"unknown-setting": "unknown",
				"max-pods":        int64(110),
				"node-labels":     map[string]any{"field.controlled.by/karpenter": "will-be-overridden"},
			}}},
		},
		{
			name: "scalars",
			in:   "a = true\nc = -17\nd = 1_000\ne = 0x1F\nh = 3.5\n",
			want: map[string]any{"a": true, "c": int64(-17), "d": int64(1000), "e": int64(31), "h": 3.5},
		},
		{
			name: "arrays, inline tables and arrays of tables",
			in:   "a = [ 'x', \"y\", # comment\n  'z', ]\nc = { enabled = true }\n[[d]]\nk = 1\n",
			want: map[string]any{
				"a": []any{"x", "y", "z"},
				"c": map[string]any{"enabled": true},
				"d": []any{map[string]any{"k": int64(1)}},
			},
		},
		{name: "date", in: "a = 1979-05-27\n", want: map[string]any{"a": toml.LocalDate{Year: 1979, Month: 5, Day: 27}}},
		{name: "empty", in: "\n# only a comment\n", want: map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeTOML([]byte(tt.in))
			if err != nil {
				t.Fatalf("decodeTOML: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decodeTOML =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestDecodeTOMLErrors(t *testing.T) {
	for _, in := range []string{"a = 1\na = 2\n", "[a]\n[a]\n", "a = \"abc\n", "a = [1, 2\n", "a 1\n", "[settings\n"} {
		if _, err := decodeTOML([]byte(in)); err == nil {
			t.Errorf("decodeTOML(%q) succeeded, want an error", in)
		}
	}
}

func TestEncodeTOMLLayout(t *testing.T) {
	doc := map[string]any{"settings": map[string]any{
		"kubernetes": map[string]any{
			"cluster-name":        "cluster",
			"api-server":          "https://cluster",
			"cluster-certificate": "ca-bundle",
			"node-labels":         map[string]any{"karpenter.sh/nodepool": "default"},
			"node-taints":         map[string]any{},
			"eviction-hard":       map[string]any{"memory.available": "12%"},
		},
		"host-containers": map[string]any{"admin": map[string]any{"enabled": true}},
		"oci-defaults":    map[string]any{"capabilities": []any{map[string]any{"name": "x", "on": true}}},
	}}
	order := func(path []string) []string {
		switch strings.Join(path, ".") {
		case "settings":
			return []string{"kubernetes"}
		case "settings.kubernetes":
			return []string{"node-labels", "node-taints"}
		}
		return nil
	}
	got, err := encodeTOML(doc, order)
	if err != nil {
		t.Fatal(err)
	}
	want := `[settings]
[settings.kubernetes]
api-server = 'https://cluster'
cluster-certificate = 'ca-bundle'
cluster-name = 'cluster'

[settings.kubernetes.node-labels]
'karpenter.sh/nodepool' = 'default'

[settings.kubernetes.node-taints]

[settings.kubernetes.eviction-hard]
'memory.available' = '12%'

[settings.host-containers]
[settings.host-containers.admin]
enabled = true

[settings.oci-defaults]
capabilities = [{name = 'x', on = true}]
`
	if string(got) != want {
		t.Errorf("encodeTOML =\n%s\nwant\n%s", got, want)
	}
}

func TestTOMLRoundTrip(t *testing.T) {
	docs := []map[string]any{
		{"a": "it's \"quoted\"\n\tand \\ escaped \x01", "b": int64(-5), "c": 2.5, "d": 1e21, "e": true, "f": []any{"x", int64(1), []any{}}, "g": []any{map[string]any{"k": "v"}}},
		{"settings": map[string]any{"kubernetes": map[string]any{"node-taints": map[string]any{"dedicated": []any{"gpu:NoSchedule", ":NoExecute"}}}}},
		{"": "empty key", "spaced key": "é", "dotted.key": map[string]any{"x y": "z"}},
	}
	for i, doc := range docs {
		data, err := encodeTOML(doc, nil)
		if err != nil {
			t.Fatalf("doc %d: encodeTOML: %v", i, err)
		}
		got, err := decodeTOML(data)
		if err != nil {
			t.Fatalf("doc %d: decodeTOML(%s): %v", i, data, err)
		}
		if !reflect.DeepEqual(got, doc) {
			t.Errorf("doc %d: round trip through\n%s\ngave %#v, want %#v", i, data, got, doc)
		}
	}
}
