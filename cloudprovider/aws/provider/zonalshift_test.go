package provider_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	awscp "github.com/joinery-dev/joinery/cloudprovider/aws"
	"github.com/joinery-dev/joinery/cloudprovider/aws/provider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/zonalshift"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// TestZonalShift shifts the cluster away from us-west-2b through the real ARC SDK against the
// emulator. With ENABLE_ZONAL_SHIFT (a watcher), us-west-2b's offerings are listed but
// unavailable and nothing launches there; without it the shift changes nothing; once the
// shift is cancelled the zone launches again.
func TestZonalShift(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	arc := arczonalshift.NewFromConfig(e.srv.Config())
	shifted := "us-west-2b"
	var zoneID string
	for _, z := range e.srv.Zones() {
		if z.Name == shifted {
			zoneID = z.ID
		}
	}
	started, err := arc.StartZonalShift(ctx, &arczonalshift.StartZonalShiftInput{
		ResourceIdentifier: aws.String(e.srv.ClusterARN()), AwayFrom: aws.String(zoneID), ExpiresIn: aws.String("1h"), Comment: aws.String("test"),
	})
	if err != nil {
		t.Fatal(err)
	}
	watcher := zonalshift.NewFromConfig(e.srv.Config(), zonalshift.Options{ClusterName: cluster, Region: e.srv.Region})
	if err := watcher.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	on := e.withOptions(func(o *provider.Options) { o.ZonalShifts = watcher })
	off := e.p

	launchZone := func(t *testing.T, p *provider.Provider, name string, zones []string) (string, error) {
		t.Helper()
		got, err := p.Create(ctx, nodeClaim(name, onDemand, []string{"c6i.large"}, zones))
		if err != nil {
			return "", err
		}
		return got.Labels[corev1.LabelTopologyZone], nil
	}

	t.Run("setting off: the shift changes nothing", func(t *testing.T) {
		if zone, err := launchZone(t, off, "off-a", twoZones); err != nil || zone != shifted {
			t.Errorf("launched in %q (%v), want %s, the cheapest choice", zone, err, shifted)
		}
	})
	t.Run("setting on: listed but unavailable in the shifted zone", func(t *testing.T) {
		its, err := on.GetInstanceTypes(ctx, pool())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range its {
			for _, o := range it.Offerings {
				if o.CapacityType() == karpv1.CapacityTypeReserved {
					continue // a reservation may be unavailable for its own reasons (expiring)
				}
				if o.Available == (o.Zone() == shifted) {
					t.Fatalf("%s %s in %s available = %v while traffic is shifted away from %s", it.Name, o.CapacityType(), o.Zone(), o.Available, shifted)
				}
			}
		}
	})
	t.Run("setting on: launches go to the other zone", func(t *testing.T) {
		if zone, err := launchZone(t, on, "on-a", twoZones); err != nil || zone != "us-west-2c" {
			t.Errorf("launched in %q (%v), want us-west-2c", zone, err)
		}
		fleets := e.srv.Calls(awsemulator.ServiceEC2, "CreateFleet")
		_, err := launchZone(t, on, "on-b", []string{shifted})
		if !cloudprovider.IsInsufficientCapacityError(err) {
			t.Errorf("a launch only into the shifted zone = %v, want insufficient capacity", err)
		}
		if got := e.srv.Calls(awsemulator.ServiceEC2, "CreateFleet"); got != fleets {
			t.Errorf("CreateFleet called for the shifted zone")
		}
	})
	t.Run("cancelled: the zone launches again", func(t *testing.T) {
		if _, err := arc.CancelZonalShift(ctx, &arczonalshift.CancelZonalShiftInput{ZonalShiftId: started.ZonalShiftId}); err != nil {
			t.Fatal(err)
		}
		if err := watcher.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if zone, err := launchZone(t, on, "on-c", []string{shifted}); err != nil || zone != shifted {
			t.Errorf("launched in %q (%v), want %s", zone, err, shifted)
		}
	})
}

// TestUserDataCarriesTheDiscoveredCluster: with EKS_CONTROL_PLANE, a launched instance's user
// data joins the cluster eks:DescribeCluster describes, not the controller's kubeconfig.
func TestUserDataCarriesTheDiscoveredCluster(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	settings := awscp.Settings{ClusterName: cluster, EKSControlPlane: true}
	kubeconfig := &rest.Config{Host: "https://kubeconfig.example", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("kubeconfig CA")}}
	joins, err := settings.NodeCluster(ctx, e.srv.Config(), kubeconfig, fake.NewClientBuilder().Build())
	if err != nil {
		t.Fatal(err)
	}
	p := e.withOptions(func(o *provider.Options) { o.Cluster = joins })
	if _, err := p.Create(ctx, nodeClaim("eks-a", onDemand, []string{"c6i.large"}, twoZones)); err != nil {
		t.Fatal(err)
	}
	insts := e.srv.Instances()
	if len(insts) != 1 {
		t.Fatalf("%d instances, want 1", len(insts))
	}
	eks := awsemulator.DefaultEKSCluster
	for _, want := range []string{"apiServerEndpoint: " + joins.Endpoint, "certificateAuthority: " + eks.CABundle, "cidr: " + eks.ServiceCIDR} {
		if !strings.Contains(insts[0].UserData, want) {
			t.Errorf("user data lacks %q:\n%s", want, insts[0].UserData)
		}
	}
	if !strings.HasSuffix(joins.Endpoint, ".eks.amazonaws.com") || strings.Contains(insts[0].UserData, kubeconfig.Host) {
		t.Errorf("user data joins %s, want the EKS cluster's endpoint, not the kubeconfig's %s", joins.Endpoint, kubeconfig.Host)
	}
}

// TestAutoshift: an AWS-initiated autoshift of the cluster (zonal autoshift enabled) keeps the
// provider out of the zone as a customer's shift does, suspends voluntary disruption of the
// nodes launched there (by their zone-id label), and its end is announced to subscribers.
func TestAutoshift(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	shifted := "us-west-2b"
	watcher := zonalshift.NewFromConfig(e.srv.Config(), zonalshift.Options{ClusterName: cluster, Region: e.srv.Region})
	p := e.withOptions(func(o *provider.Options) { o.ZonalShifts = watcher })
	var returned []string
	p.OnOfferingsReturn(func(why string) { returned = append(returned, why) })

	// Launched before the autoshift, in the zone it will shift away from.
	nc, err := p.Create(ctx, nodeClaim("before", onDemand, []string{"c6i.large"}, []string{shifted}))
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "before", Labels: nc.Labels}}
	zoneID := nc.Labels["topology.k8s.aws/zone-id"]
	if zoneID == "" {
		t.Fatalf("launched NodeClaim labels %v lack the zone ID", nc.Labels)
	}

	arc := arczonalshift.NewFromConfig(e.srv.Config())
	if _, err := arc.UpdateZonalAutoshiftConfiguration(ctx, &arczonalshift.UpdateZonalAutoshiftConfigurationInput{
		ResourceIdentifier: aws.String(e.srv.ClusterARN()), ZonalAutoshiftStatus: arctypes.ZonalAutoshiftStatusEnabled,
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.StartAutoshift(zoneID); err != nil {
		t.Fatal(err)
	}
	if err := watcher.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if why := p.DisruptionSuspended(node); !strings.Contains(why, "zone "+shifted+" ("+zoneID+") is under an active ARC zonal autoshift") {
		t.Errorf("DisruptionSuspended = %q, want the autoshift named", why)
	}
	if _, err := p.Create(ctx, nodeClaim("during", onDemand, []string{"c6i.large"}, []string{shifted})); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("a launch only into the autoshifted zone = %v, want insufficient capacity", err)
	}

	if err := e.srv.EndAutoshift(zoneID); err != nil {
		t.Fatal(err)
	}
	if err := watcher.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if why := p.DisruptionSuspended(node); why != "" {
		t.Errorf("DisruptionSuspended after the autoshift = %q, want none", why)
	}
	if want := "zonal shift away from " + zoneID + " ended"; len(returned) != 1 || returned[0] != want {
		t.Errorf("subscribers heard %q, want %q", returned, want)
	}
	if _, err := p.Create(ctx, nodeClaim("after", onDemand, []string{"c6i.large"}, []string{shifted})); err != nil {
		t.Errorf("a launch into the zone after the autoshift: %v", err)
	}
}
