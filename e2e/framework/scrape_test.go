package framework

import (
	"slices"
	"strings"
	"testing"
)

func TestParseText(t *testing.T) {
	text := `# HELP a_total A counter.
# TYPE a_total counter
a_total{x="1",y="q\"uo,te}"} 3
a_total{y="2",x="3"} 1
# TYPE h histogram
h_bucket{le="0.1"} 0
h_bucket{le="+Inf"} 1
h_sum 0.2
h_count 1
# TYPE g gauge
`
	families, err := ParseText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, typ string
		labels    []string
		samples   int
		value     float64
	}{
		{"a_total", "counter", []string{"x", "y"}, 2, 4},
		{"h", "histogram", nil, 4, 1},
		{"g", "gauge", nil, 0, 0},
	}
	for _, tt := range tests {
		f := families[tt.name]
		if f == nil || f.Type != tt.typ || !slices.Equal(f.Labels, tt.labels) || f.Samples != tt.samples || f.Value != tt.value {
			t.Errorf("%s = %+v, want type %s labels %v samples %d value %v", tt.name, f, tt.typ, tt.labels, tt.samples, tt.value)
		}
	}
	if _, err := ParseText(strings.NewReader("# TYPE a counter\na{x=\"1\"} 1\na{y=\"1\"} 1\n")); err == nil {
		t.Error("samples with different label sets parsed without error")
	}
}
