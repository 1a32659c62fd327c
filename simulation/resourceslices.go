package simulation

import (
	"fmt"
	"maps"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/joinery-dev/joinery/cloudprovider"
)

// NewHypotheticalResourceSlices builds the ResourceSlices the DRA drivers of t's node will
// publish: one slice per driver, in a pool named after the node, with one device per device
// of t.Devices ("gpu-0", "gpu-1", ...) carrying the attributes drivers publish that claims
// select on (productName, index, and type for GPUs) and its memory as capacity. It is nil
// when t has no devices.
func NewHypotheticalResourceSlices(t NodeTemplate) []*resourceapi.ResourceSlice {
	byDriver := map[string][]resourceapi.Device{}
	for _, set := range t.Devices {
		prefix := "device"
		switch set.Driver {
		case cloudprovider.NVIDIAGPUDriver, cloudprovider.AMDGPUDriver:
			prefix = "gpu"
		case cloudprovider.NeuronDriver:
			prefix = "neuron"
		}
		for range set.Count {
			index := int64(len(byDriver[set.Driver]))
			attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"productName": {StringValue: &set.Model},
				"index":       {IntValue: &index},
			}
			if prefix == "gpu" {
				attrs["type"] = resourceapi.DeviceAttribute{StringValue: &prefix}
			}
			device := resourceapi.Device{Name: fmt.Sprintf("%s-%d", prefix, index), Attributes: attrs}
			if set.MemoryMiB > 0 {
				device.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
					"memory": {Value: *resource.NewQuantity(set.MemoryMiB<<20, resource.BinarySI)},
				}
			}
			byDriver[set.Driver] = append(byDriver[set.Driver], device)
		}
	}
	if len(byDriver) == 0 {
		return nil
	}
	var out []*resourceapi.ResourceSlice
	for _, driver := range slices.Sorted(maps.Keys(byDriver)) {
		out = append(out, &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: t.Name + "-" + driver},
			Spec: resourceapi.ResourceSliceSpec{
				Driver:   driver,
				Pool:     resourceapi.ResourcePool{Name: t.Name, Generation: 1, ResourceSliceCount: 1},
				NodeName: &t.Name,
				Devices:  byDriver[driver],
			},
		})
	}
	return out
}

// SetResourceSlices sets the ResourceSlices of node name in the snapshot (nil removes them),
// for a node that does not exist yet: DynamicResources allocates a pod's claims from the
// slices of the node it filters. The change is journaled; a node added or replaced after it
// makes DynamicResources' PreFilter rerun (see prefilter.go), since its allocator holds the
// slices PreFilter saw.
func (s *Snapshot) SetResourceSlices(name string, rs []*resourceapi.ResourceSlice) {
	prev, had := s.slices[name]
	if !had && rs == nil {
		return
	}
	if s.top() != nil {
		s.journal = append(s.journal, change{kind: slicesSet, node: name, slices: prev, hadSlices: had})
	}
	s.putResourceSlices(name, rs, rs != nil)
}

func (s *Snapshot) putResourceSlices(name string, rs []*resourceapi.ResourceSlice, set bool) {
	if !set {
		delete(s.slices, name)
		return
	}
	s.slices[name] = rs
}

// ResourceSlices returns the ResourceSlices set for node name with SetResourceSlices.
func (s *Snapshot) ResourceSlices(name string) ([]*resourceapi.ResourceSlice, bool) {
	rs, ok := s.slices[name]
	return rs, ok
}

// snapshotDRAManager gives DynamicResources the hypothetical nodes' ResourceSlices besides the
// cluster's: claims, classes and the cluster's slices come from kube-scheduler's manager.
type snapshotDRAManager struct {
	fwk.SharedDRAManager
	snapshot *Snapshot
}

func (m snapshotDRAManager) ResourceSlices() fwk.ResourceSliceLister {
	return sliceLister{cluster: m.SharedDRAManager.ResourceSlices(), snapshot: m.snapshot}
}

type sliceLister struct {
	cluster  fwk.ResourceSliceLister
	snapshot *Snapshot
}

func (l sliceLister) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	list, err := l.cluster.ListWithDeviceTaintRules()
	if err != nil {
		return nil, err
	}
	if len(l.snapshot.slices) == 0 {
		return list, nil
	}
	out := make([]*resourceapi.ResourceSlice, 0, len(list)+len(l.snapshot.slices))
	for _, rs := range list {
		// A hypothetical node's slices stand for its drivers' (the node replaces one that
		// exists only when the simulation rebuilds it).
		if rs.Spec.NodeName != nil {
			if _, ok := l.snapshot.slices[*rs.Spec.NodeName]; ok {
				continue
			}
		}
		out = append(out, rs)
	}
	for _, name := range slices.Sorted(maps.Keys(l.snapshot.slices)) {
		out = append(out, l.snapshot.slices[name]...)
	}
	return out, nil
}
