package solver

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/simulation"
)

// Attach limits. NodeVolumeLimits rejects a pod when a node's CSI volumes of one driver would
// exceed the node's CSINode count. A claim's node shows, per driver, the largest limit among
// its remaining instance types (like its allocatable bound), and the solver narrows the types
// to those that attach the volumes planned onto the claim, counting volumes as the plugin does:
// once per volume (two pods sharing a claim attach it once), identified by driver and handle.

// csiVolumes maps each CSI volume of pod (its claims and generic ephemeral volumes) to its
// driver, keyed by "driver/handle" as NodeVolumeLimits keys them: a bound claim's volume by
// its CSI handle, an unbound claim by its StorageClass's provisioner and its own name.
// Volumes whose claim, volume or class is not in the informers yet are left out
// (NodeVolumeLimits and VolumeBinding decide those pods).
func (v *volumeTopology) csiVolumes(pod *corev1.Pod) map[string]string {
	if v == nil {
		return nil
	}
	var out map[string]string
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		var name string
		switch {
		case vol.PersistentVolumeClaim != nil:
			name = vol.PersistentVolumeClaim.ClaimName
		case vol.Ephemeral != nil:
			name = pod.Name + "-" + vol.Name
		default:
			continue
		}
		driver, handle := v.csiDriverOf(pod.Namespace, name)
		if driver == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[driver+"/"+handle] = driver
	}
	return out
}

func (v *volumeTopology) csiDriverOf(namespace, claimName string) (driver, handle string) {
	pvc, err := v.claims.PersistentVolumeClaims(namespace).Get(claimName)
	if err != nil {
		return "", ""
	}
	if pvc.Spec.VolumeName != "" {
		pv, err := v.volumes.Get(pvc.Spec.VolumeName)
		if err != nil || pv.Spec.CSI == nil {
			return "", ""
		}
		return pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle
	}
	class := storagehelpers.GetPersistentVolumeClaimClass(pvc)
	if class == "" {
		return "", ""
	}
	sc, err := v.classes.Get(class)
	if err != nil {
		return "", ""
	}
	// The plugin's placeholder handle for a volume still to be provisioned.
	return sc.Provisioner, namespace + "-" + claimName
}

// podCSIVolumes returns pod's CSI volumes, computed once per pod of the run.
func (r *run) podCSIVolumes(pod *corev1.Pod) map[string]string {
	if !hasClaimVolumes(pod) {
		return nil
	}
	if vols, ok := r.csiVolumesOf[pod.UID]; ok {
		return vols
	}
	vols := r.s.volumes.csiVolumes(pod)
	if r.csiVolumesOf == nil {
		r.csiVolumesOf = map[types.UID]map[string]string{}
	}
	r.csiVolumesOf[pod.UID] = vols
	return vols
}

func hasClaimVolumes(pod *corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].PersistentVolumeClaim != nil || pod.Spec.Volumes[i].Ephemeral != nil {
			return true
		}
	}
	return false
}

// attachCounts returns c's volume counts per driver with vols added (c's own map when vols
// adds nothing new).
func (c *claim) attachCounts(vols map[string]string) map[string]int32 {
	counts := c.attachCount
	cloned := false
	for key, driver := range vols {
		if _, ok := c.volumes[key]; ok {
			continue
		}
		if !cloned {
			counts = make(map[string]int32, len(c.attachCount)+1)
			for d, n := range c.attachCount {
				counts[d] = n
			}
			cloned = true
		}
		counts[driver]++
	}
	return counts
}

// addVolumes records vols as attached to c's node.
func (c *claim) addVolumes(vols map[string]string) {
	if len(vols) == 0 {
		return
	}
	c.attachCount = c.attachCounts(vols)
	if c.volumes == nil {
		c.volumes = map[string]string{}
	}
	for key, driver := range vols {
		c.volumes[key] = driver
	}
}

// attaches reports whether a node of type it attaches counts volumes of each driver.
func attaches(it *cloudprovider.InstanceType, counts map[string]int32) bool {
	for driver, n := range counts {
		if limit, ok := it.VolumeLimits[driver]; ok && n > limit {
			return false
		}
	}
	return true
}

// attaching returns the types of its that attach counts volumes (its itself when all do).
func attaching(its cloudprovider.InstanceTypes, counts map[string]int32) cloudprovider.InstanceTypes {
	if len(counts) == 0 {
		return its
	}
	for i, it := range its {
		if attaches(it, counts) {
			continue
		}
		out := append(cloudprovider.InstanceTypes{}, its[:i]...)
		for _, it := range its[i+1:] {
			if attaches(it, counts) {
				out = append(out, it)
			}
		}
		return out
	}
	return its
}

// maxVolumeLimits is the per-driver largest attach limit of its; a driver some type does
// not limit is left out (unlimited).
func maxVolumeLimits(its cloudprovider.InstanceTypes) map[string]int32 {
	if len(its) == 0 {
		return nil
	}
	out := map[string]int32{}
	for driver := range its[0].VolumeLimits {
		limit, limited := int32(0), true
		for _, it := range its {
			l, ok := it.VolumeLimits[driver]
			if !ok {
				limited = false
				break
			}
			limit = max(limit, l)
		}
		if limited {
			out[driver] = limit
		}
	}
	return out
}

// sameLimits reports whether a and b list the same limits.
func sameLimits(a, b map[string]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// refreshVolumeLimits sets the limits c's node shows to those of its remaining types, and
// updates the node's CSINode in the snapshot when they changed.
func (r *run) refreshVolumeLimits(c *claim) {
	if c.fixed {
		return
	}
	limits := maxVolumeLimits(c.its)
	if sameLimits(limits, c.limits) {
		return
	}
	c.limits = limits
	r.engine.Snapshot().SetCSINode(c.name, simulation.NewHypotheticalCSINode(simulation.NodeTemplate{Name: c.name, VolumeLimits: limits}))
}

// anyAttaches reports whether some type of its holds requests and attaches counts volumes.
func (r *run) anyAttaches(its cloudprovider.InstanceTypes, requests vec, counts map[string]int32) bool {
	for _, it := range its {
		if requests.fits(r.alloc.of(it)) && attaches(it, counts) {
			return true
		}
	}
	return false
}
