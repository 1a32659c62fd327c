package nodeclass_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joinery-dev/joinery/apis"
	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/amifamily"
	ncctrl "github.com/joinery-dev/joinery/cloudprovider/aws/controllers/nodeclass"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instancetype"
	"github.com/joinery-dev/joinery/cloudprovider/aws/nodeclass"
	"github.com/joinery-dev/joinery/cloudprovider/aws/pricing"
	"github.com/joinery-dev/joinery/cloudprovider/aws/provider"
	"github.com/joinery-dev/joinery/controller/nodeclaim/drift"
	nodepoolctrl "github.com/joinery-dev/joinery/controller/nodepool"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// TestAMIAliasReleaseDriftsNodeClaims runs the real AWS provider, EC2NodeClass resolver and
// controller against the emulator: a NodeClaim launched on al2023@latest is not drifted until
// AWS publishes a new AMI under the alias's SSM parameter; once the class is resolved again the
// NodeClaim is marked Drifted with AMIDrift, and rolling the parameter back clears it.
func TestAMIAliasReleaseDriftsNodeClaims(t *testing.T) {
	ctx := t.Context()
	srv := awsemulator.NewServer(awsemulator.Options{})
	t.Cleanup(srv.Close)
	cfg := srv.Config()
	ec2Client := ec2.NewFromConfig(cfg, func(o *ec2.Options) {
		o.Retryer = retry.AddWithMaxBackoffDelay(retry.NewStandard(), time.Millisecond)
	})
	versions := awsemulator.KubernetesVersions()
	k8sVersion := versions[len(versions)-1]
	resolver, err := nodeclass.New(ec2Client, ssm.NewFromConfig(cfg), iam.NewFromConfig(cfg), nodeclass.Options{
		ClusterName: awsemulator.DefaultClusterName, Region: srv.Region, KubernetesVersion: nodeclass.StaticKubernetesVersion(k8sVersion),
	})
	if err != nil {
		t.Fatal(err)
	}

	discovery := awsv1.SelectorTags{"karpenter.sh/discovery": awsemulator.DefaultClusterName}
	class := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: discovery}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: discovery}},
			InstanceProfile:            new("KarpenterNodeInstanceProfile-" + awsemulator.DefaultClusterName),
		},
	}
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: class.Name},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
			},
		}}},
	}
	hash, err := nodepoolctrl.Hash(np)
	if err != nil {
		t.Fatal(err)
	}
	np.Annotations = map[string]string{karpv1.NodePoolHashAnnotationKey: hash, karpv1.NodePoolHashVersionAnnotationKey: nodepoolctrl.HashVersion}
	kube := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(class, np).
		WithStatusSubresource(&awsv1.EC2NodeClass{}, &karpv1.NodeClaim{}).Build()

	// Each resolution comes one AMI refresh interval after the last, as the requeues space them.
	clk := clocktesting.NewFakePassiveClock(time.Now())
	classes := ncctrl.New(kube, resolver, events.NewFakeRecorder(100), clk, ncctrl.Options{})
	resolve := func() {
		t.Helper()
		clk.SetTime(clk.Now().Add(ncctrl.DefaultAMIRefreshInterval))
		if _, err := classes.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(class)}); err != nil {
			t.Fatalf("resolving the ec2nodeclass: %v", err)
		}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(class), class); err != nil {
			t.Fatal(err)
		}
		if !meta.IsStatusConditionTrue(class.Status.Conditions, awsv1.ConditionTypeReady) {
			t.Fatalf("ec2nodeclass not Ready: %+v", class.Status.Conditions)
		}
	}
	resolve()

	cp := newAWSProvider(t, cfg, ec2Client, kube)
	nc := launch(t, cp, kube, np)
	instances := srv.Instances()
	if len(instances) != 1 {
		t.Fatalf("%d instances launched, want 1", len(instances))
	}
	oldImage := instances[0].ImageID
	parameter := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/x86_64/standard/recommended/image_id", k8sVersion)
	if got, _ := srv.ParameterValue(parameter); got != oldImage {
		t.Fatalf("instance runs %s, but %s names %s: the test would not exercise the alias", oldImage, parameter, got)
	}

	ctl := drift.New(kube, cp, drift.Options{})
	check := func(wantReason string) {
		t.Helper()
		if _, err := ctl.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(nc)}); err != nil {
			t.Fatalf("drift reconcile: %v", err)
		}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
			t.Fatal(err)
		}
		cond := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrifted)
		switch {
		case wantReason == "" && cond != nil:
			t.Fatalf("Drifted = %+v, want none", cond)
		case wantReason != "" && (cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != wantReason):
			t.Fatalf("Drifted = %+v, want True with reason %s", cond, wantReason)
		}
	}
	check("")

	// AWS releases a new AL2023 image: the parameter moves; until the class is resolved again
	// nothing drifts.
	release := srv.AddImage(awsemulator.Image{
		Name:         fmt.Sprintf("amazon-eks-node-al2023-x86_64-standard-%s-v20991231", k8sVersion),
		OwnerID:      "602401143452", // the EKS AMI publisher, as AWS's own images are
		OwnerAlias:   "amazon",
		Architecture: "x86_64",
		Public:       true,
		SSMParameter: parameter,
	})
	srv.PutParameter(parameter, release.ID)
	check("")
	resolve()
	check(string(provider.DriftAMI))

	// The release is rolled back: the instance's image is the resolved one again.
	srv.PutParameter(parameter, oldImage)
	resolve()
	check("")
}

// scheme holds Kubernetes' types and joinery's.
func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// newAWSProvider is the AWS cloud provider over the emulator, with prices loaded.
func newAWSProvider(t *testing.T, cfg aws.Config, ec2Client *ec2.Client, kube client.Client) *provider.Provider {
	t.Helper()
	prices := pricing.New(awspricing.NewFromConfig(cfg), ec2Client, pricing.Options{Region: cfg.Region})
	if err := prices.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	logger := testr.New(t)
	its := instancetype.New(ec2Client, prices, instancetype.Options{Region: cfg.Region, Logger: logger})
	return provider.NewFromConfig(cfg, kube, its, provider.Options{
		Cluster: amifamily.Cluster{Name: awsemulator.DefaultClusterName, Endpoint: "https://127.0.0.1:6443", CABundle: "Y2E=", DNSIP: "10.100.0.10"},
		Logger:  logger,
	})
}

// launch creates a NodeClaim of np for one on-demand c6i.large and launches it as the lifecycle
// controller would: labels from the launch, the NodePool's hash, Launched=True.
func launch(t *testing.T, cp *provider.Provider, kube client.Client, np *karpv1.NodePool) *karpv1.NodeClaim {
	t.Helper()
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: "default-a", UID: types.UID("uid-default-a"),
			Labels: map[string]string{karpv1.NodePoolLabelKey: np.Name},
			Annotations: map[string]string{
				karpv1.NodePoolHashAnnotationKey:        np.Annotations[karpv1.NodePoolHashAnnotationKey],
				karpv1.NodePoolHashVersionAnnotationKey: np.Annotations[karpv1.NodePoolHashVersionAnnotationKey],
			},
		},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: np.Spec.Template.Spec.NodeClassRef,
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6i.large"}},
			},
			Resources: karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		},
	}
	launched, err := cp.Create(t.Context(), nc)
	if err != nil {
		t.Fatalf("launching: %v", err)
	}
	status := launched.Status // Create does not write the status subresource
	if err := kube.Create(t.Context(), launched); err != nil {
		t.Fatal(err)
	}
	launched.Status = status
	launched.Status.Conditions = []metav1.Condition{{
		Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: karpv1.ConditionTypeLaunched, LastTransitionTime: metav1.Now(),
	}}
	if err := kube.Status().Update(t.Context(), launched); err != nil {
		t.Fatal(err)
	}
	return launched
}
