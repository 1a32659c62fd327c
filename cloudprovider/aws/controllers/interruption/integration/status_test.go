package integration

import (
	"context"
	"encoding/base64"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/controllers/interruption"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// startManager runs the interruption controller and its status poller against srv until the
// test ends.
func startManager(t *testing.T, srv *awsemulator.Server, poller interruption.StatusPollerOptions) {
	t.Helper()
	mgr, err := ctrl.NewManager(cluster.RESTConfig(), ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := interruption.Setup(mgr, srv.Config(), interruption.SetupOptions{Queue: queueName, Namespace: namespace, StatusPoller: poller}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// setCapacityType relabels a claimOn NodeClaim as bought with another capacity type.
func setCapacityType(ctx context.Context, t *testing.T, nc *karpv1.NodeClaim, capacityType string) {
	t.Helper()
	patch := []byte(`{"metadata":{"labels":{"` + karpv1.CapacityTypeLabelKey + `":"` + capacityType + `"}}}`)
	if err := admin.Patch(ctx, nc, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
}

func TestCapacityReservationInterruptionThroughTheQueue(t *testing.T) {
	ctx := context.Background()
	srv := awsemulator.NewServer(awsemulator.Options{})
	defer srv.Close()
	if _, err := srv.CreateQueue(queueName); err != nil {
		t.Fatal(err)
	}
	startManager(t, srv, interruption.StatusPollerOptions{})

	reserved := claimOn(ctx, t, "reserved-claim", "i-0aaaaaaaaaaaaaaa1")
	setCapacityType(ctx, t, reserved, karpv1.CapacityTypeReserved)
	if _, err := srv.SendEvent(queueName, srv.CapacityReservationInterruption("i-0aaaaaaaaaaaaaaa1")); err != nil {
		t.Fatal(err)
	}

	eventually(t, "the interrupted reservation's nodeclaim deleted", func() bool { return deleting(ctx, t, reserved) })
	eventually(t, "the reserved offering marked unavailable", func() bool {
		var cm corev1.ConfigMap
		if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: cloudprovider.UnavailableOfferingsConfigMap}, &cm); err != nil {
			return false
		}
		offering := cloudprovider.OfferingKey{CapacityType: karpv1.CapacityTypeReserved, InstanceType: "m5.large", Zone: "us-west-2a"}
		_, ok := cloudprovider.ParseUnavailableOfferings(&cm, time.Now())[offering]
		return ok
	})
	want := []string{interruption.ReasonCapacityReservationInterrupted, interruption.ReasonTerminatingOnInterruption}
	for _, kind := range []string{"NodeClaim", "Node"} {
		eventually(t, kind+" events of the capacity reservation interruption", func() bool {
			return slices.Equal(reasons(ctx, t, kind, reserved.Name), want)
		})
	}
}

// launcher launches running instances in the emulator through its EC2 API.
type launcher struct {
	client   *ec2.Client
	subnet   string
	template string
}

func newLauncher(ctx context.Context, t *testing.T, srv *awsemulator.Server) launcher {
	t.Helper()
	l := launcher{client: ec2.NewFromConfig(srv.Config()), template: "status-lt"}
	for _, sn := range srv.Subnets() {
		if sn.Zone == "us-west-2a" && sn.Tags["karpenter.sh/discovery"] == awsemulator.DefaultClusterName {
			l.subnet = sn.ID
		}
	}
	if _, err := l.client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(l.template),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId: aws.String(srv.Images("custom-ami-amd64")[0].ID), SecurityGroupIds: []string{srv.SecurityGroups()[0].ID},
			UserData: aws.String(base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\n"))),
		},
	}); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l launcher) launch(ctx context.Context, t *testing.T) string {
	t.Helper()
	out, err := l.client.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(l.template), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", SubnetId: aws.String(l.subnet)}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
	})
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("CreateFleet = %+v, %v", out, err)
	}
	return out.Instances[0].InstanceIds[0]
}

// unhealthyTotal reads karpenter_interruption_instance_status_unhealthy_total for category.
func unhealthyTotal(t *testing.T, category string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "karpenter_interruption_instance_status_unhealthy_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "category" && l.GetValue() == category {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// An instance whose system status check has failed for longer than the threshold is
// terminated at once (its termination deadline is now), and counted once; one that failed
// only just now is left alone.
func TestFailedStatusCheckTerminatesForcefully(t *testing.T) {
	ctx := context.Background()
	srv := awsemulator.NewServer(awsemulator.Options{})
	defer srv.Close()
	srv.SetInstanceTransitions(0, 0)
	if _, err := srv.CreateQueue(queueName); err != nil {
		t.Fatal(err)
	}
	l := newLauncher(ctx, t, srv)
	brokenID, flakyID := l.launch(ctx, t), l.launch(ctx, t)
	broken := claimOn(ctx, t, "broken-claim", brokenID)
	flaky := claimOn(ctx, t, "flaky-claim", flakyID)
	if err := srv.SetStatusCheckFailed(brokenID, awsemulator.StatusCheckSystem, time.Now().Add(-5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetStatusCheckFailed(flakyID, awsemulator.StatusCheckInstance, time.Now()); err != nil {
		t.Fatal(err)
	}
	before := unhealthyTotal(t, interruption.CategorySystemStatus)
	startManager(t, srv, interruption.StatusPollerOptions{Interval: 200 * time.Millisecond})

	eventually(t, "the broken instance's nodeclaim deleted", func() bool { return deleting(ctx, t, broken) })
	var got karpv1.NodeClaim
	if err := admin.Get(ctx, client.ObjectKeyFromObject(broken), &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; !ok {
		t.Errorf("annotations %v lack the termination deadline of a forceful termination", got.Annotations)
	}
	eventually(t, "NodeClaim events of the failed check", func() bool {
		return slices.Equal(reasons(ctx, t, "NodeClaim", broken.Name), []string{interruption.ReasonInstanceUnhealthy, interruption.ReasonTerminatingOnInterruption})
	})
	// Several polls later the instance is counted once and the young failure is still spared.
	pollsBefore := srv.Calls(awsemulator.ServiceEC2, "DescribeInstanceStatus")
	eventually(t, "three more polls", func() bool { return srv.Calls(awsemulator.ServiceEC2, "DescribeInstanceStatus") >= pollsBefore+3 })
	if n := unhealthyTotal(t, interruption.CategorySystemStatus) - before; n != 1 {
		t.Errorf("unhealthy SystemStatus counted %v times, want 1", n)
	}
	if deleting(ctx, t, flaky) {
		t.Error("an instance impaired for less than the threshold was terminated")
	}
}
