package integration

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Base documents of the karpenter.sh kinds: each is the smallest object the API accepts, so a
// case that changes one field is refused for that field alone.
const (
	karpNodePoolBase = `apiVersion: karpenter.sh/v1
kind: NodePool
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
`
	karpNodeClaimBase = `apiVersion: karpenter.sh/v1
kind: NodeClaim
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements: []
`
	karpNodeOverlayBase = `apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
spec:
  requirements: []
`
)

// karpEdit sets the field at a dotted path (no list indexes) to a YAML value; a value of ""
// removes the field.
type karpEdit struct {
	path  string
	value string
}

func karpSet(path, value string) karpEdit { return karpEdit{path: path, value: value} }

func nodePoolManifest(name string, edits ...karpEdit) string {
	return karpManifest(karpNodePoolBase, name, edits)
}

func nodeClaimManifest(name string, edits ...karpEdit) string {
	return karpManifest(karpNodeClaimBase, name, edits)
}

func nodeOverlayManifest(name string, edits ...karpEdit) string {
	return karpManifest(karpNodeOverlayBase, name, edits)
}

// karpManifest applies edits to a base document. It panics on malformed YAML in the test's
// own literals, which is a bug in the table rather than a test outcome.
func karpManifest(base, name string, edits []karpEdit) string {
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(base), &obj); err != nil {
		panic(fmt.Sprintf("base document: %v", err))
	}
	edits = append([]karpEdit{karpSet("metadata.name", name)}, edits...)
	for _, e := range edits {
		fields := strings.Split(e.path, ".")
		if e.value == "" {
			unstructured.RemoveNestedField(obj, fields...)
			continue
		}
		var value any
		if err := yaml.Unmarshal([]byte(e.value), &value); err != nil {
			panic(fmt.Sprintf("value of %s: %v", e.path, err))
		}
		if err := unstructured.SetNestedField(obj, value, fields...); err != nil {
			panic(fmt.Sprintf("setting %s: %v", e.path, err))
		}
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("encoding manifest: %v", err))
	}
	return string(out)
}

// karpRequirements returns n distinct Exists requirements on custom keys, as a YAML list.
func karpRequirements(n int) string {
	reqs := make([]string, n)
	for i := range reqs {
		reqs[i] = fmt.Sprintf("{key: example.com/key-%d, operator: Exists}", i)
	}
	return "[" + strings.Join(reqs, ", ") + "]"
}

// karpLabels returns n distinct custom labels, as a YAML map.
func karpLabels(n int) string {
	labels := make([]string, n)
	for i := range labels {
		labels[i] = fmt.Sprintf("example.com/label-%d: v", i)
	}
	return "{" + strings.Join(labels, ", ") + "}"
}

func TestKarpenterValidation(t *testing.T) {
	const (
		npReqs   = "spec.template.spec.requirements"
		npReq0   = "spec.template.spec.requirements[0]"
		npLabels = "spec.template.metadata.labels"
		budget0  = "spec.disruption.budgets[0]"
	)
	req := func(yaml string) karpEdit { return karpSet(npReqs, "["+yaml+"]") }

	cases := []rejection{
		// NodePool requirements.
		{name: "nodepool more than 100 requirements", manifest: nodePoolManifest("kv-np-101-reqs", karpSet(npReqs, karpRequirements(101))), wantFields: []string{npReqs}},
		{name: "nodepool requirements plus labels above 100", manifest: nodePoolManifest("kv-np-reqs-labels",
			karpSet(npReqs, karpRequirements(60)), karpSet("spec.template.metadata.labels", karpLabels(41))), wantFields: []string{npReqs}},
		{name: "unknown operator", manifest: nodePoolManifest("kv-np-op", req("{key: example.com/a, operator: Equals, values: [x]}")), wantFields: []string{npReq0 + ".operator"}},
		{name: "In without values", manifest: nodePoolManifest("kv-np-in-empty", req("{key: example.com/a, operator: In}")), wantFields: []string{npReq0 + ".values"}},
		{name: "Gt with two values", manifest: nodePoolManifest("kv-np-gt-two", req(`{key: karpenter.k8s.aws/instance-memory, operator: Gt, values: ["m5.large", "m5.2xlarge"]}`)), wantFields: []string{npReq0 + ".values"}},
		{name: "Lt with a non-integer", manifest: nodePoolManifest("kv-np-lt-word", req(`{key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["eight"]}`)), wantFields: []string{npReq0 + ".values"}},
		{name: "Gte with a negative integer", manifest: nodePoolManifest("kv-np-gte-neg", req(`{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["-1"]}`)), wantFields: []string{npReq0 + ".values"}},
		{name: "Lte without values", manifest: nodePoolManifest("kv-np-lte-none", req(`{key: karpenter.k8s.aws/instance-cpu, operator: Lte}`)), wantFields: []string{npReq0 + ".values"}},
		{name: "Exists with values", manifest: nodePoolManifest("kv-np-exists-vals", req(`{key: example.com/a, operator: Exists, values: ["x"]}`)), wantFields: []string{npReq0 + ".values"}},
		{name: "minValues zero", manifest: nodePoolManifest("kv-np-minvalues-0", req(`{key: karpenter.k8s.aws/instance-family, operator: Exists, minValues: 0}`)), wantFields: []string{npReq0 + ".minValues"}},
		{name: "minValues above 50", manifest: nodePoolManifest("kv-np-minvalues-51", req(`{key: karpenter.k8s.aws/instance-family, operator: Exists, minValues: 51}`)), wantFields: []string{npReq0 + ".minValues"}},
		{name: "minValues above the number of In values", manifest: nodePoolManifest("kv-np-minvalues-in", req(`{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m], minValues: 3}`)), wantFields: []string{npReq0 + ".minValues"}},
		{name: "requirement key kubernetes.io/hostname", manifest: nodePoolManifest("kv-np-key-hostname", req(`{key: kubernetes.io/hostname, operator: Exists}`)), wantFields: []string{npReq0 + ".key"}},
		{name: "requirement key karpenter.sh/nodepool", manifest: nodePoolManifest("kv-np-key-nodepool", req(`{key: karpenter.sh/nodepool, operator: In, values: [a]}`)), wantFields: []string{npReq0 + ".key"}},
		{name: "requirement key in karpenter.sh", manifest: nodePoolManifest("kv-np-key-karpenter", req(`{key: karpenter.sh/custom, operator: Exists}`)), wantFields: []string{npReq0 + ".key"}},
		{name: "requirement key in a kubernetes.io subdomain", manifest: nodePoolManifest("kv-np-key-k8s-sub", req(`{key: node-role.kubernetes.io/worker, operator: Exists}`)), wantFields: []string{npReq0 + ".key"}},
		{name: "requirement key in k8s.io", manifest: nodePoolManifest("kv-np-key-k8sio", req(`{key: k8s.io/custom, operator: Exists}`)), wantFields: []string{npReq0 + ".key"}},
		{name: "requirement key syntax", manifest: nodePoolManifest("kv-np-key-syntax", req(`{key: "bad key!", operator: Exists}`)), wantFields: []string{npReq0 + ".key"}},
		{name: "requirement value syntax", manifest: nodePoolManifest("kv-np-value-syntax", req(`{key: example.com/a, operator: In, values: ["not a value"]}`)), wantFields: []string{npReq0 + ".values"}},

		// NodePool template labels.
		{name: "label in karpenter.k8s.aws", manifest: nodePoolManifest("kv-np-label-aws", karpSet(npLabels, "{karpenter.k8s.aws/instance-family: m5}")), wantFields: []string{npLabels}},
		{name: "label kubernetes.io/hostname", manifest: nodePoolManifest("kv-np-label-hostname", karpSet(npLabels, "{kubernetes.io/hostname: a}")), wantFields: []string{npLabels}},
		{name: "label karpenter.sh/nodepool", manifest: nodePoolManifest("kv-np-label-nodepool", karpSet(npLabels, "{karpenter.sh/nodepool: a}")), wantFields: []string{npLabels}},
		{name: "label in k8s.io", manifest: nodePoolManifest("kv-np-label-k8sio", karpSet(npLabels, "{team.k8s.io/owner: a}")), wantFields: []string{npLabels}},
		{name: "label key syntax", manifest: nodePoolManifest("kv-np-label-key", karpSet(npLabels, `{"-bad/key": a}`)), wantFields: []string{npLabels}},
		{name: "label value too long", manifest: nodePoolManifest("kv-np-label-value", karpSet(npLabels, "{example.com/team: "+strings.Repeat("a", 64)+"}")), wantFields: []string{npLabels}},

		// NodePool taints.
		{name: "taint effect", manifest: nodePoolManifest("kv-np-taint-effect", karpSet("spec.template.spec.taints", "[{key: example.com/t, effect: Sometimes}]")), wantFields: []string{"spec.template.spec.taints[0].effect"}},
		{name: "startup taint empty key", manifest: nodePoolManifest("kv-np-startup-key", karpSet("spec.template.spec.startupTaints", `[{key: "", effect: NoSchedule}]`)), wantFields: []string{"spec.template.spec.startupTaints[0].key"}},

		// NodePool durations, disruption and weight.
		{name: "expireAfter in days", manifest: nodePoolManifest("kv-np-expire", karpSet("spec.template.spec.expireAfter", "30d")), wantFields: []string{"spec.template.spec.expireAfter"}},
		{name: "terminationGracePeriod Never", manifest: nodePoolManifest("kv-np-tgp", karpSet("spec.template.spec.terminationGracePeriod", "Never")), wantFields: []string{"spec.template.spec.terminationGracePeriod"}},
		{name: "consolidationPolicy", manifest: nodePoolManifest("kv-np-policy", karpSet("spec.disruption", "{consolidationPolicy: Always}")), wantFields: []string{"spec.disruption.consolidationPolicy"}},
		{name: "consolidateAfter", manifest: nodePoolManifest("kv-np-consolidate-after", karpSet("spec.disruption", "{consolidateAfter: soon}")), wantFields: []string{"spec.disruption.consolidateAfter"}},
		{name: "budget above 100%", manifest: nodePoolManifest("kv-np-budget-pct", karpSet("spec.disruption", `{budgets: [{nodes: "101%"}]}`)), wantFields: []string{budget0 + ".nodes"}},
		{name: "budget nodes not a number", manifest: nodePoolManifest("kv-np-budget-word", karpSet("spec.disruption", `{budgets: [{nodes: "ten"}]}`)), wantFields: []string{budget0 + ".nodes"}},
		{name: "budget schedule without duration", manifest: nodePoolManifest("kv-np-budget-sched", karpSet("spec.disruption", `{budgets: [{nodes: "0", schedule: "@daily"}]}`)), wantFields: []string{budget0 + ".schedule"}},
		{name: "budget duration without schedule", manifest: nodePoolManifest("kv-np-budget-dur", karpSet("spec.disruption", `{budgets: [{nodes: "0", duration: 10m}]}`)), wantFields: []string{budget0}},
		{name: "budget schedule of four fields", manifest: nodePoolManifest("kv-np-budget-cron", karpSet("spec.disruption", `{budgets: [{nodes: "0", schedule: "0 9 * *", duration: 8h}]}`)), wantFields: []string{budget0 + ".schedule"}},
		{name: "budget unknown macro", manifest: nodePoolManifest("kv-np-budget-macro", karpSet("spec.disruption", `{budgets: [{nodes: "0", schedule: "@fortnightly", duration: 8h}]}`)), wantFields: []string{budget0 + ".schedule"}},
		{name: "budget duration in seconds", manifest: nodePoolManifest("kv-np-budget-secs", karpSet("spec.disruption", `{budgets: [{nodes: "0", schedule: "@hourly", duration: 30s}]}`)), wantFields: []string{budget0 + ".duration"}},
		{name: "budget reason", manifest: nodePoolManifest("kv-np-budget-reason", karpSet("spec.disruption", `{budgets: [{nodes: "1", reasons: [Expired]}]}`)), wantFields: []string{budget0 + ".reasons[0]"}},
		{name: "weight zero", manifest: nodePoolManifest("kv-np-weight-0", karpSet("spec.weight", "0")), wantFields: []string{"spec.weight"}},
		{name: "weight above 100", manifest: nodePoolManifest("kv-np-weight-101", karpSet("spec.weight", "101")), wantFields: []string{"spec.weight"}},

		// NodePool nodeClassRef.
		{name: "nodeClassRef missing", manifest: nodePoolManifest("kv-np-ncr-missing", karpSet("spec.template.spec.nodeClassRef", "")), wantFields: []string{"spec.template.spec.nodeClassRef"}},
		{name: "nodeClassRef without name", manifest: nodePoolManifest("kv-np-ncr-name", karpSet("spec.template.spec.nodeClassRef", "{group: karpenter.k8s.aws, kind: EC2NodeClass}")), wantFields: []string{"spec.template.spec.nodeClassRef.name"}},
		{name: "nodeClassRef empty group", manifest: nodePoolManifest("kv-np-ncr-group", karpSet("spec.template.spec.nodeClassRef", `{group: "", kind: EC2NodeClass, name: default}`)), wantFields: []string{"spec.template.spec.nodeClassRef.group"}},

		// NodeClaim.
		{name: "nodeclaim more than 100 requirements", manifest: nodeClaimManifest("kv-nc-101-reqs", karpSet("spec.requirements", karpRequirements(101))), wantFields: []string{"spec.requirements"}},
		{name: "nodeclaim In without values", manifest: nodeClaimManifest("kv-nc-in-empty", karpSet("spec.requirements", "[{key: example.com/a, operator: In}]")), wantFields: []string{"spec.requirements[0].values"}},
		{name: "nodeclaim key in karpenter.sh", manifest: nodeClaimManifest("kv-nc-key", karpSet("spec.requirements", "[{key: karpenter.sh/custom, operator: Exists}]")), wantFields: []string{"spec.requirements[0].key"}},
		{name: "nodeclaim taint effect", manifest: nodeClaimManifest("kv-nc-taint", karpSet("spec.taints", "[{key: example.com/t, effect: Never}]")), wantFields: []string{"spec.taints[0].effect"}},
		{name: "nodeclaim expireAfter", manifest: nodeClaimManifest("kv-nc-expire", karpSet("spec.expireAfter", "1 hour")), wantFields: []string{"spec.expireAfter"}},
		{name: "nodeclaim nodeClassRef empty kind", manifest: nodeClaimManifest("kv-nc-ncr-kind", karpSet("spec.nodeClassRef", `{group: karpenter.k8s.aws, kind: "", name: default}`)), wantFields: []string{"spec.nodeClassRef.kind"}},

		// NodeOverlay.
		{name: "overlay price and priceAdjustment", manifest: nodeOverlayManifest("kv-no-both", karpSet("spec.price", `"0.5"`), karpSet("spec.priceAdjustment", `"-10%"`)), wantFields: []string{"spec.priceAdjustment"}},
		{name: "overlay priceAdjustment without sign", manifest: nodeOverlayManifest("kv-no-adj-sign", karpSet("spec.priceAdjustment", `"10%"`)), wantFields: []string{"spec.priceAdjustment"}},
		{name: "overlay priceAdjustment below -100%", manifest: nodeOverlayManifest("kv-no-adj-pct", karpSet("spec.priceAdjustment", `"-150%"`)), wantFields: []string{"spec.priceAdjustment"}},
		{name: "overlay negative price", manifest: nodeOverlayManifest("kv-no-price", karpSet("spec.price", `"-1"`)), wantFields: []string{"spec.price"}},
		{name: "overlay weight zero", manifest: nodeOverlayManifest("kv-no-weight", karpSet("spec.weight", "0")), wantFields: []string{"spec.weight"}},
		{name: "overlay Lte with a word", manifest: nodeOverlayManifest("kv-no-lte", karpSet("spec.requirements", `[{key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["many"]}]`)), wantFields: []string{"spec.requirements[0].values"}},
		{name: "overlay unknown operator", manifest: nodeOverlayManifest("kv-no-op", karpSet("spec.requirements", `[{key: karpenter.k8s.aws/instance-cpu, operator: Between, values: ["1"]}]`)), wantFields: []string{"spec.requirements[0].operator"}},
	}
	expectRejections(t, cases)
}

// TestKarpenterAccepts creates objects at the edges of the rules, which must be accepted and
// stored as written.
func TestKarpenterAccepts(t *testing.T) {
	cases := []struct {
		name     string
		manifest string
		// want maps dotted paths to the YAML value that must be read back.
		want map[string]string
	}{{
		name: "comparison operators and minValues equal to the In values",
		manifest: nodePoolManifest("ka-np-requirements", karpSet("spec.template.spec.requirements", `[
			{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["4"]},
			{key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["64"]},
			{key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["2"]},
			{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r], minValues: 3},
			{key: karpenter.k8s.aws/instance-family, operator: Exists, minValues: 5},
			{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand, reserved]},
			{key: topology.kubernetes.io/zone, operator: In, values: [us-west-2a]},
			{key: node.kubernetes.io/instance-type, operator: NotIn, values: [t3.nano]},
			{key: kubernetes.io/arch, operator: In, values: [amd64, arm64]},
			{key: node-restriction.kubernetes.io/team, operator: DoesNotExist},
			{key: user.defined.label/type, operator: Exists}]`)),
		want: map[string]string{"spec.template.spec.requirements": `[
			{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["4"]},
			{key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["64"]},
			{key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["2"]},
			{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r], minValues: 3},
			{key: karpenter.k8s.aws/instance-family, operator: Exists, minValues: 5},
			{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand, reserved]},
			{key: topology.kubernetes.io/zone, operator: In, values: [us-west-2a]},
			{key: node.kubernetes.io/instance-type, operator: NotIn, values: [t3.nano]},
			{key: kubernetes.io/arch, operator: In, values: [amd64, arm64]},
			{key: node-restriction.kubernetes.io/team, operator: DoesNotExist},
			{key: user.defined.label/type, operator: Exists}]`},
	}, {
		name: "Never, budgets with macro, cron and 100%, weight 100, Balanced",
		manifest: nodePoolManifest("ka-np-disruption",
			karpSet("spec.template.spec.expireAfter", "Never"),
			karpSet("spec.template.spec.terminationGracePeriod", "48h"),
			karpSet("spec.weight", "100"),
			karpSet("spec.disruption", `{consolidationPolicy: Balanced, consolidateAfter: Never, budgets: [
				{nodes: "100%", reasons: [Empty, Drifted]},
				{nodes: "0", schedule: "@daily", duration: 10m, reasons: [Underutilized]},
				{nodes: "5", schedule: "0 9 * * mon-fri", duration: 8h},
				{nodes: "1", schedule: "*/15 0-6 1,15 * ?", duration: 1h30m}]}`)),
		want: map[string]string{
			"spec.template.spec.expireAfter":            "Never",
			"spec.template.spec.terminationGracePeriod": "48h",
			"spec.weight":                         "100",
			"spec.disruption.consolidationPolicy": "Balanced",
			"spec.disruption.consolidateAfter":    "Never",
			"spec.disruption.budgets":             `[{nodes: "100%", reasons: [Empty, Drifted]}, {nodes: "0", schedule: "@daily", duration: 10m, reasons: [Underutilized]}, {nodes: "5", schedule: "0 9 * * mon-fri", duration: 8h}, {nodes: "1", schedule: "*/15 0-6 1,15 * ?", duration: 1h30m}]`,
		},
	}, {
		name: "exactly 100 requirements and labels, taints, allowed label domains",
		manifest: nodePoolManifest("ka-np-labels",
			karpSet("spec.template.spec.requirements", karpRequirements(98)),
			karpSet("spec.template.metadata.labels", `{billing-team: my-team, node-restriction.kubernetes.io/pool: a}`),
			karpSet("spec.template.spec.taints", `[{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]`),
			karpSet("spec.template.spec.startupTaints", `[{key: node.cilium.io/agent-not-ready, value: "true", effect: NoExecute}]`)),
		want: map[string]string{
			"spec.template.metadata.labels":    `{billing-team: my-team, node-restriction.kubernetes.io/pool: a}`,
			"spec.template.spec.startupTaints": `[{key: node.cilium.io/agent-not-ready, value: "true", effect: NoExecute}]`,
		},
	}, {
		name: "nodeclaim with the nodepool requirement Karpenter writes",
		manifest: nodeClaimManifest("ka-nc-nodepool",
			karpSet("spec.requirements", `[{key: karpenter.sh/nodepool, operator: In, values: [default]}, {key: node.kubernetes.io/instance-type, operator: In, values: [c5.xlarge, c5a.xlarge], minValues: 2}]`),
			karpSet("spec.resources", `{requests: {cpu: 3150m, pods: "6"}}`),
			karpSet("spec.expireAfter", "Never"),
			karpSet("spec.terminationGracePeriod", "1h")),
		want: map[string]string{"spec.expireAfter": "Never", "spec.resources.requests.cpu": "3150m"},
	}, {
		name:     "overlay with a percentage adjustment and extended capacity",
		manifest: nodeOverlayManifest("ka-no-adjust", karpSet("spec.weight", "90"), karpSet("spec.priceAdjustment", `"-10%"`), karpSet("spec.capacity", `{hugepages-2Mi: 100Mi}`)),
		want:     map[string]string{"spec.priceAdjustment": "-10%", "spec.capacity.hugepages-2Mi": "100Mi"},
	}, {
		name:     "overlay with a price",
		manifest: nodeOverlayManifest("ka-no-price", karpSet("spec.price", `"0.125"`), karpSet("spec.requirements", `[{key: karpenter.sh/nodepool, operator: In, values: [default]}, {key: karpenter.k8s.aws/instance-memory, operator: Gte, values: ["16384"]}]`)),
		want:     map[string]string{"spec.price": `"0.125"`},
	}, {
		name:     "overlay with an absolute adjustment",
		manifest: nodeOverlayManifest("ka-no-absolute", karpSet("spec.priceAdjustment", `"+1.2"`)),
		want:     map[string]string{"spec.priceAdjustment": `"+1.2"`},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stored := mustApply(t, tc.manifest)
			for path, want := range tc.want {
				expectKarpField(t, stored, path, want)
			}
		})
	}
}

// TestKarpenterDefaults checks the defaults the schema fills in, which controllers rely on.
func TestKarpenterDefaults(t *testing.T) {
	t.Run("minimal nodepool", func(t *testing.T) {
		stored := mustApply(t, nodePoolManifest("kd-np-minimal"))
		expectKarpField(t, stored, "spec.disruption.consolidationPolicy", "WhenEmptyOrUnderutilized")
		expectKarpField(t, stored, "spec.disruption.consolidateAfter", "0s")
		expectKarpField(t, stored, "spec.disruption.budgets", `[{nodes: "10%"}]`)
		expectKarpField(t, stored, "spec.template.spec.expireAfter", "720h")
	})
	t.Run("nodepool with a partial disruption block", func(t *testing.T) {
		stored := mustApply(t, nodePoolManifest("kd-np-partial",
			karpSet("spec.disruption", `{consolidationPolicy: WhenEmpty, budgets: [{schedule: "@daily", duration: 1h}]}`)))
		expectKarpField(t, stored, "spec.disruption.consolidationPolicy", "WhenEmpty")
		expectKarpField(t, stored, "spec.disruption.consolidateAfter", "0s")
		expectKarpField(t, stored, "spec.disruption.budgets", `[{nodes: "10%", schedule: "@daily", duration: 1h}]`)
	})
	t.Run("minimal nodeclaim", func(t *testing.T) {
		stored := mustApply(t, nodeClaimManifest("kd-nc-minimal"))
		expectKarpField(t, stored, "spec.expireAfter", "720h")
	})
}

// expectKarpField compares the stored value at a dotted path with a YAML value.
func expectKarpField(t *testing.T, obj *unstructured.Unstructured, path, wantYAML string) {
	t.Helper()
	got, found, err := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(path, ".")...)
	if err != nil || !found {
		t.Errorf("%s: not stored (err %v)", path, err)
		return
	}
	var want any
	if err := yaml.Unmarshal([]byte(wantYAML), &want); err != nil {
		t.Fatalf("%s: bad expected YAML: %v", path, err)
	}
	// Round-trip the stored value through YAML like the expectation so numbers compare alike.
	data, err := yaml.Marshal(got)
	if err != nil {
		t.Fatalf("%s: encoding stored value: %v", path, err)
	}
	var normalized any
	if err := yaml.Unmarshal(data, &normalized); err != nil {
		t.Fatalf("%s: decoding stored value: %v", path, err)
	}
	if !reflect.DeepEqual(normalized, want) {
		t.Errorf("%s = %s, want %s", path, strings.TrimSpace(string(data)), wantYAML)
	}
}
