package integration

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestCapacityBufferVersions checks that the one CRD serves v1alpha1 and v1beta1 and that an
// object written in either version reads back in the other with the same spec, defaults
// included, and that both versions validate alike.
func TestCapacityBufferVersions(t *testing.T) {
	const spec = "scalableRef:\n  apiGroup: apps\n  kind: Deployment\n  name: web-app\npercentage: 20\nreplicas: 5\nlimits:\n  cpu: \"20\"\n  memory: 40Gi\n"
	for _, tc := range []struct{ write, read string }{
		{write: "v1beta1", read: "v1alpha1"},
		{write: "v1alpha1", read: "v1beta1"},
	} {
		t.Run(tc.write+" reads back as "+tc.read, func(t *testing.T) {
			name := "versions-" + tc.write
			manifest := strings.Replace(capacityBuffer(name, spec), "autoscaling.x-k8s.io/v1alpha1", "autoscaling.x-k8s.io/"+tc.write, 1)
			written := mustApply(t, manifest)
			if got := written.GetAPIVersion(); got != "autoscaling.x-k8s.io/"+tc.write {
				t.Fatalf("created object has apiVersion %q", got)
			}
			gvr := schema.GroupVersionResource{Group: "autoscaling.x-k8s.io", Version: tc.read, Resource: "capacitybuffers"}
			read, err := dynamicClient.Resource(gvr).Namespace("default").Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get %s as %s: %v", name, tc.read, err)
			}
			if got := read.GetAPIVersion(); got != "autoscaling.x-k8s.io/"+tc.read {
				t.Errorf("read back with apiVersion %q, want %s", got, tc.read)
			}
			expectStoredString(t, read, "buffer.x-k8s.io/active-capacity", "spec", "provisioningStrategy")
			expectStoredString(t, read, "Deployment", "spec", "scalableRef", "kind")
			expectStoredString(t, read, "apps", "spec", "scalableRef", "apiGroup")
			expectStoredInt(t, read, 20, "spec", "percentage")
			expectStoredInt(t, read, 5, "spec", "replicas")
			expectStoredString(t, read, "40Gi", "spec", "limits", "memory")
			wantSpec, _, _ := unstructured.NestedMap(written.Object, "spec")
			gotSpec, _, _ := unstructured.NestedMap(read.Object, "spec")
			if !reflect.DeepEqual(wantSpec, gotSpec) {
				t.Errorf("spec differs between versions:\n%s: %v\n%s: %v", tc.write, wantSpec, tc.read, gotSpec)
			}
		})
	}

	t.Run("v1beta1 validates like v1alpha1", func(t *testing.T) {
		beta := func(m string) string {
			return strings.Replace(m, "autoscaling.x-k8s.io/v1alpha1", "autoscaling.x-k8s.io/v1beta1", 1)
		}
		expectRejections(t, []rejection{
			{name: "both references", wantFields: []string{"spec", "exactly one of podTemplateRef or scalableRef"},
				manifest: beta(capacityBuffer("beta-both-refs", cbScalableRef+"podTemplateRef:\n  name: worker-template\nreplicas: 1\n"))},
			{name: "negative replicas", wantFields: []string{"spec.replicas"},
				manifest: beta(capacityBuffer("beta-replicas", cbScalableRef+"replicas: -1\n"))},
		})
	})
}
