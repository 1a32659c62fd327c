package provider_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instance"
	"github.com/joinery-dev/joinery/cloudprovider/aws/provider"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

var (
	onDemand = []string{karpv1.CapacityTypeOnDemand}
	twoZones = []string{"us-west-2b", "us-west-2c"}
)

func pool() *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	return np
}

func TestCreateLaunchesAndResolvesTheNodeClaim(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	nc := nodeClaim("default-a", onDemand, []string{"c6i.large", "m5.xlarge"}, twoZones)

	got, err := e.p.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	insts := e.srv.Instances()
	if len(insts) != 1 {
		t.Fatalf("%d instances, want 1", len(insts))
	}
	inst := insts[0]
	if got.Status.ProviderID != "aws:///"+inst.Zone+"/"+inst.ID || got.Status.ImageID != inst.ImageID {
		t.Errorf("status %+v, instance %s in %s from %s", got.Status, inst.ID, inst.Zone, inst.ImageID)
	}
	for k, v := range map[string]string{
		corev1.LabelInstanceTypeStable: inst.InstanceType, corev1.LabelTopologyZone: inst.Zone, karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand,
		corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", karpv1.NodePoolLabelKey: "default",
		awsv1.LabelInstanceFamily: strings.Split(inst.InstanceType, ".")[0],
	} {
		if got.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, got.Labels[k], v)
		}
	}
	if got.Status.Capacity.Cpu().IsZero() || got.Status.Allocatable.Memory().IsZero() || got.Status.Allocatable.Pods().IsZero() {
		t.Errorf("capacity %v allocatable %v", got.Status.Capacity, got.Status.Allocatable)
	}
	if got.Annotations[awsv1.AnnotationEC2NodeClassHash] != "1111" || nc.Status.ProviderID != "" {
		t.Errorf("annotations %v; input modified: %v", got.Annotations, nc.Status.ProviderID)
	}
	for k, v := range map[string]string{"Name": nc.Name, awsv1.TagNodeClaim: nc.Name, awsv1.TagNodePool: "default", awsv1.TagEC2NodeClass: "default",
		"kubernetes.io/cluster/" + cluster: "owned", "eks:eks-cluster-name": cluster, "team": "a"} {
		if inst.Tags[k] != v {
			t.Errorf("instance tag %s = %q, want %q", k, inst.Tags[k], v)
		}
	}
	for _, want := range []string{"name: " + cluster, "karpenter.sh/unregistered", "karpenter.sh/nodepool=default", "maxPods"} {
		if !strings.Contains(inst.UserData, want) {
			t.Errorf("user data lacks %q:\n%s", want, inst.UserData)
		}
	}
	if inst.MetadataOptions.HTTPTokens != "required" || inst.MetadataOptions.HTTPPutResponseHopLimit != 1 || len(inst.BlockDeviceMappings) != 1 ||
		inst.BlockDeviceMappings[0].VolumeSizeGiB != 20 || len(inst.SecurityGroupIDs) == 0 {
		t.Errorf("launch settings: metadata %+v volumes %+v groups %v", inst.MetadataOptions, inst.BlockDeviceMappings, inst.SecurityGroupIDs)
	}

	// A retried Create (the status write was lost) gets the same instance.
	again, err := e.p.Create(ctx, nc)
	if err != nil || again.Status.ProviderID != got.Status.ProviderID || len(e.srv.Instances()) != 1 {
		t.Errorf("retried Create: %v %v, %d instances", again.Status.ProviderID, err, len(e.srv.Instances()))
	}
	// One template per image and pod capacity (c6i.large and m5.xlarge differ in pods); another
	// NodeClaim of the pool reuses them.
	templates := len(e.srv.LaunchTemplates())
	if templates != 2 {
		t.Errorf("%d launch templates, want 2", templates)
	}
	if _, err := e.p.Create(ctx, nodeClaim("default-b", onDemand, []string{"c6i.large", "m5.xlarge"}, twoZones)); err != nil {
		t.Fatal(err)
	}
	if n := len(e.srv.LaunchTemplates()); n != templates || e.srv.Calls(awsemulator.ServiceEC2, "CreateLaunchTemplate") != templates {
		t.Errorf("%d launch templates after a second NodeClaim, want the %d shared", n, templates)
	}
}

func TestCreateCapacityTypes(t *testing.T) {
	tests := []struct {
		name          string
		capacityTypes []string
		instanceType  string
		reserve       bool
		want          string
	}{
		{name: "spot preferred over on-demand", capacityTypes: []string{karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand}, instanceType: "c6i.large", want: awsemulator.CapacityTypeSpot},
		{name: "on-demand only", capacityTypes: onDemand, instanceType: "c6i.large", want: awsemulator.CapacityTypeOnDemand},
		{name: "reserved preferred", capacityTypes: []string{karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand}, instanceType: "c6i.2xlarge", reserve: true, want: awsemulator.CapacityTypeOnDemand},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reservation awsemulator.CapacityReservation
			e := newEnv(t, func(c *awsv1.EC2NodeClass) {
				if tt.reserve {
					c.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: awsv1.SelectorTags{"key3": "foobar"}}}
				}
			})
			if tt.reserve {
				for _, cr := range e.srv.CapacityReservations() {
					if cr.Tags["key3"] == "foobar" {
						reservation = cr
					}
				}
			}
			got, err := e.p.Create(context.Background(), nodeClaim("default-a", tt.capacityTypes, []string{tt.instanceType}, nil))
			if err != nil {
				t.Fatal(err)
			}
			inst := e.srv.Instances()[0]
			if inst.Lifecycle != tt.want || got.Labels[karpv1.CapacityTypeLabelKey] != tt.capacityTypes[0] {
				t.Errorf("launched %s, label %s; want %s / %s", inst.Lifecycle, got.Labels[karpv1.CapacityTypeLabelKey], tt.want, tt.capacityTypes[0])
			}
			if tt.reserve && (inst.CapacityReservationID != reservation.ID || got.Labels[awsv1.LabelCapacityReservationID] != reservation.ID) {
				t.Errorf("reservation: instance %q label %q, want %s", inst.CapacityReservationID, got.Labels[awsv1.LabelCapacityReservationID], reservation.ID)
			}
		})
	}
}

func TestCreateFailures(t *testing.T) {
	tests := []struct {
		name  string
		setup func(e *env)
		check func(t *testing.T, e *env, got *karpv1.NodeClaim, err error)
	}{
		{
			name: "insufficient capacity on the cheapest: the next offering launches and the refused one is recorded",
			setup: func(e *env) {
				e.srv.SetInsufficientCapacity(awsemulator.CapacityTypeOnDemand, "c6i.large", "us-west-2b")
			},
			check: func(t *testing.T, e *env, got *karpv1.NodeClaim, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if got.Labels[corev1.LabelTopologyZone] != "us-west-2c" {
					t.Errorf("launched in %s, want us-west-2c", got.Labels[corev1.LabelTopologyZone])
				}
				refused := cloudprovider.OfferingKey{CapacityType: karpv1.CapacityTypeOnDemand, InstanceType: "c6i.large", Zone: "us-west-2b"}
				if !e.recorder.has(refused) {
					t.Errorf("%s not recorded unavailable: %v", refused, e.recorder.marked)
				}
				its, err := e.p.GetInstanceTypes(context.Background(), pool())
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range its {
					for _, o := range it.Offerings {
						if it.Name == "c6i.large" && o.Zone() == "us-west-2b" && o.CapacityType() == karpv1.CapacityTypeOnDemand && o.Available {
							t.Errorf("refused offering still available")
						}
					}
				}
				// The next launch does not ask for it again.
				if _, err := e.p.Create(context.Background(), nodeClaim("default-b", onDemand, []string{"c6i.large"}, twoZones)); err != nil {
					t.Fatal(err)
				}
				if n := e.srv.Calls(awsemulator.ServiceEC2, "CreateFleet"); n != 2 {
					t.Errorf("CreateFleet called %d times, want 2", n)
				}
			},
		},
		{
			name: "every offering refused: insufficient capacity",
			setup: func(e *env) {
				for _, z := range twoZones {
					e.srv.SetInsufficientCapacity(awsemulator.CapacityTypeOnDemand, "c6i.large", z)
				}
			},
			check: func(t *testing.T, e *env, _ *karpv1.NodeClaim, err error) {
				if !cloudprovider.IsInsufficientCapacityError(err) {
					t.Fatalf("err = %v, want insufficient capacity", err)
				}
				refused := cloudprovider.RefusedOfferings(err)
				for _, z := range twoZones {
					key := cloudprovider.OfferingKey{CapacityType: karpv1.CapacityTypeOnDemand, InstanceType: "c6i.large", Zone: z}
					if !e.recorder.has(key) {
						t.Errorf("c6i.large in %s not recorded", z)
					}
					if !slices.Contains(refused, key) {
						t.Errorf("the error does not name %s among the refused offerings %v", key, refused)
					}
				}
				// Nothing left to try: no second fleet request.
				_, err = e.p.Create(context.Background(), nodeClaim("default-b", onDemand, []string{"c6i.large"}, twoZones))
				if !cloudprovider.IsInsufficientCapacityError(err) || e.srv.Calls(awsemulator.ServiceEC2, "CreateFleet") != 1 {
					t.Errorf("second Create: %v after %d fleet calls", err, e.srv.Calls(awsemulator.ServiceEC2, "CreateFleet"))
				}
			},
		},
		{
			name:  "throttled, then recovered",
			setup: func(e *env) { e.srv.Inject(awsemulator.Throttling.For(awsemulator.ServiceEC2, "CreateFleet", 2)) },
			check: func(t *testing.T, e *env, got *karpv1.NodeClaim, err error) {
				if err != nil || got.Status.ProviderID == "" || e.srv.Calls(awsemulator.ServiceEC2, "CreateFleet") != 3 {
					t.Errorf("Create: %v, %d fleet calls", err, e.srv.Calls(awsemulator.ServiceEC2, "CreateFleet"))
				}
			},
		},
		{
			name:  "not authorized: a CreateError with the code",
			setup: func(e *env) { e.srv.Inject(awsemulator.Unauthorized.For(awsemulator.ServiceEC2, "CreateFleet", 0)) },
			check: func(t *testing.T, e *env, _ *karpv1.NodeClaim, err error) {
				createErr, ok := cloudprovider.AsCreateError(err)
				if !ok || createErr.ConditionReason != "UnauthorizedOperation" || e.srv.Calls(awsemulator.ServiceEC2, "CreateFleet") != 1 {
					t.Errorf("err = %v, want a CreateError UnauthorizedOperation after one call", err)
				}
			},
		},
		{
			name: "class not ready",
			setup: func(e *env) {
				class := &awsv1.EC2NodeClass{}
				_ = e.kube.Get(context.Background(), client.ObjectKey{Name: "default"}, class)
				class.Status.Conditions[0].Status = metav1.ConditionFalse
				if err := e.kube.Update(context.Background(), class); err != nil {
					panic(err)
				}
			},
			check: func(t *testing.T, e *env, _ *karpv1.NodeClaim, err error) {
				if !cloudprovider.IsNodeClassNotReadyError(err) {
					t.Errorf("err = %v, want NodeClassNotReady", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.setup(e)
			got, err := e.p.Create(context.Background(), nodeClaim("default-a", onDemand, []string{"c6i.large"}, twoZones))
			tt.check(t, e, got, err)
		})
	}
}

func TestDeleteGetList(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	got, err := e.p.Create(ctx, nodeClaim("default-a", onDemand, []string{"c6i.large"}, twoZones))
	if err != nil {
		t.Fatal(err)
	}
	// An instance of another cluster in the same account.
	other := instance.New(e.ec2, instance.Options{ClusterName: "other"})
	req := instance.LaunchRequest{ClientToken: "other", CapacityType: karpv1.CapacityTypeOnDemand,
		Templates: []instance.TemplateConfig{{TemplateName: e.srv.LaunchTemplates()[0].Name, Overrides: []instance.Override{{InstanceType: "c6i.large", Zone: "us-west-2b", SubnetID: e.srv.Instances()[0].SubnetID}}}},
		Tags:      instance.Tags("other", "other-a", "default", "default", nil)}
	if _, err := other.Launch(ctx, req); err != nil {
		t.Fatal(err)
	}

	listed, err := e.p.List(ctx)
	if err != nil || len(listed) != 1 || listed[0].Status.ProviderID != got.Status.ProviderID || listed[0].Name != "default-a" ||
		listed[0].Labels[karpv1.NodePoolLabelKey] != "default" || listed[0].CreationTimestamp.IsZero() {
		t.Fatalf("List = %+v %v, want only %s", listed, err, got.Status.ProviderID)
	}
	found, err := e.p.Get(ctx, got.Status.ProviderID)
	if err != nil || found.Labels[corev1.LabelInstanceTypeStable] != "c6i.large" || found.Status.ImageID != got.Status.ImageID {
		t.Errorf("Get = %+v %v", found, err)
	}

	if err := e.p.Delete(ctx, got); err != nil {
		t.Fatalf("first Delete: %v", err)
	}
	if err := e.p.Delete(ctx, got); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("second Delete: %v, want NodeClaimNotFound", err)
	}
	if _, err := e.p.Get(ctx, got.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get after termination: %v, want NodeClaimNotFound", err)
	}
	unknown := got.DeepCopy()
	unknown.Status.ProviderID = "aws:///us-west-2b/i-0123456789abcdef0"
	if err := e.p.Delete(ctx, unknown); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Delete of an unknown instance: %v, want NodeClaimNotFound", err)
	}
	if listed, _ := e.p.List(ctx); len(listed) != 0 {
		t.Errorf("List after termination = %d instances", len(listed))
	}
}

func TestIsDrifted(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *awsv1.EC2NodeClass, inst awsemulator.Instance)
		want   cloudprovider.DriftReason
	}{
		{name: "nothing changed"},
		{name: "AMI no longer resolved", want: provider.DriftAMI, mutate: func(c *awsv1.EC2NodeClass, inst awsemulator.Instance) {
			var kept []awsv1.AMI
			for _, a := range c.Status.AMIs {
				if a.ID != inst.ImageID {
					kept = append(kept, a)
				}
			}
			c.Status.AMIs = kept
		}},
		{name: "subnet no longer selected", want: provider.DriftSubnet, mutate: func(c *awsv1.EC2NodeClass, inst awsemulator.Instance) {
			var kept []awsv1.Subnet
			for _, s := range c.Status.Subnets {
				if s.ID != inst.SubnetID {
					kept = append(kept, s)
				}
			}
			c.Status.Subnets = kept
		}},
		{name: "security group no longer selected", want: provider.DriftSecurityGroup, mutate: func(c *awsv1.EC2NodeClass, inst awsemulator.Instance) {
			c.Status.SecurityGroups = c.Status.SecurityGroups[1:]
		}},
		{name: "static settings changed", want: provider.DriftNodeClass, mutate: func(c *awsv1.EC2NodeClass, inst awsemulator.Instance) {
			c.Annotations[awsv1.AnnotationEC2NodeClassHash] = "2222"
		}},
		{name: "hash of another version", mutate: func(c *awsv1.EC2NodeClass, inst awsemulator.Instance) {
			c.Annotations[awsv1.AnnotationEC2NodeClassHash] = "2222"
			c.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = "joinery-v2"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			nc, err := e.p.Create(ctx, nodeClaim("default-a", onDemand, []string{"c6i.large"}, twoZones))
			if err != nil {
				t.Fatal(err)
			}
			if tt.mutate != nil {
				class := &awsv1.EC2NodeClass{}
				if err := e.kube.Get(ctx, client.ObjectKey{Name: "default"}, class); err != nil {
					t.Fatal(err)
				}
				tt.mutate(class, e.srv.Instances()[0])
				if err := e.kube.Update(ctx, class); err != nil {
					t.Fatal(err)
				}
			}
			got, err := e.p.IsDrifted(ctx, nc)
			if err != nil || got != tt.want {
				t.Errorf("IsDrifted = %q, %v; want %q", got, err, tt.want)
			}
		})
	}

	t.Run("capacity reservation gone", func(t *testing.T) {
		e := newEnv(t, func(c *awsv1.EC2NodeClass) {
			c.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: awsv1.SelectorTags{"key3": "foobar"}}}
		})
		ctx := context.Background()
		nc, err := e.p.Create(ctx, nodeClaim("default-a", []string{karpv1.CapacityTypeReserved}, []string{"c6i.2xlarge"}, nil))
		if err != nil {
			t.Fatal(err)
		}
		class := &awsv1.EC2NodeClass{}
		_ = e.kube.Get(ctx, client.ObjectKey{Name: "default"}, class)
		class.Status.CapacityReservations = nil
		if err := e.kube.Update(ctx, class); err != nil {
			t.Fatal(err)
		}
		if got, err := e.p.IsDrifted(ctx, nc); err != nil || got != provider.DriftCapacityReservation {
			t.Errorf("IsDrifted = %q, %v; want %q", got, err, provider.DriftCapacityReservation)
		}
	})
}

func TestProviderIdentity(t *testing.T) {
	e := newEnv(t)
	if e.p.Name() != "aws" {
		t.Errorf("Name = %s", e.p.Name())
	}
	classes := e.p.GetSupportedNodeClasses()
	if len(classes) != 1 {
		t.Errorf("GetSupportedNodeClasses = %v", classes)
	} else if _, ok := classes[0].(*awsv1.EC2NodeClass); !ok {
		t.Errorf("GetSupportedNodeClasses = %T, want an EC2NodeClass", classes[0])
	}
	if n := len(e.p.RepairPolicies()); n != len(cloudprovider.KubeletRepairPolicies())+len(cloudprovider.NodeMonitoringAgentRepairPolicies()) {
		t.Errorf("%d repair policies", n)
	}
}

// TestCreateWithOverlay: with a NodeOverlay making m5.xlarge the cheapest, an on-demand
// NodeClaim that allows c6i.large and m5.xlarge launches m5.xlarge (a prioritized fleet in
// joinery's price order, where EC2's lowest price would pick c6i.large), and the overlay's
// capacity is in the NodeClaim's status and in GetInstanceTypes.
func TestCreateWithOverlay(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	allowed := []string{"c6i.large", "m5.xlarge"}
	plain, err := e.p.Create(ctx, nodeClaim("plain", onDemand, allowed, twoZones))
	if err != nil {
		t.Fatal(err)
	}
	if typ := plain.Labels[corev1.LabelInstanceTypeStable]; typ != "c6i.large" {
		t.Fatalf("without an overlay launched %s, want c6i.large (the cheaper): the test's premise", typ)
	}

	overlays := cloudprovider.NewNodeOverlays()
	overlays.Set(&v1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "m5-discount"},
		Spec: v1alpha1.NodeOverlaySpec{
			Requirements: []v1alpha1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5"}}},
			Price:        ptrTo("0.001"),
			Capacity:     corev1.ResourceList{"hugepages-2Mi": resource.MustParse("1Gi")},
		},
	})
	p := e.newProvider(overlays)
	got, err := p.Create(ctx, nodeClaim("overlaid", onDemand, allowed, twoZones))
	if err != nil {
		t.Fatal(err)
	}
	if typ := got.Labels[corev1.LabelInstanceTypeStable]; typ != "m5.xlarge" {
		t.Errorf("with the overlay launched %s, want m5.xlarge", typ)
	}
	if q := got.Status.Allocatable["hugepages-2Mi"]; q.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("allocatable hugepages-2Mi = %s, want the overlay's 1Gi", q.String())
	}
	its, err := p.GetInstanceTypes(ctx, pool())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		if it.Name == "m5.xlarge" && it.Offerings.Cheapest().Price != 0.001 {
			t.Errorf("GetInstanceTypes prices m5.xlarge at %v, want 0.001", it.Offerings.Cheapest().Price)
		}
	}
}
