package termination

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/nodeclaim/internal/fixtures"
)

// attachment is a VolumeAttachment of persistent volume pv (an inline volume when pv is empty)
// to node.
func attachment(name, node, pv string) *storagev1.VolumeAttachment {
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: node},
	}
	if pv != "" {
		va.Spec.Source.PersistentVolumeName = ptr.To(pv)
	} else {
		va.Spec.Source.InlineVolumeSpec = &corev1.PersistentVolumeSpec{}
	}
	return va
}

// claim is a PersistentVolumeClaim in "default" bound to pv.
func claim(name, pv string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: pv},
	}
}

func mounting(claimName string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName},
		}})
	}
}

func mountingEphemeral(p *corev1.Pod) {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{
		Ephemeral: &corev1.EphemeralVolumeSource{},
	}})
}

func toleratingDisrupted(p *corev1.Pod) {
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists})
}

func TestTerminationAwaitsVolumeDetachment(t *testing.T) {
	const nodeName = "default-xyz" // the harness's node
	tests := []struct {
		name string
		objs []client.Object
		// deadlinePassed gives the NodeClaim a terminationGracePeriod that has run out.
		deadlinePassed bool
		wantWait       bool
	}{
		{name: "no attachments"},
		{name: "attachment of another node", objs: []client.Object{attachment("va", "elsewhere", "pv-1")}},
		{name: "attachment of an evicted pod's volume waits", objs: []client.Object{attachment("va", nodeName, "pv-1")}, wantWait: true},
		{name: "inline volume attachment waits", objs: []client.Object{attachment("va", nodeName, "")}, wantWait: true},
		{
			name: "volume of a pod tolerating the disrupted taint is not awaited",
			objs: []client.Object{
				attachment("va", nodeName, "pv-1"), claim("data", "pv-1"),
				pod("agent", nodeName, toleratingDisrupted, mounting("data")),
			},
		},
		{
			name: "generic ephemeral volume of a static pod is not awaited",
			objs: []client.Object{
				attachment("va", nodeName, "pv-1"), claim("static-scratch", "pv-1"),
				pod("static", nodeName, annotated(corev1.MirrorPodAnnotationKey, "x"), mountingEphemeral),
			},
		},
		{
			name: "finished pod tolerating the taint keeps nothing attached",
			objs: []client.Object{
				attachment("va", nodeName, "pv-1"), claim("data", "pv-1"),
				pod("job", nodeName, toleratingDisrupted, mounting("data"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
			},
			wantWait: true,
		},
		{name: "terminationGracePeriod over ends the wait", objs: []client.Object{attachment("va", nodeName, "pv-1")}, deadlinePassed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
			h, nc, node := newHarness(t, nil, WithClock(clocktesting.NewFakePassiveClock(now)))
			if tt.deadlinePassed {
				fixtures.Get(t, h.client, nc)
				nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Minute}
				nc.Annotations = map[string]string{karpv1.NodeClaimTerminationTimestampAnnotationKey: now.Add(-time.Second).Format(time.RFC3339)}
				if err := h.client.Update(ctx, nc); err != nil {
					t.Fatal(err)
				}
			}
			create(t, h.client, tt.objs...)
			deleteNode(t, h.client, node)

			result := h.reconcileNode(t, node.Name)
			if tt.wantWait {
				if result.RequeueAfter != volumeDetachPollInterval {
					t.Errorf("requeue after %v, want %v", result.RequeueAfter, volumeDetachPollInterval)
				}
				if gone(t, h.client, node) || h.provider.Deletes != 0 {
					t.Fatalf("node released (instance deletes %d) while a volume is attached", h.provider.Deletes)
				}
				return
			}
			if !gone(t, h.client, node) {
				t.Errorf("node kept (requeue after %v) with no volume to wait for", result.RequeueAfter)
			}
		})
	}
}

func TestVolumeDetachmentReleasesNode(t *testing.T) {
	ctx := context.Background()
	h, _, node := newHarness(t, nil)
	va := attachment("va", node.Name, "pv-1")
	create(t, h.client, va)
	deleteNode(t, h.client, node)

	h.reconcileNode(t, node.Name)
	if gone(t, h.client, node) {
		t.Fatal("node released while its volume is attached")
	}
	// The attach-detach controller detaches the volume and deletes the attachment.
	if err := h.client.Delete(ctx, va); err != nil {
		t.Fatal(err)
	}
	if requests := nodeOfVolumeAttachment(ctx, va); len(requests) != 1 || requests[0].Name != node.Name {
		t.Errorf("attachment maps to %v, want node %s", requests, node.Name)
	}
	h.reconcileNode(t, node.Name)
	if !gone(t, h.client, node) {
		t.Error("node kept after its volume detached")
	}
}

func TestNodeWithoutNodeClaimIsReleasedWithoutDrain(t *testing.T) {
	ctx := context.Background()
	h, nc, node := newHarness(t, nil)
	// The NodeClaim is gone (its finalizer removed by hand); a PDB would refuse every eviction.
	nc.Finalizers = nil
	if err := h.client.Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if err := h.client.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	web := pod("web", node.Name)
	create(t, h.client, web, attachment("va", node.Name, "pv-1"))
	deleteNode(t, h.client, node)

	h.reconcileNode(t, node.Name)
	if !gone(t, h.client, node) {
		t.Fatal("orphan node kept its finalizer")
	}
	if h.provider.Deletes != 1 {
		t.Errorf("instance deletes = %d, want 1 (terminated by provider ID)", h.provider.Deletes)
	}
	if left := podsLeft(t, h.client, web); len(left) != 1 {
		t.Errorf("pods of an orphan node were evicted: left %v", left)
	}
}
