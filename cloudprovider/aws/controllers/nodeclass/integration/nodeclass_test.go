package integration

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	ncctrl "github.com/joinery-dev/joinery/cloudprovider/aws/controllers/nodeclass"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

var discoveryTags = awsv1.SelectorTags{"karpenter.sh/discovery": awsemulator.DefaultClusterName}

// class is a class that resolves in the seeded emulator: AL2023 through an alias, the
// cluster's discovery tags, and the node role.
func class(name string, edit func(*awsv1.EC2NodeClassSpec)) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                             "KarpenterNodeRole-" + awsemulator.DefaultClusterName,
			AMISelectorTerms:                 []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:              []awsv1.SubnetSelectorTerm{{Tags: discoveryTags}},
			SecurityGroupSelectorTerms:       []awsv1.SecurityGroupSelectorTerm{{Tags: discoveryTags}},
			CapacityReservationSelectorTerms: []awsv1.CapacityReservationSelectorTerm{{Tags: discoveryTags}},
		},
	}
	if edit != nil {
		edit(&nc.Spec)
	}
	return nc
}

var allConditions = []string{
	awsv1.ConditionTypeSubnetsReady, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeAMIsReady,
	awsv1.ConditionTypeInstanceProfileReady, awsv1.ConditionTypeCapacityReservationsReady,
	awsv1.ConditionTypeValidationSucceeded, awsv1.ConditionTypeReady,
}

func TestReadyClassHasItsWholeResolution(t *testing.T) {
	e := start(t)
	e.create(t, class("ready", nil))
	nc := e.waitForClass(t, "ready", "Ready=True", conditionIs(awsv1.ConditionTypeReady, "True", ""))

	for _, condType := range allConditions {
		c := meta.FindStatusCondition(nc.Status.Conditions, condType)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != nc.Generation || c.Reason == "" || c.LastTransitionTime.IsZero() {
			t.Errorf("condition %s = %+v", condType, c)
		}
	}
	if len(nc.Status.Subnets) != 3 || nc.Status.Subnets[0].Zone != "us-west-2c" || nc.Status.Subnets[0].ZoneID != "usw2-az3" {
		t.Errorf("subnets = %+v, want the 3 private subnets, us-west-2c (most free IPs) first", nc.Status.Subnets)
	}
	if len(nc.Status.SecurityGroups) != 2 {
		t.Errorf("security groups = %+v", nc.Status.SecurityGroups)
	}
	if len(nc.Status.AMIs) != 5 {
		t.Errorf("AMIs = %d, want the 5 AL2023 variants", len(nc.Status.AMIs))
	}
	for _, a := range nc.Status.AMIs {
		if !strings.Contains(a.Name, "-"+e.version+"-") {
			t.Errorf("AMI %s is not built for the API server's Kubernetes %s", a.Name, e.version)
		}
	}
	if len(nc.Status.CapacityReservations) != 2 {
		t.Errorf("capacity reservations = %+v", nc.Status.CapacityReservations)
	}
	if want := e.resolver.InstanceProfileName(nc); nc.Status.InstanceProfile != want {
		t.Errorf("instance profile = %q, want %q", nc.Status.InstanceProfile, want)
	}
	if profile, ok := e.srv.InstanceProfile(nc.Status.InstanceProfile); !ok || len(profile.Roles) != 1 {
		t.Errorf("managed profile in AWS = %+v (exists %v)", profile, ok)
	}
	if !slices.Contains(nc.Finalizers, ncctrl.TerminationFinalizer) {
		t.Errorf("finalizers = %v", nc.Finalizers)
	}
	hash, err := ncctrl.Hash(nc)
	if err != nil {
		t.Fatal(err)
	}
	if nc.Annotations[awsv1.AnnotationEC2NodeClassHash] != hash || nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != ncctrl.HashVersion {
		t.Errorf("annotations = %v, want hash %s version %s", nc.Annotations, hash, ncctrl.HashVersion)
	}

	// A change to a hashed field moves the hash; the resolution is unaffected.
	nc.Spec.Tags = map[string]string{"team": "a"}
	if err := e.client.Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	e.waitForClass(t, "ready", "a new hash", func(got *awsv1.EC2NodeClass) bool {
		return got.Annotations[awsv1.AnnotationEC2NodeClassHash] != hash && conditionIs(awsv1.ConditionTypeReady, "True", "")(got) &&
			meta.FindStatusCondition(got.Status.Conditions, awsv1.ConditionTypeReady).ObservedGeneration == got.Generation
	})
}

func TestConditionsExplainFailures(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*awsv1.EC2NodeClassSpec)
		condition string
		reason    string
		// message must contain every one of these.
		message []string
	}{
		{
			name: "no subnets match",
			edit: func(s *awsv1.EC2NodeClassSpec) {
				s.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: awsv1.SelectorTags{"Name": "no-such-subnet"}}}
			},
			condition: awsv1.ConditionTypeSubnetsReady, reason: "SubnetsNotFound",
			message: []string{"no subnets matched"},
		},
		{
			name: "no security groups match",
			edit: func(s *awsv1.EC2NodeClassSpec) {
				s.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: "no-such-group"}}
			},
			condition: awsv1.ConditionTypeSecurityGroupsReady, reason: "SecurityGroupsNotFound",
			message: []string{"no security groups matched"},
		},
		{
			name:      "an alias AWS publishes no AMIs for (AL2 ended at Kubernetes 1.32)",
			edit:      func(s *awsv1.EC2NodeClassSpec) { s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2@latest"}} },
			condition: awsv1.ConditionTypeAMIsReady, reason: "AMINotFound",
			message: []string{"alias al2@latest has no images", "/amazon-linux-2/recommended/image_id"},
		},
		{
			name: "a missing SSM parameter",
			edit: func(s *awsv1.EC2NodeClassSpec) {
				s.AMIFamily = ptrTo(awsv1.AMIFamilyAL2023)
				s.AMISelectorTerms = []awsv1.AMISelectorTerm{{SSMParameter: "/team/missing-ami"}}
			},
			condition: awsv1.ConditionTypeAMIsReady, reason: "AMINotFound",
			message: []string{"ParameterNotFound", "/team/missing-ami"},
		},
		{
			name:      "a missing role",
			edit:      func(s *awsv1.EC2NodeClassSpec) { s.Role = "NoSuchRole" },
			condition: awsv1.ConditionTypeInstanceProfileReady, reason: "InstanceProfileNotFound",
			message: []string{"NoSuchEntity", "NoSuchRole"},
		},
		{
			name:      "a missing instance profile",
			edit:      func(s *awsv1.EC2NodeClassSpec) { s.Role = ""; s.InstanceProfile = ptrTo("NoSuchProfile") },
			condition: awsv1.ConditionTypeInstanceProfileReady, reason: "InstanceProfileNotFound",
			message: []string{"NoSuchEntity", "NoSuchProfile"},
		},
	}
	e := start(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "failing-" + string(rune('a'+i))
			e.create(t, class(name, tt.edit))
			nc := e.waitForClass(t, name, tt.condition+"=False", conditionIs(tt.condition, "False", tt.reason))
			c := meta.FindStatusCondition(nc.Status.Conditions, tt.condition)
			for _, want := range tt.message {
				if !strings.Contains(c.Message, want) {
					t.Errorf("%s message %q does not mention %q", tt.condition, c.Message, want)
				}
			}
			ready := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeReady)
			if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != tt.reason || !strings.HasPrefix(ready.Message, tt.condition+"=False: ") {
				t.Errorf("Ready = %+v, want False naming %s", ready, tt.condition)
			}
			// The other parts still resolve.
			for _, other := range allConditions {
				if other != tt.condition && other != awsv1.ConditionTypeReady && !conditionIs(other, "True", "")(nc) {
					t.Errorf("%s is not True: %+v", other, meta.FindStatusCondition(nc.Status.Conditions, other))
				}
			}
			e.waitForEvent(t, name, tt.reason)
		})
	}
}

func TestThrottledThenRecovered(t *testing.T) {
	e := start(t)
	// Three throttled answers use up the SDK's attempts of the first resolution.
	e.srv.Inject(awsemulator.Throttling.For(awsemulator.ServiceEC2, "DescribeSubnets", 3))
	e.create(t, class("throttled", nil))
	nc := e.waitForClass(t, "throttled", "Ready=True after the throttling", conditionIs(awsv1.ConditionTypeReady, "True", ""))
	if len(nc.Status.Subnets) != 3 {
		t.Errorf("subnets = %+v", nc.Status.Subnets)
	}
	if ev := e.waitForEvent(t, "throttled", "Throttled"); !strings.Contains(ev.Note, "RequestLimitExceeded") {
		t.Errorf("the Throttled event %q does not name RequestLimitExceeded", ev.Note)
	}
	if calls := e.srv.Calls(awsemulator.ServiceEC2, "DescribeSubnets"); calls < 4 {
		t.Errorf("DescribeSubnets calls = %d, want the 3 throttled and at least one more", calls)
	}
}

func TestDeletionWaitsForNodeClaims(t *testing.T) {
	e := start(t)
	e.create(t, class("in-use", nil))
	nc := e.waitForClass(t, "in-use", "Ready=True", conditionIs(awsv1.ConditionTypeReady, "True", ""))
	profile := nc.Status.InstanceProfile

	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "in-use-claim"},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "in-use"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{},
		},
	}
	e.create(t, claim)

	if err := e.client.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	e.waitForClass(t, "in-use", "a deletion waiting on its NodeClaim", func(got *awsv1.EC2NodeClass) bool {
		for _, ev := range e.events(t, "in-use") {
			if ev.Reason == "WaitingOnNodeClaimTermination" && strings.Contains(ev.Note, "in-use-claim") {
				return !got.DeletionTimestamp.IsZero()
			}
		}
		return false
	})
	if _, ok := e.srv.InstanceProfile(profile); !ok {
		t.Fatal("the instance profile was deleted while a NodeClaim still uses the class")
	}
	select {
	case name := <-e.cleanedUp:
		t.Fatalf("OnDelete ran for %s while a NodeClaim still uses the class", name)
	default:
	}

	if err := e.client.Delete(t.Context(), claim); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := waitFor(ctx, func() (bool, error) {
		err := e.client.Get(ctx, client.ObjectKey{Name: "in-use"}, &awsv1.EC2NodeClass{})
		return err != nil, client.IgnoreNotFound(err)
	}); err != nil {
		t.Fatalf("the class was not deleted after its NodeClaim: %v", err)
	}
	if _, ok := e.srv.InstanceProfile(profile); ok {
		t.Error("the managed instance profile outlived its class")
	}
	select {
	case name := <-e.cleanedUp:
		if name != "in-use" {
			t.Errorf("OnDelete ran for %q, want in-use", name)
		}
	default:
		t.Error("the class went without its OnDelete cleanup (its launch templates)")
	}
}

func ptrTo[T any](v T) *T { return &v }
