package framework

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	cases := []struct {
		name    string
		check   func(calls int) (bool, error)
		wantErr string // empty: poll succeeds
	}{
		{"done at once", func(int) (bool, error) { return true, nil }, ""},
		{"done after retries", func(calls int) (bool, error) { return calls >= 3, errors.New("not yet") }, ""},
		{"done wins over a reason", func(int) (bool, error) { return true, errors.New("Ready=True") }, ""},
		{"timeout names the last reason", func(int) (bool, error) { return false, errors.New("phase Pending") }, "phase Pending"},
		{"timeout without a reason", func(int) (bool, error) { return false, nil }, "not done after"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := poll(t.Context(), time.Second, func(context.Context) (bool, error) {
				calls++
				return tc.check(calls)
			})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("poll: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("poll = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
