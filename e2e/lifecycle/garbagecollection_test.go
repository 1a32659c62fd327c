package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// gcTimeout bounds an instance's garbage collection: the 30 s grace period, a 5 s interval and
// the restarted controller's wait for its lease.
const gcTimeout = 2 * time.Minute

// TestCrashMidLaunchLeaksNothingAndLaunchesOnce kills joinery-controller and then does what it
// would have done just before dying mid-launch: the cloud launched instances for two
// NodeClaims, one stored (its status never written) and one whose creation never reached the
// API server. Once the controller is back, the stored NodeClaim adopts its instance instead of
// launching a second one, and the instance nobody claims is garbage-collected.
func TestCrashMidLaunchLeaksNothingAndLaunchesOnce(t *testing.T) {
	env.RequireLocal(t)
	name := framework.UniqueName("crash")
	createNodePool(t, name, "")

	killController(t)
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			startController(t)
		}
	})
	stored := nodeClaim(t, name, name)
	created := env.Create(t, framework.NodeClaims, toJSON(t, stored))
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(created.Object, stored); err != nil {
		t.Fatal(err)
	}
	ghost := nodeClaim(t, name+"-ghost", name)

	// The kwok provider names an instance's Node after its NodeClaim.
	cp := kwokProvider(t)
	for _, nc := range []*karpv1.NodeClaim{stored, ghost} {
		if _, err := cp.Create(t.Context(), nc); err != nil {
			t.Fatalf("launching %s through the kwok provider: %v", nc.Name, err)
		}
	}
	first, err := env.Client.CoreV1().Nodes().Get(t.Context(), stored.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("instance of %s: %v", stored.Name, err)
	}
	t.Cleanup(func() { deleteNodeIfPresent(t, ghost.Name) })

	startController(t)
	restarted = true

	claims := env.AwaitNodeClaims(t, "karpenter.sh/nodepool="+name, 1, restartTimeout, framework.NodeClaimCondition("Ready", "True"))
	if claims[0].GetName() != stored.Name {
		t.Fatalf("nodeclaim %s, want %s", claims[0].GetName(), stored.Name)
	}
	providerID, _, _ := unstructured.NestedString(claims[0].Object, "status", "providerID")
	nodes, err := env.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var sameID int
	for _, n := range nodes.Items {
		if n.Spec.ProviderID == providerID {
			sameID++
			if n.UID != first.UID {
				t.Errorf("node %s UID %s, want the instance launched before the crash (%s): launched twice", n.Name, n.UID, first.UID)
			}
		}
	}
	if sameID != 1 {
		t.Errorf("%d nodes with provider ID %s, want 1", sameID, providerID)
	}

	framework.AwaitGone(t, gcTimeout, "leaked instance "+ghost.Name, func(ctx context.Context) error {
		_, err := env.Client.CoreV1().Nodes().Get(ctx, ghost.Name, metav1.GetOptions{})
		return err
	})
	framework.Eventually(t, 2*time.Minute, "GarbageCollected event of "+ghost.Name, func(ctx context.Context) (bool, error) {
		events, err := env.Client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + ghost.Name + ",reason=GarbageCollected",
		})
		if err != nil {
			return false, err
		}
		for _, ev := range events.Items {
			if strings.Contains(ev.Message, "no NodeClaim has its provider ID") {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d GarbageCollected events", len(events.Items))
	})
	// The adopted instance was left alone.
	if _, err := env.Client.CoreV1().Nodes().Get(t.Context(), stored.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the claimed instance %s: %v", stored.Name, err)
	}
}
