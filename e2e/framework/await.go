package framework

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// PollInterval is how often Eventually re-checks a condition.
const PollInterval = 250 * time.Millisecond

// Eventually polls check every PollInterval until it reports done, and fails the test with
// what and check's last error when timeout passes first. A check's error is not fatal: it says
// why the condition does not hold yet, and is ignored once check reports done.
func Eventually(t *testing.T, timeout time.Duration, what string, check func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := poll(t.Context(), timeout, check); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// poll is Eventually without the test: it returns an error saying how long it waited and
// what still failed.
func poll(ctx context.Context, timeout time.Duration, check func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	begin := time.Now()
	var lastErr error
	for {
		done, err := check(ctx)
		if done {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("not done after %s: %w", time.Since(begin).Round(time.Millisecond), lastErr)
			}
			return fmt.Errorf("not done after %s", time.Since(begin).Round(time.Millisecond))
		case <-time.After(PollInterval):
		}
	}
}
