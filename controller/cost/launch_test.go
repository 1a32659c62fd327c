package cost

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joinery-dev/joinery/apis"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	kwokv1alpha1 "github.com/joinery-dev/joinery/apis/kwok/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/scheduling"
)

// TestLaunchPredictionIsTheLaunch: the offering Pricer.Launch predicts for a launching
// NodeClaim (the savings gauge, `joinery cost`, the cost metrics) is the one the provider
// launches, also when offerings tie on capacity type and price: the catalog lists the type
// named last first, and both must pick the same one by the launch order's tie-break.
func TestLaunchPredictionIsTheLaunch(t *testing.T) {
	typ := func(name, cpu string, offerings ...*cloudprovider.Offering) *cloudprovider.InstanceType {
		return &cloudprovider.InstanceType{
			Name: name,
			Requirements: scheduling.NewRequirements(
				scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, name),
				scheduling.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
				scheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux"),
			),
			Offerings: offerings,
			Capacity:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("29")},
		}
	}
	spot := func(zone string, price float64) *cloudprovider.Offering {
		return cloudprovider.NewOffering(zone, karpv1.CapacityTypeSpot, price, true)
	}
	od := func(zone string, price float64) *cloudprovider.Offering {
		return cloudprovider.NewOffering(zone, karpv1.CapacityTypeOnDemand, price, true)
	}
	tests := []struct {
		name     string
		its      cloudprovider.InstanceTypes
		requests corev1.ResourceList
		want     string // instance type/zone
	}{
		{
			name: "two types tie on spot price",
			its:  cloudprovider.InstanceTypes{typ("zeta", "2", spot("zone-a", 0.1), od("zone-a", 0.05)), typ("alpha", "2", spot("zone-a", 0.1))},
			want: "alpha/zone-a",
		},
		{
			name: "one type ties across zones",
			its:  cloudprovider.InstanceTypes{typ("m", "2", od("zone-c", 0.2), od("zone-b", 0.2))},
			want: "m/zone-b",
		},
		{
			name:     "the cheaper type does not hold the requests",
			its:      cloudprovider.InstanceTypes{typ("small", "1", spot("zone-a", 0.05)), typ("large", "4", spot("zone-a", 0.2))},
			requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			want:     "large/zone-a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			if err := apis.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			class := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Status: kwokv1alpha1.KWOKNodeClassStatus{Conditions: []metav1.Condition{{
				Type: kwokv1alpha1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now(),
			}}}}
			provider := kwok.NewWithInstanceTypes(fake.NewClientBuilder().WithScheme(scheme).WithObjects(class).Build(), tt.its)
			nc := &karpv1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "nc", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
				Spec: karpv1.NodeClaimSpec{
					NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: kwokv1alpha1.KWOKNodeClassKind, Name: "default"},
					Resources:    karpv1.ResourceRequirements{Requests: tt.requests},
				},
			}
			predicted, ok, err := NewPricer(provider, nil).Launch(context.Background(), nc)
			if err != nil || !ok {
				t.Fatalf("Launch() = %v, %v, %v", predicted, ok, err)
			}
			launched, err := provider.Create(context.Background(), nc)
			if err != nil {
				t.Fatal(err)
			}
			got := launched.Labels[corev1.LabelInstanceTypeStable] + "/" + launched.Labels[corev1.LabelTopologyZone]
			if got != tt.want {
				t.Errorf("launched %s, want %s", got, tt.want)
			}
			if p := predicted.InstanceType + "/" + predicted.Zone; p != got {
				t.Errorf("predicted %s, launched %s", p, got)
			}
		})
	}
}
