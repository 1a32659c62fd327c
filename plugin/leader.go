package plugin

import (
	"context"
	"sync"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Leadership tells the plugin when this process may provision. kube-scheduler builds its
// plugins — and so starts their watches — before leader election, and only the leader
// schedules; the plugin's batch loop must likewise run only in the leader, or every standby
// replica publishes NodeClaims of its own for the same pods.
type Leadership interface {
	// Leading returns a channel that is closed once this process leads. kube-scheduler exits
	// when it loses the lease, so leading lasts as long as the process.
	Leading() <-chan struct{}
}

// LeaderGate is a Leadership that learns of leadership from kube-scheduler's own leader
// election: Observe wraps the election's lock, and the gate opens when this process writes
// itself into the lease as its holder.
type LeaderGate struct {
	once    sync.Once
	leading chan struct{}
}

// NewLeaderGate returns a closed gate.
func NewLeaderGate() *LeaderGate { return &LeaderGate{leading: make(chan struct{})} }

// Leading implements Leadership.
func (g *LeaderGate) Leading() <-chan struct{} { return g.leading }

// Lead opens the gate: for a scheduler that runs without leader election.
func (g *LeaderGate) Lead() { g.once.Do(func() { close(g.leading) }) }

// Observe returns lock, watched: a successful Create or Update of the lease naming lock's own
// identity as holder — what the elector does when it acquires or renews — opens the gate.
func (g *LeaderGate) Observe(lock resourcelock.Interface) resourcelock.Interface {
	return &observedLock{Interface: lock, gate: g}
}

type observedLock struct {
	resourcelock.Interface
	gate *LeaderGate
}

func (l *observedLock) Create(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, record)
	l.observe(record, err)
	return err
}

func (l *observedLock) Update(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, record)
	l.observe(record, err)
	return err
}

func (l *observedLock) observe(record resourcelock.LeaderElectionRecord, err error) {
	if err == nil && record.HolderIdentity != "" && record.HolderIdentity == l.Identity() {
		l.gate.Lead()
	}
}
