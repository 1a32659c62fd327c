package whatif_test

import (
	"context"
	"strings"
	"testing"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/cli/snapshot"
	"github.com/joinery-dev/joinery/cli/whatif"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/internal/featuregates"
)

// load applies yaml to the recorded snapshot and serves it with gates (FEATURE_GATES syntax).
func load(t *testing.T, yaml, gates string) (*snapshot.Snapshot, *whatif.Cluster) {
	t.Helper()
	s := read(t)
	if yaml != "" {
		objs, err := whatif.DecodeChanges(strings.NewReader(yaml))
		if err != nil {
			t.Fatal(err)
		}
		if err := whatif.Apply(s, objs); err != nil {
			t.Fatal(err)
		}
	}
	g, err := featuregates.FromEnv(gates)
	if err != nil {
		t.Fatal(err)
	}
	c, err := whatif.Load(s, g)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// TestCapacityBuffersAsTheControllerKeepsThem: a CapacityBuffer given with -f is resolved by
// joinery-controller's buffer controller (a PodTemplate, or a Deployment's template and
// replicas) and its virtual pod placed by the disruption loop's own loading, so the pass keeps
// the node that holds the buffer instead of consolidating it; with the gate off it does not.
func TestCapacityBuffersAsTheControllerKeepsThem(t *testing.T) {
	ctx := context.Background()
	buffers := map[string]string{
		"podTemplateRef": `{apiVersion: v1, kind: PodTemplate, metadata: {name: spare}, template: {spec: {schedulerName: joinery, containers: [{name: a, image: a, resources: {requests: {cpu: "3"}}}]}}}
---
{apiVersion: autoscaling.x-k8s.io/v1alpha1, kind: CapacityBuffer, metadata: {name: spare}, spec: {podTemplateRef: {name: spare}, replicas: 1}}`,
		"scalableRef with a percentage": `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {replicas: 1, selector: {matchLabels: {app: web}},
  template: {metadata: {labels: {app: web}}, spec: {schedulerName: joinery, containers: [{name: a, image: a, resources: {requests: {cpu: "3"}}}]}}}}
---
{apiVersion: autoscaling.x-k8s.io/v1alpha1, kind: CapacityBuffer, metadata: {name: spare}, spec: {scalableRef: {apiGroup: apps, kind: Deployment, name: web}, percentage: 100}}`,
	}
	for name, yaml := range buffers {
		t.Run(name, func(t *testing.T) {
			for _, tt := range []struct {
				gates         string
				wantDisrupted bool
			}{{"", true}, {"CapacityBuffer=true", false}} {
				_, c := load(t, yaml, tt.gates)
				pass, err := c.Disrupt(ctx, whatif.Options{})
				if err != nil {
					t.Fatal(err)
				}
				disrupted := false
				for _, cmd := range pass.Commands {
					for _, n := range cmd.Nodes {
						disrupted = disrupted || n.Node == "node-b"
					}
				}
				if disrupted != tt.wantDisrupted {
					t.Errorf("gates %q: node-b disrupted = %v, want %v (pass %+v)", tt.gates, disrupted, tt.wantDisrupted, pass)
				}
			}
		})
	}
}

// TestCapacityBuffersAreProvisioned: a buffer whose chunks fit no registered node is planned
// onto a new NodeClaim with the pending pods, as the Provisioner's batch plans it, after the
// pending pods took the room existing nodes have.
func TestCapacityBuffersAreProvisioned(t *testing.T) {
	limit := `{apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: default}, spec: {template: {spec: {nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default},
  requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]}}, limits: {cpu: "100"}, disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s}}}
---
{apiVersion: v1, kind: PodTemplate, metadata: {name: spare}, template: {spec: {schedulerName: joinery, containers: [{name: a, image: a, resources: {requests: {cpu: "3"}}}]}}}
---
{apiVersion: autoscaling.x-k8s.io/v1alpha1, kind: CapacityBuffer, metadata: {name: spare}, spec: {podTemplateRef: {name: spare}, replicas: 2}}`
	bufferPods := func(res *whatif.Provisioning) (n int, realPlaced map[string]string) {
		for _, nc := range res.NewNodeClaims {
			for _, p := range nc.Pods {
				if strings.HasPrefix(p, "default/capacitybuffer-spare-") {
					n++
				}
			}
		}
		realPlaced = map[string]string{}
		for _, p := range res.Placed {
			realPlaced[p.Pod] = p.Target
		}
		return n, realPlaced
	}
	_, off := load(t, limit, "")
	before, err := off.Provision(context.Background(), whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, on := load(t, limit, "CapacityBuffer=true")
	after, err := on.Provision(context.Background(), whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := bufferPods(before); n != 0 {
		t.Errorf("gate off: %d buffer pods planned, want none", n)
	}
	n, placedAfter := bufferPods(after)
	if n == 0 {
		t.Errorf("gate on: no buffer pod on a new NodeClaim: %+v", after.NewNodeClaims)
	}
	// Real pods take existing capacity before buffers do.
	_, placedBefore := bufferPods(before)
	for pod, target := range placedBefore {
		if placedAfter[pod] != target {
			t.Errorf("pod %s placed on %q with the buffer, %q without", pod, placedAfter[pod], target)
		}
	}
	if len(after.Pending) != len(before.Pending) {
		t.Errorf("buffers left %d pods pending, %d without: %+v", len(after.Pending), len(before.Pending), after.Pending)
	}
}

// TestNodeOverlaysApplyToTheRecordedCatalog: a NodeOverlay given with -f prices the launch and
// the running nodes exactly as cloudprovider.NodeOverlays, the set both binaries apply to
// their catalog, prices the recorded catalog; with the gate off it changes nothing.
func TestNodeOverlaysApplyToTheRecordedCatalog(t *testing.T) {
	ctx := context.Background()
	const overlay = `{apiVersion: karpenter.sh/v1alpha1, kind: NodeOverlay, metadata: {name: half}, spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [c5.large, c5.xlarge]}], priceAdjustment: "-50%"}}`
	s, on := load(t, overlay, "NodeOverlay=true")
	_, off := load(t, overlay, "")

	// The overlay code's own answer over the recorded catalog.
	overlays := cloudprovider.NewNodeOverlays()
	overlays.Replace([]v1alpha1.NodeOverlay{s.NodeOverlays[0]})
	want := map[string]float64{}
	for _, c := range s.Catalogs {
		for _, it := range overlays.Apply("default", snapshot.Build(c.InstanceTypes)) {
			for _, o := range it.Offerings {
				if o.CapacityType() == karpv1.CapacityTypeOnDemand && o.Zone() == "test-zone-a" {
					want[it.Name] = o.Price
				}
			}
		}
	}
	for _, tt := range []struct {
		name  string
		c     *whatif.Cluster
		ratio float64
	}{{"gate on", on, 0.5}, {"gate off", off, 1}} {
		t.Run(tt.name, func(t *testing.T) {
			prov, err := tt.c.Provision(ctx, whatif.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(prov.NewNodeClaims) == 0 || prov.NewNodeClaims[0].Launch == nil {
				t.Fatalf("no launch planned: %+v", prov)
			}
			l := prov.NewNodeClaims[0].Launch
			if got, w := l.Price, want[l.InstanceType]/0.5*tt.ratio; !approx(got, w) {
				t.Errorf("launch %s priced %v, want %v", l.InstanceType, got, w)
			}
			lines, err := tt.c.Costs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			total := 0.0
			for _, line := range lines {
				total += line.PerHour
			}
			// Two running c5.xlarge nodes.
			if w := 2 * want["c5.xlarge"] / 0.5 * tt.ratio; !approx(total, w) {
				t.Errorf("running nodes cost %v per hour, want %v", total, w)
			}
		})
	}
}

func approx(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }
