package drift

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

func TestStaticDrift(t *testing.T) {
	annotations := func(hash, version string) map[string]string {
		out := map[string]string{}
		if hash != "" {
			out[karpv1.NodePoolHashAnnotationKey] = hash
		}
		if version != "" {
			out[karpv1.NodePoolHashVersionAnnotationKey] = version
		}
		return out
	}
	tests := []struct {
		name        string
		pool, claim map[string]string
		want        bool
	}{
		{name: "same hash", pool: annotations("1", "v1"), claim: annotations("1", "v1")},
		{name: "different hash", pool: annotations("2", "v1"), claim: annotations("1", "v1"), want: true},
		{name: "different hash of another version", pool: annotations("2", "v2"), claim: annotations("1", "v1")},
		{name: "nodepool not hashed yet", pool: annotations("", ""), claim: annotations("1", "v1")},
		{name: "nodeclaim without a hash", pool: annotations("2", "v1"), claim: annotations("", "v1")},
		{name: "nodeclaim without a version", pool: annotations("2", "v1"), claim: annotations("1", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: tt.pool}}
			nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: tt.claim}}
			f, got := staticDrift(np, nc)
			if got != tt.want || (got && f.reason != NodePoolDrifted) {
				t.Errorf("staticDrift = %+v, %v; want drifted %v", f, got, tt.want)
			}
		})
	}
}
