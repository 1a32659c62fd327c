package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

// Catalog is the instance types the cloud provider returned for some NodePools.
type Catalog struct {
	// NodePools are the NodePools that see this catalog.
	NodePools []string `json:"nodePools"`
	// NodeClassRef is the node class those NodePools launch with; a NodePool that a what-if
	// change adds uses the catalog of its node class.
	NodeClassRef  *karpv1.NodeClassReference `json:"nodeClassRef,omitempty"`
	InstanceTypes []InstanceType             `json:"instanceTypes"`
}

// InstanceType is a cloudprovider.InstanceType as data.
type InstanceType struct {
	Name         string                                        `json:"name"`
	Requirements []karpv1.NodeSelectorRequirementWithMinValues `json:"requirements"`
	Offerings    []Offering                                    `json:"offerings"`
	Capacity     corev1.ResourceList                           `json:"capacity"`
	Overhead     Overhead                                      `json:"overhead,omitempty"`
}

// Offering is a cloudprovider.Offering as data.
type Offering struct {
	Requirements        []karpv1.NodeSelectorRequirementWithMinValues `json:"requirements"`
	Price               float64                                       `json:"price"`
	Available           bool                                          `json:"available"`
	ReservationCapacity int                                           `json:"reservationCapacity,omitempty"`
}

// Overhead is a cloudprovider.Overhead as data.
type Overhead struct {
	KubeReserved      corev1.ResourceList `json:"kubeReserved,omitempty"`
	SystemReserved    corev1.ResourceList `json:"systemReserved,omitempty"`
	EvictionThreshold corev1.ResourceList `json:"evictionThreshold,omitempty"`
}

// FromInstanceTypes records its.
func FromInstanceTypes(its []*cloudprovider.InstanceType) []InstanceType {
	out := make([]InstanceType, 0, len(its))
	for _, it := range its {
		rec := InstanceType{
			Name:         it.Name,
			Requirements: it.Requirements.NodeSelectorRequirementsWithMinValues(),
			Capacity:     it.Capacity,
			Overhead: Overhead{
				KubeReserved:      it.Overhead.KubeReserved,
				SystemReserved:    it.Overhead.SystemReserved,
				EvictionThreshold: it.Overhead.EvictionThreshold,
			},
		}
		for _, o := range it.Offerings {
			rec.Offerings = append(rec.Offerings, Offering{
				Requirements:        o.Requirements.NodeSelectorRequirementsWithMinValues(),
				Price:               o.Price,
				Available:           o.Available,
				ReservationCapacity: o.ReservationCapacity,
			})
		}
		out = append(out, rec)
	}
	return out
}

// Build turns recorded instance types back into the provider's.
func Build(recs []InstanceType) []*cloudprovider.InstanceType {
	out := make([]*cloudprovider.InstanceType, 0, len(recs))
	for _, rec := range recs {
		it := &cloudprovider.InstanceType{
			Name:         rec.Name,
			Requirements: scheduling.FromNodeSelectorRequirementsWithMinValues(rec.Requirements...),
			Capacity:     rec.Capacity,
			Overhead: cloudprovider.Overhead{
				KubeReserved:      rec.Overhead.KubeReserved,
				SystemReserved:    rec.Overhead.SystemReserved,
				EvictionThreshold: rec.Overhead.EvictionThreshold,
			},
		}
		for _, o := range rec.Offerings {
			it.Offerings = append(it.Offerings, &cloudprovider.Offering{
				Requirements:        scheduling.FromNodeSelectorRequirementsWithMinValues(o.Requirements...),
				Price:               o.Price,
				Available:           o.Available,
				ReservationCapacity: o.ReservationCapacity,
			})
		}
		out = append(out, it)
	}
	return out
}

// addCatalog records its for nodePool, sharing an entry with NodePools that saw the same.
func (s *Snapshot) addCatalog(nodePool *karpv1.NodePool, its []*cloudprovider.InstanceType) error {
	recs := FromInstanceTypes(its)
	key, err := json.Marshal(recs)
	if err != nil {
		return fmt.Errorf("recording the instance types of nodepool %s: %w", nodePool.Name, err)
	}
	ref := nodePool.Spec.Template.Spec.NodeClassRef
	for i := range s.Catalogs {
		c := &s.Catalogs[i]
		existing, err := json.Marshal(c.InstanceTypes)
		if err != nil {
			return err
		}
		if string(existing) == string(key) && sameRef(c.NodeClassRef, ref) {
			c.NodePools = append(c.NodePools, nodePool.Name)
			return nil
		}
	}
	s.Catalogs = append(s.Catalogs, Catalog{NodePools: []string{nodePool.Name}, NodeClassRef: ref.DeepCopy(), InstanceTypes: recs})
	return nil
}

func sameRef(a, b *karpv1.NodeClassReference) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Group == b.Group && a.Kind == b.Kind && a.Name == b.Name
}

// InstanceTypes is the snapshot's catalog as a cloud provider's instance-type source
// (cloudprovider.InstanceTypeLister): each NodePool gets the types recorded for it, a NodePool the
// snapshot did not see (or whose node class a change replaced) those recorded for its node
// class. Like a provider's listing, it leaves reserved offerings out when told to and applies
// the overlay last (CatalogOptions).
type InstanceTypes struct {
	catalogs []Catalog
	built    [][]*cloudprovider.InstanceType
	overlay  cloudprovider.Overlay
}

// CatalogOptions are the gates a reader applies to a Format 2 catalog, as a provider applies
// them to its own listing; a legacy snapshot's catalog has them applied already.
type CatalogOptions struct {
	// Overlay is the NodeOverlay set (cloudprovider.NodeOverlays over the snapshot's
	// NodeOverlays with the NodeOverlay gate on); nil for none.
	Overlay cloudprovider.Overlay
	// NoReserved leaves reserved offerings out (the ReservedCapacity gate off).
	NoReserved bool
}

// Catalog returns the snapshot's instance-type source, the recorded catalog as is.
func (s *Snapshot) Catalog() *InstanceTypes { return s.CatalogWith(CatalogOptions{}) }

// CatalogWith returns the snapshot's instance-type source with opts applied; a legacy
// snapshot's catalog is returned as recorded (its overlays and gates are applied already).
func (s *Snapshot) CatalogWith(opts CatalogOptions) *InstanceTypes {
	src := &InstanceTypes{catalogs: s.Catalogs}
	if !s.Legacy() {
		src.overlay = opts.Overlay
	}
	for _, c := range s.Catalogs {
		its := Build(c.InstanceTypes)
		if opts.NoReserved && !s.Legacy() {
			its = withoutReserved(its)
		}
		src.built = append(src.built, its)
	}
	return src
}

// withoutReserved drops reserved offerings, as a provider does with ReservedCapacity off.
func withoutReserved(its []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	for _, it := range its {
		it.Offerings = slices.DeleteFunc(it.Offerings, func(o *cloudprovider.Offering) bool {
			return o.CapacityType() == karpv1.CapacityTypeReserved
		})
	}
	return its
}

// GetInstanceTypes implements cloudprovider.InstanceTypeLister. A nil nodePool gets every recorded
// type once.
func (s *InstanceTypes) GetInstanceTypes(_ context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	if nodePool == nil {
		var all []*cloudprovider.InstanceType
		seen := map[string]bool{}
		for _, its := range s.built {
			for _, it := range its {
				if !seen[it.Name] {
					seen[it.Name] = true
					all = append(all, it)
				}
			}
		}
		return s.apply("", all), nil
	}
	ref := nodePool.Spec.Template.Spec.NodeClassRef
	// The NodePool's own catalog, unless a change moved it to another node class.
	for i, c := range s.catalogs {
		if slices.Contains(c.NodePools, nodePool.Name) && sameRef(c.NodeClassRef, ref) {
			return s.apply(nodePool.Name, s.built[i]), nil
		}
	}
	for i, c := range s.catalogs {
		if sameRef(c.NodeClassRef, ref) {
			return s.apply(nodePool.Name, s.built[i]), nil
		}
	}
	return nil, fmt.Errorf("nodepool %s: the snapshot has no instance types for its node class %s", nodePool.Name, refString(ref))
}

// apply is the overlay's view of its for nodePool, as a provider's listing returns it.
func (s *InstanceTypes) apply(nodePool string, its []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	if s.overlay == nil {
		return slices.Clone(its)
	}
	return s.overlay.Apply(nodePool, its)
}

func refString(ref *karpv1.NodeClassReference) string {
	if ref == nil {
		return "(none)"
	}
	return fmt.Sprintf("%s/%s %s", ref.Group, ref.Kind, ref.Name)
}
