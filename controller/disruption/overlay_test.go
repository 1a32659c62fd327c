package disruption

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/joinery-dev/joinery/apis/kwok/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
)

// TestConsolidationUsesOverlayPrices: consolidation prices the candidate and its replacement
// from the cloud provider's catalog as NodeOverlays adjust it, through the kwok provider as
// joinery-controller wires it. A small node that nothing undercuts is replaced once an
// overlay makes medium cheaper; a large node that small would replace is kept once an overlay
// makes small and medium as dear as large.
func TestConsolidationUsesOverlayPrices(t *testing.T) {
	types := func(names ...string) v1alpha1.NodeSelectorRequirement {
		return v1alpha1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: names}
	}
	tests := []struct {
		name          string
		nodeType, cpu string
		overlays      []v1alpha1.NodeOverlaySpec
		want          string // decision, "" for none
		wantTypes     string // the replacement's instance types
		blocked       string
	}{
		{name: "without overlays small stays", nodeType: "small", cpu: "1", blocked: msgNoCheaper},
		{name: "an overlay makes medium cheaper than small", nodeType: "small", cpu: "1",
			overlays: []v1alpha1.NodeOverlaySpec{{Requirements: []v1alpha1.NodeSelectorRequirement{types("medium")}, Price: ptr.To("0.01")}},
			want:     "replace", wantTypes: "medium"},
		{name: "without overlays large goes to something cheaper", nodeType: "large", cpu: "500m", want: "replace", wantTypes: "medium,small"},
		{name: "an overlay makes the cheaper types dear", nodeType: "large", cpu: "500m",
			overlays: []v1alpha1.NodeOverlaySpec{{Requirements: []v1alpha1.NodeSelectorRequirement{types("small", "medium")}, PriceAdjustment: ptr.To("+1")}},
			blocked:  msgNoCheaper},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			its := testCatalog(t, 0)
			class := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Status: kwokv1alpha1.KWOKNodeClassStatus{Conditions: []metav1.Condition{{
				Type: kwokv1alpha1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now(),
			}}}}
			objs := []client.Object{class, testNodePool("default", onDemandOnly)}
			objs = append(objs, pair(testNode("a", "default", typed(its, tt.nodeType, "on-demand")))...)
			objs = append(objs, cpuPod("a-0", "node-a", tt.cpu))
			cluster, c := loadCluster(t, objs...)

			overlays := cloudprovider.NewNodeOverlays()
			for i, spec := range tt.overlays {
				overlays.Set(&v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("o%d", i)}, Spec: spec})
			}
			provider := kwok.NewWithOverlay(c, its, overlays)
			m := &SingleNodeConsolidation{Consolidation: Consolidation{Simulator: newProviderSimulator(t, provider), InstanceTypes: provider}}
			cands, _ := cluster.Candidates(m.Reason(), m.Class())
			allowed, _ := cluster.Allowed(m.Reason(), epoch)
			cmd, blocked, err := m.ComputeCommand(ctx, cluster, allowed, cands)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if cmd != nil {
					t.Fatalf("command %s, want none", cmd)
				}
				if len(blocked) == 0 || blocked[0].Message != tt.blocked {
					t.Errorf("blocked = %+v, want %q", blocked, tt.blocked)
				}
				return
			}
			if cmd == nil || string(cmd.Decision()) != tt.want {
				t.Fatalf("command %v (blocked %+v), want %s", cmd, blocked, tt.want)
			}
			if got := strings.Join(replacementTypes(cmd.Replacements[0]), ","); got != tt.wantTypes {
				t.Errorf("replacement types %s, want %s", got, tt.wantTypes)
			}
		})
	}
}

// newProviderSimulator is the real solver over a cloud provider's instance types.
func newProviderSimulator(t testing.TB, src cloudprovider.InstanceTypeLister) *SolverSimulator {
	t.Helper()
	return newTestSimulation(t, src)
}
