package plugin

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
)

// TestOverlayChangesRetryUnschedulablePods: a NodeOverlay added or whose spec changes retries
// the pods the last plan left unschedulable; a status write or the informer's initial list
// does not.
func TestOverlayChangesRetryUnschedulablePods(t *testing.T) {
	stuck, placed := testPod("ns", "stuck"), testPod("ns", "placed")
	env := newTestPlugin(t, true, stuck, placed)
	p := env.plugin
	p.mu.Lock()
	p.refs[stuck.UID] = types.NamespacedName{Namespace: stuck.Namespace, Name: stuck.Name}
	p.refs[placed.UID] = types.NamespacedName{Namespace: placed.Namespace, Name: placed.Name}
	p.unschedulable[stuck.UID] = "no instance type fits the pod's requests"
	p.mu.Unlock()

	h := p.overlayHandler(t.Context())
	o := &v1alpha1.NodeOverlay{}
	o.Name, o.Generation = "hugepages", 1
	h.OnAdd(o, true)
	if got := env.activator.keys(); len(got) != 0 {
		t.Errorf("the initial list retried %v", got)
	}
	h.OnAdd(o, false)
	if got := env.activator.keys(); !slices.Equal(got, []string{"ns/stuck"}) {
		t.Errorf("an added overlay retried %v, want [ns/stuck]", got)
	}
	env.activator.reset()
	status := o.DeepCopy()
	status.Status.Conditions = nil
	h.OnUpdate(o, status)
	if got := env.activator.keys(); len(got) != 0 {
		t.Errorf("a status write retried %v", got)
	}
	changed := o.DeepCopy()
	changed.Generation = 2
	h.OnUpdate(o, changed)
	if got := env.activator.keys(); !slices.Equal(got, []string{"ns/stuck"}) {
		t.Errorf("a spec change retried %v, want [ns/stuck]", got)
	}
}
