package nodeclass

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joinery-dev/joinery/apis"
	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/nodeclass"
)

// stubResolver answers from fields; a non-nil error field fails that part.
type stubResolver struct {
	subnets    []awsv1.Subnet
	subnetsErr error
	amisErr    error
	// placementGroups answers PlacementGroups (placementgroup_test.go).
	placementGroups    []awsv1.PlacementGroup
	placementGroupsErr error
}

func (s *stubResolver) Subnets(context.Context, *awsv1.EC2NodeClass) ([]awsv1.Subnet, error) {
	if s.subnetsErr != nil {
		return nil, s.subnetsErr
	}
	return s.subnets, nil
}

func (s *stubResolver) SecurityGroups(context.Context, *awsv1.EC2NodeClass) ([]awsv1.SecurityGroup, error) {
	return []awsv1.SecurityGroup{{ID: "sg-1", Name: "nodes"}}, nil
}

func (s *stubResolver) AMIs(context.Context, *awsv1.EC2NodeClass) ([]awsv1.AMI, error) {
	if s.amisErr != nil {
		return nil, s.amisErr
	}
	return []awsv1.AMI{{ID: "ami-1", Name: "image"}}, nil
}

func (s *stubResolver) CapacityReservations(context.Context, *awsv1.EC2NodeClass) ([]awsv1.CapacityReservation, error) {
	return nil, nil
}

func (s *stubResolver) PlacementGroups(context.Context, *awsv1.EC2NodeClass) ([]awsv1.PlacementGroup, error) {
	return s.placementGroups, s.placementGroupsErr
}

func (s *stubResolver) InstanceProfile(context.Context, *awsv1.EC2NodeClass) (string, error) {
	return "profile", nil
}

func (s *stubResolver) DeleteInstanceProfile(context.Context, *awsv1.EC2NodeClass) error { return nil }

var throttled = &smithy.GenericAPIError{Code: "RequestLimitExceeded", Message: "Request limit exceeded."}

func newFixture(t *testing.T, resolver Resolver) (client.Client, *Controller) {
	t.Helper()
	return newFixtureWith(t, resolver, Options{})
}

// newFixtureWith is newFixture with the controller's options.
func newFixtureWith(t *testing.T, resolver Resolver, opts Options) (client.Client, *Controller) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 2},
		Spec:       awsv1.EC2NodeClassSpec{Role: "r", AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(nc).WithStatusSubresource(&awsv1.EC2NodeClass{}).Build()
	ctl := New(c, resolver, events.NewFakeRecorder(100), clocktesting.NewFakePassiveClock(time.Unix(2000, 0)), opts)
	return c, ctl
}

func reconcileOnce(t *testing.T, c client.Client, ctl *Controller) (*awsv1.EC2NodeClass, ctrl.Result) {
	t.Helper()
	res, err := ctl.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	nc := &awsv1.EC2NodeClass{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "default"}, nc); err != nil {
		t.Fatal(err)
	}
	return nc, res
}

func TestTransientErrorsKeepTheLastGoodResolution(t *testing.T) {
	resolver := &stubResolver{subnets: []awsv1.Subnet{{ID: "subnet-1", Zone: "us-west-2a"}}}
	c, ctl := newFixture(t, resolver)
	nc, res := reconcileOnce(t, c, ctl)
	if !meta.IsStatusConditionTrue(nc.Status.Conditions, awsv1.ConditionTypeReady) || res.RequeueAfter != 5*time.Minute {
		t.Fatalf("first reconcile: conditions %+v, requeue %v", nc.Status.Conditions, res.RequeueAfter)
	}

	// The subnets are resolved again once their refresh interval has passed.
	clk := ctl.clock.(*clocktesting.FakePassiveClock)
	clk.SetTime(clk.Now().Add(DefaultSubnetRefreshInterval))
	resolver.subnetsErr = throttled
	nc, res = reconcileOnce(t, c, ctl)
	if len(nc.Status.Subnets) != 1 || !meta.IsStatusConditionTrue(nc.Status.Conditions, awsv1.ConditionTypeSubnetsReady) {
		t.Errorf("throttling dropped resolved subnets: %+v %+v", nc.Status.Subnets, nc.Status.Conditions)
	}
	if res.RequeueAfter != 15*time.Second {
		t.Errorf("requeue after throttling = %v, want the retry interval", res.RequeueAfter)
	}

	// A lasting failure is different: the subnets are gone and the class is not ready.
	resolver.subnetsErr = &nodeclass.NoMatchError{What: "subnets", Detail: "no subnet matches any of spec.subnetSelectorTerms"}
	nc, res = reconcileOnce(t, c, ctl)
	cond := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeSubnetsReady)
	if len(nc.Status.Subnets) != 0 || cond.Status != metav1.ConditionFalse || cond.Reason != "SubnetsNotFound" || cond.ObservedGeneration != 2 {
		t.Errorf("no match: subnets %+v, condition %+v", nc.Status.Subnets, cond)
	}
	if res.RequeueAfter != time.Minute {
		t.Errorf("requeue after a lasting failure = %v, want the not-ready interval", res.RequeueAfter)
	}
}

func TestNeverResolvedAndThrottledIsFalse(t *testing.T) {
	c, ctl := newFixture(t, &stubResolver{amisErr: throttled})
	nc, _ := reconcileOnce(t, c, ctl)
	cond := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeAMIsReady)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "Throttled" || !strings.Contains(cond.Message, "RequestLimitExceeded") {
		t.Errorf("AMIsReady = %+v", cond)
	}
	ready := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeReady)
	if ready.Status != metav1.ConditionFalse || !strings.HasPrefix(ready.Message, "AMIsReady=False") {
		t.Errorf("Ready = %+v", ready)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		spec awsv1.EC2NodeClassSpec
		want string // substring of the problem; "" for none
	}{
		{"alias alone", awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}}, ""},
		{"alias and matching family", awsv1.EC2NodeClassSpec{AMIFamily: ptr.To("Bottlerocket"), AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}}, ""},
		{"alias and another family", awsv1.EC2NodeClassSpec{AMIFamily: ptr.To("AL2"), AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}}, "contradicts the alias"},
		{"family and ids", awsv1.EC2NodeClassSpec{AMIFamily: ptr.To("Custom"), AMISelectorTerms: []awsv1.AMISelectorTerm{{ID: "ami-1"}}}, ""},
		{"no family", awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{ID: "ami-1"}}}, "no AMI family"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := validate(&awsv1.EC2NodeClass{Spec: tt.spec})
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("validate = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHashCoversStaticFieldsOnly(t *testing.T) {
	base := awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
		Role:                "r",
		SubnetSelectorTerms: []awsv1.SubnetSelectorTerm{{ID: "subnet-1"}},
		AMISelectorTerms:    []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		Tags:                map[string]string{"team": "a"},
	}}
	baseHash, err := Hash(&base)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		edit    func(*awsv1.EC2NodeClassSpec)
		changes bool
	}{
		{"subnet selectors drift through status, not the hash", func(s *awsv1.EC2NodeClassSpec) { s.SubnetSelectorTerms[0].ID = "subnet-2" }, false},
		{"AMI selectors drift through status", func(s *awsv1.EC2NodeClassSpec) { s.AMISelectorTerms[0].Alias = "al2023@v20250715" }, false},
		{"tags", func(s *awsv1.EC2NodeClassSpec) { s.Tags["team"] = "b" }, true},
		{"user data", func(s *awsv1.EC2NodeClassSpec) { s.UserData = ptr.To("echo hi") }, true},
		{"detailed monitoring", func(s *awsv1.EC2NodeClassSpec) { s.DetailedMonitoring = ptr.To(true) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := base.DeepCopy()
			tt.edit(&nc.Spec)
			h, err := Hash(nc)
			if err != nil {
				t.Fatal(err)
			}
			if (h != baseHash) != tt.changes {
				t.Errorf("hash changed = %v, want %v", h != baseHash, tt.changes)
			}
		})
	}
}
