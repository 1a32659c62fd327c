package scheduler

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joinery-dev/joinery/apis"
	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws"
	"github.com/joinery-dev/joinery/cloudprovider/aws/nodeclass"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

func TestUnknownCloudProvider(t *testing.T) {
	p := &providerFlags{cloudProvider: "gcp"}
	if _, err := p.instanceTypes(context.Background()); err == nil || !strings.Contains(err.Error(), `unknown --cloud-provider "gcp"`) {
		t.Errorf("instanceTypes = %v, want an unknown-provider error", err)
	}
}

// TestAWSInstanceTypes: joinery-scheduler's AWS source lists, for a NodePool on a Ready
// EC2NodeClass, the emulator's instance types in the class's zones, and refuses a class that
// is not Ready as joinery-controller would.
func TestAWSInstanceTypes(t *testing.T) {
	srv := awsemulator.NewServer(awsemulator.Options{})
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIATEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// A class resolved by the same resolver joinery-controller runs.
	resolver, err := nodeclass.NewFromConfig(srv.Config(), nodeclass.Options{
		ClusterName: awsemulator.DefaultClusterName, Region: srv.Region, KubernetesVersion: nodeclass.StaticKubernetesVersion("1.36"),
	})
	if err != nil {
		t.Fatal(err)
	}
	discovery := map[string]string{"karpenter.sh/discovery": awsemulator.DefaultClusterName}
	ready := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "ready"},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: discovery}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: discovery}},
		},
	}
	if ready.Status.Subnets, err = resolver.Subnets(ctx, ready); err != nil {
		t.Fatal(err)
	}
	if ready.Status.AMIs, err = resolver.AMIs(ctx, ready); err != nil {
		t.Fatal(err)
	}
	ready.Status.Conditions = []metav1.Condition{{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	unresolved := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "unresolved"}}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ready, unresolved).Build()

	p := &providerFlags{cloudProvider: "aws", aws: aws.Settings{
		Region: srv.Region, EndpointURL: srv.URL, VMMemoryOverheadPercent: cloudprovider.DefaultVMMemoryOverheadPercent,
	}}
	newSource, err := p.instanceTypes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	source, err := newSource(kube, nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := func(class string) *karpv1.NodePool {
		return &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{
			Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: class}},
		}}}
	}

	its, err := source.GetInstanceTypes(ctx, pool("ready"))
	if err != nil {
		t.Fatal(err)
	}
	if len(its) < 100 {
		t.Fatalf("%d instance types for the ready class, want the catalog's hundreds", len(its))
	}
	var zones []string
	for _, sn := range ready.Status.Subnets {
		zones = append(zones, sn.Zone)
	}
	for _, it := range its {
		for _, o := range it.Offerings {
			if zone := o.Requirements.Get(corev1.LabelTopologyZone).Any(); !slices.Contains(zones, zone) {
				t.Fatalf("%s offered in %s, outside the class's subnets' zones %v", it.Name, zone, zones)
			}
		}
	}

	if _, err := source.GetInstanceTypes(ctx, pool("unresolved")); !cloudprovider.IsNodeClassNotReadyError(err) {
		t.Errorf("instance types of a class that is not Ready: %v, want a NodeClassNotReady error", err)
	}
}
