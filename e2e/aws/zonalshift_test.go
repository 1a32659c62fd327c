package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/awsemulator"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// TestZonalShiftKeepsNodeClaimsOutOfTheZone: the local cluster runs both binaries with
// ENABLE_ZONAL_SHIFT. While an ARC zonal shift moves the cluster away from us-west-2a, pods
// that must spread evenly over the zones of a NodePool of us-west-2a and us-west-2b get a
// NodeClaim in us-west-2b only, and the pod the spread sends to us-west-2a is refused, as is a
// pod pinned to us-west-2a; once the shift is cancelled, the end of the shift alone plans both
// again and they run in us-west-2a. The shift is started and cancelled through the ARC SDK, as
// an operator would.
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
	// A pod that can only run in the shifted zone.
	spec := framework.GroupPodSpec(pool, "1", "256Mi")
	spec.NodeSelector[corev1.LabelTopologyZone] = shifted
	pinned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pool + "-pinned", Namespace: ns, Labels: map[string]string{groupLabel: pool + "-pinned"}}, Spec: spec}
	if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
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
		if ok, err := refused(ctx, ns, pending[0].Name); !ok {
			return false, err
		}
		waiting = pending[0].Name
		return true, nil
	})
	framework.Eventually(t, runningTimeout, "the pinned pod refused while its zone is shifted", func(ctx context.Context) (bool, error) {
		return refused(ctx, ns, pinned.Name)
	})
	for _, inst := range live(instancesOf(t, pool)) {
		if inst.Zone != other {
			t.Fatalf("instance %s launched in %s while traffic is shifted away from %s", inst.ID, inst.Zone, shifted)
		}
	}

	if err := cancel(t.Context()); err != nil {
		t.Fatalf("cancelling the zonal shift: %v", err)
	}
	// Nothing else changes: the end of the shift itself plans the refused pods again, the
	// pinned one and the one the spread sends to the zone, and both land there.
	for _, name := range []string{pinned.Name, waiting} {
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

// refused reports whether the Provisioner refused the pending pod (its FailedScheduling event).
func refused(ctx context.Context, ns, name string) (bool, error) {
	pod, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	if pod.Spec.NodeName != "" {
		return false, fmt.Errorf("pod %s was bound to %s", name, pod.Spec.NodeName)
	}
	notes, err := env.EventNotes(ctx, "FailedScheduling", name)
	if err != nil {
		return false, err
	}
	for _, note := range notes {
		if strings.HasPrefix(note, "Failed to schedule pod,") {
			return true, nil
		}
	}
	return false, fmt.Errorf("pod %s pending, not refused by the Provisioner yet (events %q)", name, notes)
}

// awaitZonalShiftsListed waits until joinery-controller and joinery-scheduler have each read
// the cluster's shifts twice since it was called: the first read may have begun before the
// change, the second began after it and its answer was applied before it was sent.
func awaitZonalShiftsListed(t *testing.T, aws *awsemulator.AdminClient) {
	t.Helper()
	for _, key := range []string{localcluster.ControllerAWSAccessKey, localcluster.SchedulerAWSAccessKey} {
		before, err := aws.CallsBy(t.Context(), awsemulator.ServiceARC, "GetManagedResource", key)
		if err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, runningTimeout, "zonal shifts listed with "+key, func(ctx context.Context) (bool, error) {
			n, err := aws.CallsBy(ctx, awsemulator.ServiceARC, "GetManagedResource", key)
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

// TestAutoshiftSuspendsConsolidationInTheZone: the cluster has zonal autoshift enabled and a
// node in us-west-2a. AWS starts an autoshift away from us-west-2a (the emulator's admin API,
// as AWS's telemetry would); the node's pod goes away, so the node is empty and its NodePool
// consolidates empty nodes at once, but while the autoshift lasts the node is blocked
// (DisruptionBlocked naming the autoshift) and stays; when AWS ends the autoshift, the node
// is consolidated.
func TestAutoshiftSuspendsConsolidationInTheZone(t *testing.T) {
	aws := emulator(t)
	env.RequireLocal(t)
	const shifted = "us-west-2a"
	pool := framework.UniqueName("autoshift")
	createNodeClass(t, pool)
	createNodePool(t, pool, pool, `{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}`,
		fmt.Sprintf(`{key: topology.kubernetes.io/zone, operator: In, values: [%s]}`, shifted))
	// Not consolidatable until the autoshift is on: no DisruptionBlocked event of the budget
	// spends the events the recorder allows per node before the one under test.
	patchDisruption(t, pool, `{"consolidateAfter": "Never"}`)
	ns := env.Namespace(t)
	createPods(t, ns, pool, 1, "1")
	pod := env.AwaitPodRunning(t, ns, pool+"-0", runningTimeout)
	node, err := env.Client.CoreV1().Nodes().Get(t.Context(), pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := emulatorConfig(t)
	zone := zoneID(t, cfg, shifted)
	if got := node.Labels["topology.k8s.aws/zone-id"]; got != zone {
		t.Fatalf("node %s has zone-id label %q, want %s", node.Name, got, zone)
	}

	arc := arczonalshift.NewFromConfig(cfg)
	setAutoshift := func(ctx context.Context, status arctypes.ZonalAutoshiftStatus) error {
		_, err := arc.UpdateZonalAutoshiftConfiguration(ctx, &arczonalshift.UpdateZonalAutoshiftConfigurationInput{
			ResourceIdentifier: awssdk.String(clusterARN(t)), ZonalAutoshiftStatus: status,
		})
		return err
	}
	if err := setAutoshift(t.Context(), arctypes.ZonalAutoshiftStatusEnabled); err != nil {
		t.Fatalf("enabling zonal autoshift of the cluster: %v", err)
	}
	if err := aws.StartAutoshift(t.Context(), zone); err != nil {
		t.Fatalf("starting an autoshift away from %s: %v", shifted, err)
	}
	ended := false
	t.Cleanup(func() {
		if !ended {
			if err := aws.EndAutoshift(context.Background(), zone); err != nil {
				t.Errorf("ending the autoshift: %v", err)
			}
		}
		if err := setAutoshift(context.Background(), arctypes.ZonalAutoshiftStatusDisabled); err != nil {
			t.Errorf("disabling zonal autoshift: %v", err)
		}
	})
	awaitZonalShiftsListed(t, aws)

	// The node empties, and its NodePool now consolidates empty nodes.
	if err := env.Client.CoreV1().Pods(ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	patchDisruption(t, pool, `{"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]}`)
	framework.Eventually(t, replaceTimeout, "the empty node blocked for the autoshift", func(ctx context.Context) (bool, error) {
		notes, err := env.EventNotes(ctx, "DisruptionBlocked", node.Name)
		if err != nil {
			return false, err
		}
		for _, note := range notes {
			if strings.Contains(note, "zone "+shifted+" ("+zone+") is under an active ARC zonal autoshift") {
				return true, nil
			}
		}
		return false, fmt.Errorf("events %q", notes)
	})
	if n := len(live(instancesOf(t, pool))); n != 1 {
		t.Fatalf("%d live instances while the autoshift lasts, want the empty node's", n)
	}

	if err := aws.EndAutoshift(t.Context(), zone); err != nil {
		t.Fatalf("ending the autoshift: %v", err)
	}
	ended = true
	framework.Eventually(t, replaceTimeout, "the empty node consolidated once the autoshift ended", func(ctx context.Context) (bool, error) {
		if n := len(live(instancesOf(t, pool))); n != 0 {
			return false, fmt.Errorf("%d live instances", n)
		}
		return true, nil
	})
}

// patchDisruption merges disruption into the NodePool's spec.disruption.
func patchDisruption(t *testing.T, pool, disruption string) {
	t.Helper()
	patch := `{"spec": {"disruption": ` + disruption + `}}`
	if _, err := env.Dynamic.Resource(framework.NodePools).Patch(t.Context(), pool, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch nodepool %s: %v", pool, err)
	}
}
