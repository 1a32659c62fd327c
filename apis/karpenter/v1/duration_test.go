package v1

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestNillableDurationJSON(t *testing.T) {
	tests := []struct {
		name     string
		input    string
		want     NillableDuration
		wantJSON string
		wantErr  bool
	}{
		{name: "hours", input: `"720h"`, want: DurationOf(720 * time.Hour), wantJSON: `"720h0m0s"`},
		{name: "compound", input: `"1h30m"`, want: DurationOf(90 * time.Minute), wantJSON: `"1h30m0s"`},
		{name: "zero", input: `"0s"`, want: DurationOf(0), wantJSON: `"0s"`},
		{name: "never", input: `"Never"`, want: NeverDuration(), wantJSON: `"Never"`},
		{name: "null is never", input: `null`, want: NeverDuration(), wantJSON: `"Never"`},
		{name: "days are not Go durations", input: `"30d"`, wantErr: true},
		{name: "lower-case never", input: `"never"`, wantErr: true},
		{name: "number", input: `3600`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got NillableDuration
			err := json.Unmarshal([]byte(tt.input), &got)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Unmarshal(%s) = %v, want an error", tt.input, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unmarshal(%s): %v", tt.input, err)
			}
			if got.String() != tt.want.String() || got.IsNever() != tt.want.IsNever() {
				t.Errorf("Unmarshal(%s) = %v, want %v", tt.input, got, tt.want)
			}
			data, err := json.Marshal(got)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(data) != tt.wantJSON {
				t.Errorf("Marshal = %s, want %s", data, tt.wantJSON)
			}
		})
	}
}

// Controllers read and write these types through unstructured conversion too; the duration
// must survive it in both spellings.
func TestNillableDurationUnstructuredRoundTrip(t *testing.T) {
	for _, d := range []NillableDuration{DurationOf(720 * time.Hour), NeverDuration()} {
		in := &NodeClaim{Spec: NodeClaimSpec{ExpireAfter: d, NodeClassRef: &NodeClassReference{Group: "g", Kind: "K", Name: "n"}}}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
		if err != nil {
			t.Fatalf("ToUnstructured(%v): %v", d, err)
		}
		spec := u["spec"].(map[string]any)
		if spec["expireAfter"] != d.String() {
			t.Errorf("unstructured expireAfter = %v, want %q", spec["expireAfter"], d.String())
		}
		out := &NodeClaim{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, out); err != nil {
			t.Fatalf("FromUnstructured(%v): %v", d, err)
		}
		if out.Spec.ExpireAfter.String() != d.String() {
			t.Errorf("round trip of %v gave %v", d, out.Spec.ExpireAfter)
		}
	}
}
