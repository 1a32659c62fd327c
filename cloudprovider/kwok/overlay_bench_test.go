package kwok

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
)

// BenchmarkNodeOverlaysApply evaluates three overlays (a family discount, a spot price by
// zone, hugepages by cpu count) over the kwok catalog, uncached, as the AWS provider's fresh
// listings are. It lives with the kwok provider for its catalog.
func BenchmarkNodeOverlaysApply(b *testing.B) {
	file, err := catalog.Default()
	if err != nil {
		b.Fatal(err)
	}
	its, err := file.Build(catalog.BuildOptions{})
	if err != nil {
		b.Fatal(err)
	}
	s := cloudprovider.NewNodeOverlays()
	for _, o := range []v1alpha1.NodeOverlay{
		{ObjectMeta: metav1.ObjectMeta{Name: "m5"}, Spec: v1alpha1.NodeOverlaySpec{PriceAdjustment: ptr.To("-10%"),
			Requirements: []v1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "spot-a"}, Spec: v1alpha1.NodeOverlaySpec{Price: ptr.To("0.01"),
			Requirements: []v1alpha1.NodeSelectorRequirement{{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}},
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"test-zone-a"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "huge"}, Spec: v1alpha1.NodeOverlaySpec{Capacity: corev1.ResourceList{"hugepages-2Mi": resource.MustParse("1Gi")},
			Requirements: []v1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-cpu", Operator: "Gte", Values: []string{"8"}}}}},
	} {
		s.Set(&o)
	}
	b.ReportMetric(float64(len(its)), "types")
	b.ResetTimer()
	for i := range b.N {
		s.Apply(fmt.Sprintf("pool-%d", i), its) // a new NodePool each time: never cached
	}
}
