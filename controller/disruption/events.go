package disruption

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// Event reasons, Karpenter's.
const (
	EventDisruptionBlocked          = "DisruptionBlocked"
	EventDisruptionLaunching        = "DisruptionLaunching"
	EventDisruptionWaitingReadiness = "DisruptionWaitingReadiness"
	EventDisruptionTerminating      = "DisruptionTerminating"
	EventUnconsolidatable           = "Unconsolidatable"
)

// blockedEventInterval is how often the same DisruptionBlocked message is repeated for a node.
const blockedEventInterval = 5 * time.Minute

// publisher records events on a candidate's Node and NodeClaim, and repeats a DisruptionBlocked
// message for the same node only after blockedEventInterval.
type publisher struct {
	recorder events.EventRecorder
	now      func() time.Time
	mu       sync.Mutex
	seen     map[string]time.Time // node/nodeclaim name + message → last published
}

func newPublisher(r events.EventRecorder, now func() time.Time) *publisher {
	return &publisher{recorder: r, now: now, seen: map[string]time.Time{}}
}

func (p *publisher) publish(nc *karpv1.NodeClaim, node *corev1.Node, eventType, reason, action, message string) {
	var objs []runtime.Object
	if node != nil {
		objs = append(objs, node)
	}
	if nc != nil {
		objs = append(objs, nc)
	}
	for _, obj := range objs {
		p.recorder.Eventf(obj, nil, eventType, reason, action, "%s", message)
	}
}

func (p *publisher) blocked(b Blocked) {
	reason := b.Reason
	if reason == "" {
		reason = EventDisruptionBlocked
	}
	key := b.NodeClaim.Name + "\x00" + reason + "\x00" + b.Message
	now := p.now()
	p.mu.Lock()
	last, ok := p.seen[key]
	if ok && now.Sub(last) < blockedEventInterval {
		p.mu.Unlock()
		return
	}
	p.seen[key] = now
	// forget old entries so the map does not grow with NodeClaims long gone
	for k, t := range p.seen {
		if now.Sub(t) > 2*blockedEventInterval {
			delete(p.seen, k)
		}
	}
	p.mu.Unlock()
	p.publish(b.NodeClaim, b.Node, corev1.EventTypeNormal, reason, "Disrupt", b.Message)
}
