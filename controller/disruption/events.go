package disruption

import (
	"fmt"
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
	// EventConsolidationCandidate goes on each candidate's Node and NodeClaim when a
	// consolidation method chooses a command, before it is validated.
	EventConsolidationCandidate = "ConsolidationCandidate"
	// EventConsolidationRejected goes on them when validation drops that command.
	EventConsolidationRejected = "ConsolidationRejected"
	// EventStrayDisruptionCommand is joinery's own: a command annotation no command of this
	// cluster made was removed from a NodeClaim.
	EventStrayDisruptionCommand = "StrayDisruptionCommand"
	// EventInvalidDisruptionBudget is joinery's own: a NodePool budget cannot work as written.
	EventInvalidDisruptionBudget = "InvalidDisruptionBudget"
)

// nodePoolBlockedInterval is how often a NodePool's DisruptionBlocked event is repeated for
// a reason (Karpenter's: a budget can change every minute).
const nodePoolBlockedInterval = time.Minute

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

// once reports whether key was not published within interval, and records it as published.
func (p *publisher) once(key string, interval time.Duration) bool {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if last, ok := p.seen[key]; ok && now.Sub(last) < interval {
		return false
	}
	p.seen[key] = now
	return true
}

// nodePoolBlocked publishes Karpenter's NodePool-level DisruptionBlocked for a reason whose
// budget allows nothing, at most once a minute per NodePool and reason.
func (p *publisher) nodePoolBlocked(np *karpv1.NodePool, reason string) {
	if !p.once("nodepool\x00"+np.Name+"\x00"+reason, nodePoolBlockedInterval) {
		return
	}
	p.recorder.Eventf(np, nil, corev1.EventTypeNormal, EventDisruptionBlocked, "Disrupt",
		"No allowed disruptions for disruption reason %s due to blocking budget", reason)
}

// consolidationEvent publishes ConsolidationCandidate or ConsolidationRejected (why not empty)
// on each of cmd's candidates, with the savings when they are known.
func (p *publisher) consolidationEvent(cmd *Command, why string, savings *float64) {
	reason, msg := EventConsolidationCandidate, "Consolidation candidate: "+cmd.String()
	if why != "" {
		reason, msg = EventConsolidationRejected, "Consolidation rejected: "+cmd.String()+", reason: "+why
	}
	if savings != nil {
		msg += fmt.Sprintf(" (savings: $%.2f)", *savings)
	}
	for _, cand := range cmd.Candidates {
		p.publish(cand.NodeClaim, cand.Node, corev1.EventTypeNormal, reason, "Disrupt", msg)
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
