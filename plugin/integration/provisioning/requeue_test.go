package provisioning

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// offeringReturns is how long after a case starts its one unavailable offering returns: long
// enough for the first plan to skip it on a loaded machine.
const offeringReturns = 30 * time.Second

// TestRefusedPodsArePlannedAgainWhenTheCauseChanges (issue 26, item 2): a pod the plan refused
// is planned again once the cause of the refusal changes — with no node in the cluster, so
// kube-scheduler never brings it back to PostFilter, and nothing but the plugin's own triggers
// can. Each case creates what makes the plan refuse the pod, waits for the refusal, makes the
// change, and waits for the pod to be planned onto a NodeClaim.
func TestRefusedPodsArePlannedAgainWhenTheCauseChanges(t *testing.T) {
	taint := corev1.Taint{Key: "example.com/dedicated", Value: "other", Effect: corev1.TaintEffectNoSchedule}
	emptyClass := ""
	cases := []struct {
		name      string
		nodePools []*karpv1.NodePool
		objects   func(ns string) []client.Object
		pod       *corev1.Pod
		refusal   string // what the refusal says
		mounts    bool   // the pod mounts the claim <namespace>-data
		change    func(t *testing.T, e *env, ns string)
	}{{
		name:      "a NodeClaim of the NodePool deleted frees its limits",
		nodePools: []*karpv1.NodePool{nodePool("default", limits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}))},
		objects: func(string) []client.Object {
			// 8 cpu launching, which the pod does not tolerate: the limit is used up.
			nc := inFlightNodeClaim("default-full", "default", "m5.2xlarge")
			nc.Spec.Taints = []corev1.Taint{taint}
			return []client.Object{nc}
		},
		pod:     pod("web", "1", "1Gi"),
		refusal: "limits reached",
		change: func(t *testing.T, e *env, _ string) {
			if err := e.client.Delete(t.Context(), &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-full"}}); err != nil {
				t.Fatal(err)
			}
		},
	}, {
		name:      "a NodePool's limits raised",
		nodePools: []*karpv1.NodePool{nodePool("default", limits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0")}))},
		pod:       pod("web", "1", "1Gi"),
		refusal:   "limits reached",
		change: func(t *testing.T, e *env, _ string) {
			e.updateNodePool(t, "default", func(np *karpv1.NodePool) {
				np.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
			})
		},
	}, {
		name:      "a NodePool's requirements widened",
		nodePools: []*karpv1.NodePool{nodePool("default", requires(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, nil, "test-zone-a"))},
		pod:       pod("web", "1", "1Gi", requireNodeTerms(in(corev1.LabelTopologyZone, "test-zone-b"))),
		refusal:   "default",
		change: func(t *testing.T, e *env, _ string) {
			e.updateNodePool(t, "default", requires(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, nil, "test-zone-a", "test-zone-b"))
		},
	}, {
		name:      "a NodePool's taint removed",
		nodePools: []*karpv1.NodePool{nodePool("default", taints(taint))},
		pod:       pod("web", "1", "1Gi"),
		refusal:   "default",
		change: func(t *testing.T, e *env, _ string) {
			e.updateNodePool(t, "default", taints())
		},
	}, {
		name:      "a NodePool became Ready",
		nodePools: []*karpv1.NodePool{nodePool("default", notReady)},
		pod:       pod("web", "1", "1Gi"),
		refusal:   "default",
		change: func(t *testing.T, e *env, _ string) {
			var np karpv1.NodePool
			if err := e.client.Get(t.Context(), client.ObjectKey{Name: "default"}, &np); err != nil {
				t.Fatal(err)
			}
			np.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
			if err := e.client.Status().Update(t.Context(), &np); err != nil {
				t.Fatal(err)
			}
		},
	}, {
		name:      "the unavailable offering expired",
		nodePools: []*karpv1.NodePool{nodePool("default", requires(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, nil, "c6g.large"))},
		objects: func(string) []client.Object {
			until := time.Now().Add(offeringReturns).UTC().Format(time.RFC3339)
			data := map[string]string{}
			for _, z := range zones {
				for _, ct := range spotOrOnDemand {
					data[cloudprovider.OfferingKey{CapacityType: ct, InstanceType: "c6g.large", Zone: z}.ConfigMapKey()] = until
				}
			}
			return []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cloudprovider.UnavailableOfferingsConfigMap}, Data: data}}
		},
		pod:     pod("web", "1", "1Gi"),
		refusal: "default",
		change:  func(*testing.T, *env, string) {}, // time passes
	}, {
		name:      "the pod's claim bound",
		nodePools: []*karpv1.NodePool{nodePool("default")},
		objects: func(ns string) []client.Object {
			return []client.Object{pendingClaim(ns+"-data", emptyClass)}
		},
		pod:     pod("web", "1", "1Gi"),
		mounts:  true,
		refusal: "PersistentVolumeClaims",
		change: func(t *testing.T, e *env, ns string) {
			pv, _ := boundVolume(ns, ns+"-volume", ns+"-data", emptyClass, corev1.LabelTopologyZone, zones...)
			e.create(t, ns, pv)
			e.completeBinding(t, ns, ns+"-data", pv)
		},
	}, {
		// Created naming its volume, the claim is not bound for VolumeBinding until the PV
		// controller adds bind-completed: the claim informer saw spec.volumeName at creation.
		name:      "the pod's pre-bound claim completed its binding",
		nodePools: []*karpv1.NodePool{nodePool("default")},
		objects: func(ns string) []client.Object {
			pv, _ := boundVolume(ns, ns+"-volume", ns+"-data", emptyClass, corev1.LabelTopologyZone, zones...)
			claim := pendingClaim(ns+"-data", emptyClass)
			claim.Spec.VolumeName = pv.Name
			return []client.Object{pv, claim}
		},
		pod:     pod("web", "1", "1Gi"),
		mounts:  true,
		refusal: "PersistentVolumeClaims",
		change: func(t *testing.T, e *env, ns string) {
			var pv corev1.PersistentVolume
			if err := e.client.Get(t.Context(), client.ObjectKey{Name: ns + "-volume"}, &pv); err != nil {
				t.Fatal(err)
			}
			e.completeBinding(t, ns, ns+"-data", &pv)
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := testEnv(t)
			ns := e.newNamespace(t)
			for _, np := range tc.nodePools {
				e.create(t, ns, np)
			}
			if tc.objects != nil {
				for _, obj := range tc.objects(ns) {
					e.create(t, ns, obj)
				}
			}
			p := tc.pod.DeepCopy()
			if tc.mounts {
				mountingClaim(ns + "-data")(p)
			}
			created := e.createPods(t, ns, p)[0]
			e.startScheduler(t, ns, nil)
			pollUntil(t, "waiting for the plan to refuse the pod", func(ctx context.Context) (bool, string, error) {
				note, err := e.failedScheduling(ctx, ns, created)
				if err != nil || note == "" {
					return false, fmt.Sprintf("no refusal yet (%v)", err), nil
				}
				if !strings.Contains(note, tc.refusal) {
					return false, "", fmt.Errorf("refused with %q, want a reason mentioning %q", note, tc.refusal)
				}
				return true, "", nil
			})
			tc.change(t, e, ns)
			pollUntil(t, "waiting for the refused pod to be planned again", func(ctx context.Context) (bool, string, error) {
				claims, err := e.nodeClaims(ctx)
				if err != nil {
					return false, err.Error(), nil
				}
				if nc := podsPlannedOnto(claims)[created.UID]; nc != nil {
					return true, "", nil
				}
				return false, fmt.Sprintf("%d NodeClaims, none for the pod", len(claims)), nil
			})
		})
	}
}

// failedScheduling returns the note of pod's latest FailedScheduling event, "" when none.
func (e *env) failedScheduling(ctx context.Context, ns string, pod *corev1.Pod) (string, error) {
	list, err := e.kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	note := ""
	for _, ev := range list.Items {
		if ev.Reason == "FailedScheduling" && ev.Regarding.UID == pod.UID {
			note = ev.Note
		}
	}
	return note, nil
}

// completeBinding binds the claim name to pv as kube-controller-manager's PV controller does
// (the test's API server runs none): spec.volumeName and the bind-completed annotation in one
// write, then the status.
func (e *env) completeBinding(t *testing.T, ns, name string, pv *corev1.PersistentVolume) {
	t.Helper()
	var pvc corev1.PersistentVolumeClaim
	if err := e.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &pvc); err != nil {
		t.Fatal(err)
	}
	pvc.Spec.VolumeName = pv.Name
	metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, "pv.kubernetes.io/bind-completed", "yes")
	metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, "pv.kubernetes.io/bound-by-controller", "yes")
	if err := e.client.Update(t.Context(), &pvc); err != nil {
		t.Fatalf("binding claim %s: %v", name, err)
	}
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.AccessModes = pvc.Spec.AccessModes
	pvc.Status.Capacity = pv.Spec.Capacity
	if err := e.client.Status().Update(t.Context(), &pvc); err != nil {
		t.Fatalf("marking claim %s bound: %v", name, err)
	}
}

// updateNodePool applies change to the NodePool name.
func (e *env) updateNodePool(t *testing.T, name string, change func(*karpv1.NodePool)) {
	t.Helper()
	var np karpv1.NodePool
	if err := e.client.Get(t.Context(), client.ObjectKey{Name: name}, &np); err != nil {
		t.Fatal(err)
	}
	change(&np)
	if err := e.client.Update(t.Context(), &np); err != nil {
		t.Fatalf("updating NodePool %s: %v", name, err)
	}
}
