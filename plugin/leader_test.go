package plugin

import (
	"context"
	"errors"
	"testing"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a resourcelock.Interface whose writes succeed unless err is set.
type fakeLock struct {
	identity string
	err      error
}

func (l *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return nil, nil, errors.New("not used")
}
func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }
func (l *fakeLock) RecordEvent(string)                                              {}
func (l *fakeLock) Identity() string                                                { return l.identity }
func (l *fakeLock) Describe() string                                                { return "fake" }

func TestLeaderGate(t *testing.T) {
	cases := []struct {
		name     string
		write    string // "create" or "update"
		holder   string
		err      error
		wantOpen bool
	}{
		{name: "acquires by creating the lease", write: "create", holder: "me", wantOpen: true},
		{name: "acquires or renews by updating the lease", write: "update", holder: "me", wantOpen: true},
		{name: "another holder", write: "update", holder: "other", wantOpen: false},
		{name: "releasing the lease", write: "update", holder: "", wantOpen: false},
		{name: "the write failed (a conflict: someone else won)", write: "update", holder: "me", err: errors.New("conflict"), wantOpen: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gate := NewLeaderGate()
			lock := gate.Observe(&fakeLock{identity: "me", err: tc.err})
			record := resourcelock.LeaderElectionRecord{HolderIdentity: tc.holder}
			var err error
			if tc.write == "create" {
				err = lock.Create(t.Context(), record)
			} else {
				err = lock.Update(t.Context(), record)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("write returned %v, want the lock's own %v", err, tc.err)
			}
			select {
			case <-gate.Leading():
				if !tc.wantOpen {
					t.Error("the gate opened")
				}
			default:
				if tc.wantOpen {
					t.Error("the gate is still closed")
				}
			}
		})
	}
}
