package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/controllers/interruption"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

const (
	queueName = "joinery-interruptions"
	namespace = metav1.NamespaceDefault
)

// claimOn creates a launched NodeClaim and its Node for a spot instance.
func claimOn(ctx context.Context, t *testing.T, name, instanceID string) *karpv1.NodeClaim {
	t.Helper()
	labels := map[string]string{
		corev1.LabelTopologyZone:       "us-west-2a",
		corev1.LabelInstanceTypeStable: "m5.large",
		karpv1.CapacityTypeLabelKey:    karpv1.CapacityTypeSpot,
	}
	providerID := "aws:///us-west-2a/" + instanceID
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Finalizers: []string{karpv1.TerminationFinalizer}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeSpot}},
			},
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	if err := admin.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.ProviderID = providerID
	nc.Status.NodeName = name
	if err := admin.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	if err := admin.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Without the termination controller nobody else takes the finalizer off.
		_ = admin.Patch(context.Background(), nc, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
		_ = admin.Delete(context.Background(), nc)
		_ = admin.Delete(context.Background(), node)
	})
	return nc
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func deleting(ctx context.Context, t *testing.T, nc *karpv1.NodeClaim) bool {
	t.Helper()
	var got karpv1.NodeClaim
	if err := admin.Get(ctx, client.ObjectKeyFromObject(nc), &got); err != nil {
		t.Fatal(err)
	}
	return !got.DeletionTimestamp.IsZero()
}

// reasons lists the reasons of the events recorded about the object named name.
func reasons(ctx context.Context, t *testing.T, kind, name string) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := admin.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name {
			out = append(out, e.Reason)
		}
	}
	slices.Sort(out)
	return out
}

func TestInterruptionThroughTheManager(t *testing.T) {
	ctx := context.Background()
	srv := awsemulator.NewServer(awsemulator.Options{})
	defer srv.Close()
	if _, err := srv.CreateQueue(queueName); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cluster.RESTConfig(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := interruption.Setup(mgr, srv.Config(), interruption.SetupOptions{Queue: queueName, Namespace: namespace}); err != nil {
		t.Fatal(err)
	}
	mgrCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	spot := claimOn(ctx, t, "spot-claim", "i-0123456789abcdef0")
	rebalanced := claimOn(ctx, t, "rebalanced-claim", "i-0123456789abcdef1")
	for _, body := range []string{
		srv.RebalanceRecommendation("i-0123456789abcdef1"),
		srv.SpotInterruptionWarning("i-0fedcba9876543210"), // not this cluster's
		"{not json",
		srv.SpotInterruptionWarning("i-0123456789abcdef0"),
	} {
		if _, err := srv.SendEvent(queueName, body); err != nil {
			t.Fatal(err)
		}
	}

	eventually(t, "the spot-interrupted nodeclaim deleted", func() bool { return deleting(ctx, t, spot) })
	eventually(t, "every message deleted", func() bool {
		visible, inFlight, err := srv.QueueDepth(queueName)
		return err == nil && visible+inFlight == 0
	})
	if deleting(ctx, t, rebalanced) {
		t.Error("a rebalance recommendation deleted its nodeclaim")
	}

	var cm corev1.ConfigMap
	if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: cloudprovider.UnavailableOfferingsConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	offering := cloudprovider.OfferingKey{CapacityType: karpv1.CapacityTypeSpot, InstanceType: "m5.large", Zone: "us-west-2a"}
	if _, ok := cloudprovider.ParseUnavailableOfferings(&cm, time.Now())[offering]; !ok {
		t.Errorf("unavailable offerings %v lack %s", cm.Data, offering)
	}

	wantSpot := []string{interruption.ReasonSpotInterrupted, interruption.ReasonTerminatingOnInterruption}
	for _, kind := range []string{"NodeClaim", "Node"} {
		eventually(t, kind+" events of the spot interruption", func() bool {
			return slices.Equal(reasons(ctx, t, kind, spot.Name), wantSpot)
		})
		eventually(t, kind+" event of the rebalance recommendation", func() bool {
			return slices.Equal(reasons(ctx, t, kind, rebalanced.Name), []string{interruption.ReasonRebalanceRecommendation})
		})
	}
}
