package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/awsemulator"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// TestZonalShiftKeepsNodeClaimsOutOfTheZone: the local cluster runs both binaries with
// ENABLE_ZONAL_SHIFT. While an ARC zonal shift moves the cluster away from us-west-2a, pods
// that must spread evenly over the zones of a NodePool of us-west-2a and us-west-2b get a
// NodeClaim in us-west-2b only, and the pod the spread sends to us-west-2a is refused; once
// the shift is cancelled, a pod that needs us-west-2a gets a NodeClaim there, and its batch
// places the refused pod there too. The shift is started and cancelled through the ARC SDK, as an operator would.
func TestZonalShiftKeepsNodeClaimsOutOfTheZone(t *testing.T) {
	aws := emulator(t)
	env.RequireLocal(t)
	const shifted, other = "us-west-2a", "us-west-2b"
	pool := framework.UniqueName("zonalshift")
	createNodeClass(t, pool)
	createNodePool(t, pool, pool, `{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}`,
		fmt.Sprintf(`{key: topology.kubernetes.io/zone, operator: In, values: [%s, %s]}`, shifted, other))

	cfg := emulatorConfig(t)
	arc := arczonalshift.NewFromConfig(cfg)
	started, err := arc.StartZonalShift(t.Context(), &arczonalshift.StartZonalShiftInput{
		ResourceIdentifier: awssdk.String(clusterARN(t)), AwayFrom: awssdk.String(zoneID(t, cfg, shifted)),
		ExpiresIn: awssdk.String("1h"), Comment: awssdk.String("e2e " + pool),
	})
	if err != nil {
		t.Fatalf("starting a zonal shift away from %s: %v", shifted, err)
	}
	cancel := func(ctx context.Context) error {
		_, err := arc.CancelZonalShift(ctx, &arczonalshift.CancelZonalShiftInput{ZonalShiftId: started.ZonalShiftId})
		var apiErr smithy.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode() == "ConflictException" {
			return nil // already cancelled
		}
		return err
	}
	t.Cleanup(func() {
		if err := cancel(context.Background()); err != nil {
			t.Errorf("cancelling the zonal shift: %v", err)
		}
	})
	awaitZonalShiftsListed(t, aws)

	ns := env.Namespace(t)
	createSpreadPods(t, ns, pool, 0, 2)
	var waiting string
	framework.Eventually(t, runningTimeout, "one pod running, the one its spread sends to "+shifted+" refused", func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: groupLabel + "=" + pool})
		if err != nil {
			return false, err
		}
		var run, pending []corev1.Pod
		for _, pod := range pods.Items {
			if pod.Status.Phase == corev1.PodRunning {
				run = append(run, pod)
			} else {
				pending = append(pending, pod)
			}
		}
		if len(run) != 1 || len(pending) != 1 {
			return false, fmt.Errorf("%d running, %d pending", len(run), len(pending))
		}
		notes, err := env.EventNotes(ctx, "FailedScheduling", pending[0].Name)
		if err != nil {
			return false, err
		}
		for _, note := range notes {
			if strings.HasPrefix(note, "Failed to schedule pod,") {
				waiting = pending[0].Name
				return true, nil
			}
		}
		return false, fmt.Errorf("pod %s pending, not refused by the Provisioner yet (events %q)", pending[0].Name, notes)
	})
	for _, inst := range live(instancesOf(t, pool)) {
		if inst.Zone != other {
			t.Fatalf("instance %s launched in %s while traffic is shifted away from %s", inst.ID, inst.Zone, shifted)
		}
	}

	if err := cancel(t.Context()); err != nil {
		t.Fatalf("cancelling the zonal shift: %v", err)
	}
	awaitZonalShiftsListed(t, aws)
	// A pod that must run in us-west-2a gets a NodeClaim there again.
	spec := framework.GroupPodSpec(pool, "1", "256Mi")
	spec.NodeSelector[corev1.LabelTopologyZone] = shifted
	zonal := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pool + "-zonal", Namespace: ns, Labels: map[string]string{groupLabel: pool}}, Spec: spec}
	if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), zonal, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Its batch plans the refused pod again too.
	for _, name := range []string{zonal.Name, waiting} {
		pod := env.AwaitPodRunning(t, ns, name, runningTimeout)
		node, err := env.Client.CoreV1().Nodes().Get(t.Context(), pod.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if zone := node.Labels[corev1.LabelTopologyZone]; zone != shifted {
			t.Errorf("pod %s runs in %s after the shift ended, want %s", pod.Name, zone, shifted)
		}
	}
}

// awaitZonalShiftsListed waits until joinery-controller and joinery-scheduler have each
// listed the zonal shifts twice since it was called: the first listing may have begun before
// the change, the second began after it and its answer was applied before it was sent.
func awaitZonalShiftsListed(t *testing.T, aws *awsemulator.AdminClient) {
	t.Helper()
	for _, key := range []string{localcluster.ControllerAWSAccessKey, localcluster.SchedulerAWSAccessKey} {
		before, err := aws.CallsBy(t.Context(), awsemulator.ServiceARC, "ListZonalShifts", key)
		if err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, runningTimeout, "zonal shifts listed with "+key, func(ctx context.Context) (bool, error) {
			n, err := aws.CallsBy(ctx, awsemulator.ServiceARC, "ListZonalShifts", key)
			if err != nil {
				return false, err
			}
			if n < before+2 {
				return false, fmt.Errorf("%d listings since, want 2", n-before)
			}
			return true, nil
		})
	}
}

// clusterARN is the local cluster's EKS cluster, the resource its zonal shifts name.
func clusterARN(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", localcluster.AWSRegion, awsemulator.AccountID, localcluster.AWSClusterName)
}

// zoneID is zone's ID, the name ARC knows zones by.
func zoneID(t *testing.T, cfg awssdk.Config, zone string) string {
	t.Helper()
	out, err := ec2.NewFromConfig(cfg).DescribeAvailabilityZones(t.Context(), &ec2.DescribeAvailabilityZonesInput{ZoneNames: []string{zone}})
	if err != nil || len(out.AvailabilityZones) != 1 {
		t.Fatalf("describing zone %s: %v", zone, err)
	}
	return awssdk.ToString(out.AvailabilityZones[0].ZoneId)
}

// createSpreadPods creates n pods of the group, numbered from first, that must spread evenly
// (maxSkew 1, DoNotSchedule) over the zones of the group's NodePool.
func createSpreadPods(t *testing.T, ns, group string, first, n int) {
	t.Helper()
	for i := first; i < first+n; i++ {
		spec := framework.GroupPodSpec(group, "1", "256Mi")
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{groupLabel: group}},
		}}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", group, i), Namespace: ns, Labels: map[string]string{groupLabel: group}},
			Spec:       spec,
		}
		if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", pod.Name, err)
		}
	}
}
