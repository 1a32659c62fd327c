package toml

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
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
			in:   "a = true\nb = false\nc = -17\nd = 1_000\ne = 0x1F\nf = 0o17\ng = 0b101\nh = 3.5\ni = 1e3\nj = +inf\n",
			want: map[string]any{"a": true, "b": false, "c": int64(-17), "d": int64(1000), "e": int64(31), "f": int64(15), "g": int64(5), "h": 3.5, "i": 1000.0, "j": math.Inf(1)},
		},
		{
			name: "strings",
			in:   "a = \"tab\\tquote\\\" \\u00e9\"\nb = 'C:\\path'\nc = \"\"\"\nline1\nline2 \\\n   joined\"\"\"\nd = '''\nraw \\n '''\ne = \"\"\"two\"\"\"\"\"\n",
			want: map[string]any{"a": "tab\tquote\" é", "b": `C:\path`, "c": "line1\nline2 joined", "d": "raw \\n ", "e": `two""`},
		},
		{
			name: "arrays and inline tables",
			in:   "a = [ 'x', \"y\", # comment\n  'z', ]\nb = [[1, 2], []]\nc = { enabled = true, source.name = 'img' }\n[t]\nk.l = 1\n",
			want: map[string]any{
				"a": []any{"x", "y", "z"},
				"b": []any{[]any{int64(1), int64(2)}, []any{}},
				"c": map[string]any{"enabled": true, "source": map[string]any{"name": "img"}},
				"t": map[string]any{"k": map[string]any{"l": int64(1)}},
			},
		},
		{name: "crlf line endings", in: "[a]\r\nb = 1\r\n", want: map[string]any{"a": map[string]any{"b": int64(1)}}},
		{name: "empty", in: "\n# only a comment\n", want: map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.in))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct{ name, in, wantErr string }{
		{"duplicate key", "a = 1\na = 2\n", "line 2: key \"a\" defined twice"},
		{"duplicate table", "[a]\n[a]\n", "table [a] defined twice"},
		{"value then table", "a = 1\n[a.b]\n", "already a value"},
		{"array of tables", "[[a]]\n", "arrays of tables are not supported"},
		{"date", "a = 1979-05-27\n", "date-time"},
		{"time", "a = 07:32:00\n", "date-time"},
		{"unterminated string", "a = \"abc\n", "newline in basic string"},
		{"unterminated array", "a = [1, 2\n", "expected , or ]"},
		{"missing equals", "a 1\n", "expected = after key"},
		{"garbage after value", "a = 1 2\n", "unexpected"},
		{"bad escape", `a = "\q"`, "invalid escape"},
		{"leading zero", "a = 012\n", "leading zeros"},
		{"bad underscore", "a = 1__0\n", "misplaced underscore"},
		{"missing value", "a =\n", "unexpected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Decode(%q) error = %v, want containing %q", tt.in, err, tt.wantErr)
			}
		})
	}
}

func TestEncodeLayout(t *testing.T) {
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
	got, err := Encode(doc, order)
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
`
	if string(got) != want {
		t.Errorf("Encode =\n%s\nwant\n%s", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	docs := []map[string]any{
		{"a": "it's \"quoted\"\n\tand \\ escaped \x01", "b": int64(-5), "c": 2.5, "d": 1e21, "e": true, "f": []any{"x", int64(1), []any{}}, "g": []any{map[string]any{"k": "v"}}},
		{"settings": map[string]any{"kubernetes": map[string]any{"node-taints": map[string]any{"dedicated": []any{"gpu:NoSchedule", ":NoExecute"}}}}},
		{"": "empty key", "spaced key": "é"},
	}
	for i, doc := range docs {
		data, err := Encode(doc, nil)
		if err != nil {
			t.Fatalf("doc %d: Encode: %v", i, err)
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatalf("doc %d: Decode(%s): %v", i, data, err)
		}
		if !reflect.DeepEqual(got, doc) {
			t.Errorf("doc %d: round trip through\n%s\ngave %#v, want %#v", i, data, got, doc)
		}
	}
}

func TestEncodeRefusesUnknownTypes(t *testing.T) {
	if _, err := Encode(map[string]any{"a": struct{}{}}, nil); err == nil || !strings.Contains(err.Error(), "a: unsupported value type") {
		t.Fatalf("Encode error = %v, want unsupported value type", err)
	}
}
