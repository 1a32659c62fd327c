package plugin

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestBatcherWindows advances a fake clock in 100ms steps, triggering at the given offsets,
// and checks when the window closes.
func TestBatcherWindows(t *testing.T) {
	const step = 100 * time.Millisecond
	cases := []struct {
		name      string
		idle, max time.Duration
		triggers  []time.Duration // offsets from the first trigger
		wantClose time.Duration
	}{
		{name: "idle fire", idle: time.Second, max: 10 * time.Second, triggers: []time.Duration{0}, wantClose: time.Second},
		{name: "trigger resets idle", idle: time.Second, max: 10 * time.Second,
			triggers: []time.Duration{0, 500 * time.Millisecond}, wantClose: 1500 * time.Millisecond},
		{name: "several resets", idle: time.Second, max: 10 * time.Second,
			triggers: []time.Duration{0, 300 * time.Millisecond, 600 * time.Millisecond}, wantClose: 1600 * time.Millisecond},
		{name: "max fire under a steady trickle", idle: time.Second, max: 3 * time.Second,
			triggers: []time.Duration{0, 900 * time.Millisecond, 1800 * time.Millisecond, 2700 * time.Millisecond}, wantClose: 3 * time.Second},
		{name: "idle equal to max", idle: time.Second, max: time.Second,
			triggers: []time.Duration{0, 500 * time.Millisecond}, wantClose: time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clk := clocktesting.NewFakeClock(start)
			b := NewBatcher(clk, tc.idle, tc.max)
			closed := make(chan time.Duration, 1)
			go func() {
				if b.Wait(t.Context()) {
					closed <- clk.Since(start)
				}
			}()
			pending := tc.triggers
			for elapsed := time.Duration(0); elapsed <= tc.max+tc.idle; elapsed += step {
				for len(pending) > 0 && pending[0] == elapsed {
					b.Trigger()
					pending = pending[1:]
				}
				if at, ok := settle(t, clk, closed); ok {
					if at != tc.wantClose {
						t.Fatalf("window closed at %v, want %v", at, tc.wantClose)
					}
					return
				}
				clk.Step(step)
			}
			t.Fatalf("window never closed; want %v", tc.wantClose)
		})
	}
}

// settle waits until the batcher either closed the window or sleeps on the fake clock.
func settle(t *testing.T, clk *clocktesting.FakeClock, closed <-chan time.Duration) (time.Duration, bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case at := <-closed:
			return at, true
		default:
		}
		if clk.HasWaiters() {
			return 0, false
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("batcher neither closed the window nor waited on the clock")
	return 0, false
}

func TestBatcherReopensAfterClose(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := NewBatcher(clk, time.Second, 10*time.Second)
	for round := range 2 {
		done := make(chan bool, 1)
		go func() { done <- b.Wait(t.Context()) }()
		b.Trigger()
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(time.Second)
		if !<-done {
			t.Fatalf("round %d: Wait returned false", round)
		}
	}
}

func TestBatcherWaitEndsWithContext(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := NewBatcher(clk, time.Second, 10*time.Second)
	for _, triggered := range []bool{false, true} {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan bool, 1)
		go func() { done <- b.Wait(ctx) }()
		if triggered {
			b.Trigger()
			for !clk.HasWaiters() {
				time.Sleep(time.Millisecond)
			}
		}
		cancel()
		if <-done {
			t.Errorf("triggered=%v: Wait returned true after its context ended", triggered)
		}
	}
}
