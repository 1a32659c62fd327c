package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
	"github.com/joinery-dev/joinery/internal/testpods"
)

// TestCapacityTypePriority: NodeClaims keep every capacity type the NodePool allows, list the
// type with a reservation first (reserved capacity is the cheapest), and their launches take
// reserved capacity while it lasts, then spot before on-demand.
func TestCapacityTypePriority(t *testing.T) {
	e := testEnv(t)
	all := []string{karpv1.CapacityTypeReserved, karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand}
	e.run(t, scenario{
		name: "capacity type priority",
		nodePools: []*karpv1.NodePool{nodePool("default",
			requires(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, nil, all...),
			requires(familyLabel, corev1.NodeSelectorOpIn, nil, "m5"))},
		pods: pods(2, "web", "1500m", "1Gi", labelled("app", "web"), testpods.AntiAffine(corev1.LabelHostname, "web")),
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 2)
			want := cheapestFirst(func(it catalog.InstanceType) bool { return familyOf(it.Name) == "m5" }, all...)
			if want[0] != reservedType {
				t.Fatalf("the catalog's cheapest m5 is %s, want the reserved %s", want[0], reservedType)
			}
			for _, nc := range o.claims {
				wantRequirement(t, nc, karpv1.CapacityTypeLabelKey, all...)
				wantTypes(t, nc, want...)
			}
			// Launch both, as the controller would: one reservation slot, then spot.
			provider := kwok.NewWithInstanceTypes(e.client, e.its)
			launched := map[string]int{}
			for _, nc := range o.claims {
				if _, err := provider.Create(t.Context(), nc.DeepCopy()); err != nil {
					t.Fatalf("launching NodeClaim %s: %v", nc.Name, err)
				}
				var node corev1.Node
				if err := e.client.Get(t.Context(), client.ObjectKey{Name: nc.Name}, &node); err != nil {
					t.Fatalf("reading the node of NodeClaim %s: %v", nc.Name, err)
				}
				ct, it, z := node.Labels[karpv1.CapacityTypeLabelKey], node.Labels[corev1.LabelInstanceTypeStable], node.Labels[zone]
				launched[ct]++
				switch ct {
				case karpv1.CapacityTypeReserved:
					if it != reservedType || z != reservedZone || node.Labels[awsv1.LabelCapacityReservationID] != reservationID {
						t.Errorf("reserved launch of %s: %s in %s (reservation %q), want %s in %s (%s)", nc.Name, it, z, node.Labels[awsv1.LabelCapacityReservationID], reservedType, reservedZone, reservationID)
					}
				case karpv1.CapacityTypeSpot:
					// The cheapest spot offering of the listed types that holds the pod.
					if it != "m5.large" || z != "test-zone-b" {
						t.Errorf("spot launch of %s: %s in %s, want m5.large in test-zone-b", nc.Name, it, z)
					}
				}
			}
			if launched[karpv1.CapacityTypeReserved] != 1 || launched[karpv1.CapacityTypeSpot] != 1 {
				t.Errorf("launched capacity types %v, want one reserved then one spot", launched)
			}
		},
	})
}
