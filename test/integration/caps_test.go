package integration

import (
	"fmt"
	"strings"
	"testing"
)

// inValues is an In requirement on a custom key with n distinct values, as YAML.
func inValues(n int) string {
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("v%d", i)
	}
	return "[{key: example.com/many, operator: In, values: [" + strings.Join(values, ", ") + "]}]"
}

// extendedResources is n distinct extended resources of 1 each, as a YAML map.
func extendedResources(n int) string {
	resources := make([]string, n)
	for i := range resources {
		resources[i] = fmt.Sprintf("example.com/device-%d: \"1\"", i)
	}
	return "{" + strings.Join(resources, ", ") + "}"
}

// TestSchemaCaps (issue 26, item 3): user-controlled counts that each plan turns into an
// allocation are capped by the schema. Each cap is accepted as written and refused one above.
func TestSchemaCaps(t *testing.T) {
	bufferAt := func(version, name string, replicas int) string {
		m := capacityBuffer(name, fmt.Sprintf("podTemplateRef:\n  name: worker-template\nreplicas: %d\n", replicas))
		return strings.Replace(m, "autoscaling.x-k8s.io/v1alpha1", "autoscaling.x-k8s.io/"+version, 1)
	}
	const npReqs = "spec.template.spec.requirements"
	accepted := []struct{ name, manifest string }{
		{"CapacityBuffer v1alpha1 replicas 1000", bufferAt("v1alpha1", "cap-replicas-a", 1000)},
		{"CapacityBuffer v1beta1 replicas 1000", bufferAt("v1beta1", "cap-replicas-b", 1000)},
		{"NodePool requirement of 1000 values", nodePoolManifest("cap-np-values", karpSet(npReqs, inValues(1000)))},
		{"NodeClaim requirement of 1000 values", nodeClaimManifest("cap-nc-values", karpSet("spec.requirements", inValues(1000)))},
		{"NodeOverlay requirement of 1000 values", nodeOverlayManifest("cap-no-values", karpSet("spec.requirements", inValues(1000)))},
		{"NodeOverlay capacity of 100 resources", nodeOverlayManifest("cap-no-capacity", karpSet("spec.capacity", extendedResources(100)))},
	}
	for _, tc := range accepted {
		t.Run("accepted/"+tc.name, func(t *testing.T) { mustApply(t, tc.manifest) })
	}
	t.Run("refused", func(t *testing.T) {
		expectRejections(t, []rejection{
			{name: "CapacityBuffer v1alpha1 replicas 1001", manifest: bufferAt("v1alpha1", "cap-over-replicas-a", 1001), wantFields: []string{"spec.replicas", "1000"}},
			{name: "CapacityBuffer v1beta1 replicas 1001", manifest: bufferAt("v1beta1", "cap-over-replicas-b", 1001), wantFields: []string{"spec.replicas", "1000"}},
			{name: "NodePool requirement of 1001 values", manifest: nodePoolManifest("cap-over-np-values", karpSet(npReqs, inValues(1001))), wantFields: []string{npReqs + "[0].values", "1000"}},
			{name: "NodeClaim requirement of 1001 values", manifest: nodeClaimManifest("cap-over-nc-values", karpSet("spec.requirements", inValues(1001))), wantFields: []string{"spec.requirements[0].values", "1000"}},
			{name: "NodeOverlay requirement of 1001 values", manifest: nodeOverlayManifest("cap-over-no-values", karpSet("spec.requirements", inValues(1001))), wantFields: []string{"spec.requirements[0].values", "1000"}},
			{name: "NodeOverlay capacity of 101 resources", manifest: nodeOverlayManifest("cap-over-no-capacity", karpSet("spec.capacity", extendedResources(101))), wantFields: []string{"spec.capacity", "100"}},
		})
	})
}
