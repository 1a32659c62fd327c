package provider_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/amifamily"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instance"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instancetype"
	"github.com/joinery-dev/joinery/cloudprovider/aws/launchtemplate"
	"github.com/joinery-dev/joinery/cloudprovider/aws/nodeclass"
	"github.com/joinery-dev/joinery/cloudprovider/aws/pricing"
	"github.com/joinery-dev/joinery/cloudprovider/aws/provider"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

const cluster = awsemulator.DefaultClusterName

// recorder is the shared unavailable-offerings record, kept in memory.
type recorder struct {
	mu     sync.Mutex
	marked map[cloudprovider.OfferingKey]time.Time
}

func (r *recorder) Unavailable(context.Context) (map[cloudprovider.OfferingKey]time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[cloudprovider.OfferingKey]time.Time{}
	for k, v := range r.marked {
		out[k] = v
	}
	return out, nil
}

func (r *recorder) MarkUnavailable(_ context.Context, ttl time.Duration, offerings ...cloudprovider.OfferingKey) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range offerings {
		r.marked[o] = time.Now().Add(ttl)
	}
	return nil
}

func (r *recorder) has(k cloudprovider.OfferingKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.marked[k]
	return ok
}

// env is the emulator, real SDK clients, an EC2NodeClass resolved by the real resolver and the
// provider under test.
type env struct {
	srv       *awsemulator.Server
	ec2       *ec2.Client
	kube      client.Client
	p         *provider.Provider
	recorder  *recorder
	instances *instance.Provider
	// newProvider builds another provider over the same emulator and class with opts' Overlay.
	newProvider func(overlay cloudprovider.Overlay) *provider.Provider
	// withOptions builds another provider over the same emulator and class, its options
	// changed by mutate.
	withOptions func(mutate func(*provider.Options)) *provider.Provider
}

func newEnv(t *testing.T, mutate ...func(*awsv1.EC2NodeClass)) *env {
	t.Helper()
	ctx := context.Background()
	srv := awsemulator.NewServer(awsemulator.Options{})
	t.Cleanup(srv.Close)
	cfg := srv.Config()
	fast := func(o *ec2.Options) { o.Retryer = retry.AddWithMaxBackoffDelay(retry.NewStandard(), time.Millisecond) }
	ec2Client := ec2.NewFromConfig(cfg, fast)

	class := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: map[string]string{
			awsv1.AnnotationEC2NodeClassHash: "1111", awsv1.AnnotationEC2NodeClassHashVersion: "joinery-v1",
		}},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: awsv1.SelectorTags{"karpenter.sh/discovery": cluster}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: awsv1.SelectorTags{"karpenter.sh/discovery": cluster}}},
			InstanceProfile:            ptrTo("KarpenterNodeInstanceProfile-" + cluster),
			Tags:                       map[string]string{"team": "a"},
		},
	}
	for _, m := range mutate {
		m(class)
	}
	versions := awsemulator.KubernetesVersions()
	resolver, err := nodeclass.New(ec2Client, ssm.NewFromConfig(cfg), iam.NewFromConfig(cfg), nodeclass.Options{
		ClusterName: cluster, Region: srv.Region, KubernetesVersion: nodeclass.StaticKubernetesVersion(versions[len(versions)-1]),
	})
	if err != nil {
		t.Fatal(err)
	}
	st := &class.Status
	if st.Subnets, err = resolver.Subnets(ctx, class); err != nil {
		t.Fatal(err)
	}
	if st.SecurityGroups, err = resolver.SecurityGroups(ctx, class); err != nil {
		t.Fatal(err)
	}
	if st.AMIs, err = resolver.AMIs(ctx, class); err != nil {
		t.Fatal(err)
	}
	if st.CapacityReservations, err = resolver.CapacityReservations(ctx, class); err != nil {
		t.Fatal(err)
	}
	if st.InstanceProfile, err = resolver.InstanceProfile(ctx, class); err != nil {
		t.Fatal(err)
	}
	st.Conditions = []metav1.Condition{{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{awsv1.AddToScheme, karpv1.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(class).Build()

	prices := pricing.New(awspricing.NewFromConfig(cfg), ec2Client, pricing.Options{Region: srv.Region})
	if err := prices.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	log := testr.New(t)
	its := instancetype.New(ec2Client, prices, instancetype.Options{Region: srv.Region, Logger: log})
	e := &env{srv: srv, ec2: ec2Client, kube: kube, recorder: &recorder{marked: map[cloudprovider.OfferingKey]time.Time{}}}
	e.instances = instance.New(ec2Client, instance.Options{ClusterName: cluster})
	templates := launchtemplate.New(ec2Client, launchtemplate.Options{ClusterName: cluster})
	e.withOptions = func(mutate func(*provider.Options)) *provider.Provider {
		opts := provider.Options{
			Cluster:     amifamily.Cluster{Name: cluster, Endpoint: "https://127.0.0.1:6443", CABundle: "Y2E=", DNSIP: "10.100.0.10"},
			Unavailable: e.recorder, Logger: log,
		}
		mutate(&opts)
		return provider.New(kube, its, templates, e.instances, opts)
	}
	e.newProvider = func(overlay cloudprovider.Overlay) *provider.Provider {
		return e.withOptions(func(o *provider.Options) { o.Overlay = overlay })
	}
	e.p = e.newProvider(nil)
	return e
}

func ptrTo[T any](v T) *T { return &v }

// nodeClaim asks for one of instanceTypes in zones, as capacity types, with 1 CPU.
func nodeClaim(name string, capacityTypes, instanceTypes, zones []string) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
			Resources:    karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		},
	}
	add := func(key string, values []string) {
		if len(values) > 0 {
			nc.Spec.Requirements = append(nc.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
				Key: key, Operator: corev1.NodeSelectorOpIn, Values: values,
			})
		}
	}
	add(karpv1.CapacityTypeLabelKey, capacityTypes)
	add(corev1.LabelInstanceTypeStable, instanceTypes)
	add(corev1.LabelTopologyZone, zones)
	return nc
}
