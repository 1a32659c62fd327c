package integration

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// capacityBuffer renders a CapacityBuffer manifest in namespace default whose spec is the
// given YAML.
func capacityBuffer(name, spec string) string {
	return fmt.Sprintf("apiVersion: autoscaling.x-k8s.io/v1alpha1\nkind: CapacityBuffer\nmetadata:\n  name: %s\n  namespace: default\nspec:\n%s", name, indentLines(spec, "  "))
}

const cbScalableRef = `scalableRef:
  apiGroup: apps
  kind: Deployment
  name: web-app
`

func TestCapacityBufferValidation(t *testing.T) {
	cases := []rejection{
		{name: "both references", wantFields: []string{"spec", "exactly one of podTemplateRef or scalableRef"},
			manifest: capacityBuffer("bad-both-refs", cbScalableRef+"podTemplateRef:\n  name: worker-template\nreplicas: 1\n")},
		{name: "no reference", wantFields: []string{"spec", "exactly one of podTemplateRef or scalableRef"},
			manifest: capacityBuffer("bad-no-ref", "replicas: 1\n")},
		{name: "negative replicas", wantFields: []string{"spec.replicas"},
			manifest: capacityBuffer("bad-replicas", cbScalableRef+"replicas: -1\n")},
		{name: "negative percentage", wantFields: []string{"spec.percentage"},
			manifest: capacityBuffer("bad-percentage", cbScalableRef+"percentage: -20\n")},
		{name: "percentage with a pod template", wantFields: []string{"spec.percentage", "only applicable when scalableRef is set"},
			manifest: capacityBuffer("bad-percentage-template", "podTemplateRef:\n  name: worker-template\npercentage: 20\nreplicas: 2\n")},
		{name: "pod template without a size", wantFields: []string{"spec.podTemplateRef", "replicas or limits must also be set"},
			manifest: capacityBuffer("bad-template-unbounded", "podTemplateRef:\n  name: worker-template\n")},
		{name: "scalableRef without kind", wantFields: []string{"spec.scalableRef.kind", "Required"},
			manifest: capacityBuffer("bad-scalable-kind", "scalableRef:\n  apiGroup: apps\n  name: web-app\nreplicas: 1\n")},
		{name: "scalableRef with empty name", wantFields: []string{"spec.scalableRef.name"},
			manifest: capacityBuffer("bad-scalable-name", "scalableRef:\n  kind: Deployment\n  name: \"\"\nreplicas: 1\n")},
		{name: "podTemplateRef with empty name", wantFields: []string{"spec.podTemplateRef.name"},
			manifest: capacityBuffer("bad-template-name", "podTemplateRef:\n  name: \"\"\nreplicas: 1\n")},
		{name: "limits that are not quantities", wantFields: []string{"spec.limits.cpu"},
			manifest: capacityBuffer("bad-limits", "podTemplateRef:\n  name: worker-template\nlimits:\n  cpu: lots\n")},
		{name: "empty provisioning strategy", wantFields: []string{"spec.provisioningStrategy"},
			manifest: capacityBuffer("bad-strategy", cbScalableRef+"provisioningStrategy: \"\"\nreplicas: 1\n")},
		{name: "no spec", wantFields: []string{"spec", "Required"},
			manifest: "apiVersion: autoscaling.x-k8s.io/v1alpha1\nkind: CapacityBuffer\nmetadata:\n  name: bad-no-spec\n  namespace: default\n"},
	}
	expectRejections(t, cases)
}

func TestCapacityBufferDefaults(t *testing.T) {
	t.Run("provisioningStrategy defaults to active capacity", func(t *testing.T) {
		obj := mustApply(t, capacityBuffer("defaults-strategy", cbScalableRef+"replicas: 5\n"))
		expectStoredString(t, obj, "buffer.x-k8s.io/active-capacity", "spec", "provisioningStrategy")
		expectStoredInt(t, obj, 5, "spec", "replicas")
	})

	accepted := []struct {
		name     string
		manifest string
		check    func(t *testing.T, obj *unstructured.Unstructured)
	}{
		{name: "explicit strategy is kept",
			manifest: capacityBuffer("edge-explicit-strategy", "provisioningStrategy: example.com/other-strategy\n"+cbScalableRef+"replicas: 1\n"),
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				expectStoredString(t, obj, "example.com/other-strategy", "spec", "provisioningStrategy")
			}},
		{name: "percentage capped by replicas",
			manifest: capacityBuffer("edge-percentage-replicas", cbScalableRef+"percentage: 20\nreplicas: 10\n")},
		{name: "scalableRef sized only by limits",
			manifest: capacityBuffer("edge-scalable-limits", cbScalableRef+"limits:\n  cpu: \"20\"\n")},
		{name: "pod template sized by limits",
			manifest: capacityBuffer("edge-template-limits", "podTemplateRef:\n  name: worker-template\nlimits:\n  cpu: \"20\"\n  memory: 40Gi\n"),
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				expectStoredString(t, obj, "40Gi", "spec", "limits", "memory")
			}},
		{name: "zero replicas",
			manifest: capacityBuffer("edge-zero-replicas", "podTemplateRef:\n  name: worker-template\nreplicas: 0\n"),
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				expectStoredInt(t, obj, 0, "spec", "replicas")
			}},
		{name: "core group scalable",
			manifest: capacityBuffer("edge-core-group", "scalableRef:\n  kind: ReplicationController\n  name: legacy\nreplicas: 1\n")},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			obj := mustApply(t, tc.manifest)
			if tc.check != nil {
				tc.check(t, obj)
			}
		})
	}
}
