package snapshot_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cli/fixtures"
	"github.com/joinery-dev/joinery/cli/snapshot"
	"github.com/joinery-dev/joinery/cli/whatif"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/scheduling"
)

// TestCaptureRecordsWhatBuffersResolveFrom: the PodTemplates CapacityBuffers name (in spec and
// status) and the workloads of their scalableRefs are recorded, sanitized; no other workload
// or PodTemplate is.
func TestCaptureRecordsWhatBuffersResolveFrom(t *testing.T) {
	tmpl := func(cpu string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "a",
				Env: []corev1.EnvVar{{Name: "TOKEN", Value: fixtures.SecretValue}}, Command: []string{"run", fixtures.SecretValue}}}},
		}
	}
	objs := append(fixtures.Objects(),
		&corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "spare"}, Template: tmpl("1")},
		&corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "capacitybuffer-web"}, Template: tmpl("1")},
		&corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "unrelated"}, Template: tmpl("1")},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: tmpl("1")}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other"}, Spec: appsv1.DeploymentSpec{Template: tmpl("1")}},
		&autoscalingv1alpha1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "spare"},
			Spec: autoscalingv1alpha1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1alpha1.LocalObjectRef{Name: "spare"}, Replicas: ptr.To[int32](1)}},
		&autoscalingv1alpha1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec:   autoscalingv1alpha1.CapacityBufferSpec{ScalableRef: &autoscalingv1alpha1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "web"}, Percentage: ptr.To[int32](50)},
			Status: autoscalingv1alpha1.CapacityBufferStatus{PodTemplateRef: &autoscalingv1alpha1.LocalObjectRef{Name: "capacitybuffer-web"}}},
	)
	scheme, err := whatif.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	s, err := snapshot.Capture(context.Background(), c, snapshot.CaptureOptions{
		InstanceTypes: kwok.NewWithInstanceTypes(c, nil), Scheme: scheme, Now: fixtures.TakenAt})
	if err != nil {
		t.Fatal(err)
	}
	names := func(items []client.Object) string {
		var out []string
		for _, o := range items {
			out = append(out, o.GetName())
		}
		return strings.Join(out, ",")
	}
	var pts, deps []client.Object
	for i := range s.PodTemplates {
		pts = append(pts, &s.PodTemplates[i])
	}
	for i := range s.Deployments {
		deps = append(deps, &s.Deployments[i])
	}
	if got := names(pts); got != "capacitybuffer-web,spare" {
		t.Errorf("PodTemplates %s, want capacitybuffer-web,spare", got)
	}
	if got := names(deps); got != "web" {
		t.Errorf("Deployments %s, want web", got)
	}
	if s.Format != snapshot.Format {
		t.Errorf("format %d, want %d", s.Format, snapshot.Format)
	}
	var buf bytes.Buffer
	if err := s.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), fixtures.SecretValue) {
		t.Error("a recorded pod template kept a secret")
	}
}

// TestCatalogGates: a Format 2 catalog leaves reserved offerings out with ReservedCapacity off
// and applies the overlay, as a provider's listing does; a legacy catalog, which has both
// applied already, is used as recorded.
func TestCatalogGates(t *testing.T) {
	its := cloudprovider.InstanceTypes{{
		Name:         "m5.large",
		Requirements: scheduling.NewRequirements(),
		Offerings: cloudprovider.Offerings{
			cloudprovider.NewOffering("test-zone-a", karpv1.CapacityTypeOnDemand, 0.1, true),
			cloudprovider.NewReservedOffering("test-zone-a", "cr-1", 0.05, 1),
		},
		Capacity: corev1.ResourceList{},
	}}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	overlay := doubled{}
	for _, tt := range []struct {
		name   string
		format int
		opts   snapshot.CatalogOptions
		want   []float64
	}{
		{"as recorded", snapshot.Format, snapshot.CatalogOptions{}, []float64{0.1, 0.05}},
		{"ReservedCapacity off", snapshot.Format, snapshot.CatalogOptions{NoReserved: true}, []float64{0.1}},
		{"overlay", snapshot.Format, snapshot.CatalogOptions{Overlay: overlay}, []float64{0.2, 0.1}},
		{"legacy: applied already", 0, snapshot.CatalogOptions{NoReserved: true, Overlay: overlay}, []float64{0.1, 0.05}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshot.New(fixtures.TakenAt)
			s.Format = tt.format
			s.Catalogs = []snapshot.Catalog{{NodePools: []string{"default"}, InstanceTypes: snapshot.FromInstanceTypes(its)}}
			got, err := s.CatalogWith(tt.opts).GetInstanceTypes(context.Background(), np)
			if err != nil {
				t.Fatal(err)
			}
			var prices []float64
			for _, o := range got[0].Offerings {
				prices = append(prices, o.Price)
			}
			if len(prices) != len(tt.want) {
				t.Fatalf("prices %v, want %v", prices, tt.want)
			}
			for i := range prices {
				if prices[i] != tt.want[i] {
					t.Errorf("prices %v, want %v", prices, tt.want)
				}
			}
		})
	}
}

// doubled is an overlay that doubles every price.
type doubled struct{}

func (doubled) Apply(_ string, its cloudprovider.InstanceTypes) cloudprovider.InstanceTypes {
	out := make(cloudprovider.InstanceTypes, len(its))
	for i, it := range its {
		cp := &cloudprovider.InstanceType{Name: it.Name, Requirements: it.Requirements, Capacity: it.Capacity}
		for _, o := range it.Offerings {
			c := *o
			c.Price *= 2
			cp.Offerings = append(cp.Offerings, &c)
		}
		out[i] = cp
	}
	return out
}
