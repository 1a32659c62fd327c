package cloudprovider

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorClassification(t *testing.T) {
	cause := errors.New("boom")
	tests := []struct {
		name string
		err  error
		is   func(error) bool
	}{
		{name: "insufficient capacity", err: NewInsufficientCapacityError(cause), is: IsInsufficientCapacityError},
		{name: "nodeclaim not found", err: NewNodeClaimNotFoundError(cause), is: IsNodeClaimNotFoundError},
		{name: "nodeclass not ready", err: NewNodeClassNotReadyError(cause), is: IsNodeClassNotReadyError},
		{name: "create error", err: NewCreateError(cause, "LaunchFailed", "no subnet"), is: func(err error) bool { _, ok := AsCreateError(err); return ok }},
	}
	classifiers := []func(error) bool{IsInsufficientCapacityError, IsNodeClaimNotFoundError, IsNodeClassNotReadyError, func(err error) bool { _, ok := AsCreateError(err); return ok }}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wrapped := fmt.Errorf("launching: %w", tt.err)
			if !tt.is(wrapped) {
				t.Errorf("classifier does not see %v", wrapped)
			}
			if !errors.Is(wrapped, cause) {
				t.Errorf("%v does not unwrap to its cause", wrapped)
			}
			matches := 0
			for _, classify := range classifiers {
				if classify(wrapped) {
					matches++
				}
			}
			if matches != 1 {
				t.Errorf("%v matches %d classifiers, want exactly 1", wrapped, matches)
			}
		})
	}
	if IsInsufficientCapacityError(cause) || IsInsufficientCapacityError(nil) {
		t.Error("plain or nil error classified as insufficient capacity")
	}
}

func TestCreateErrorCondition(t *testing.T) {
	err := fmt.Errorf("ctx: %w", NewCreateError(errors.New("boom"), "LaunchFailed", "no subnet in zone"))
	ce, ok := AsCreateError(err)
	if !ok || ce.ConditionReason != "LaunchFailed" || ce.ConditionMessage != "no subnet in zone" {
		t.Fatalf("AsCreateError() = %+v, %v", ce, ok)
	}
	if want := "ctx: creating nodeclaim (LaunchFailed: no subnet in zone): boom"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

func TestRepairPolicies(t *testing.T) {
	kubelet := KubeletRepairPolicies()
	if len(kubelet) != 2 || kubelet[0].TolerationDuration.Minutes() != 30 {
		t.Errorf("KubeletRepairPolicies() = %+v", kubelet)
	}
	agent := NodeMonitoringAgentRepairPolicies()
	if len(agent) != 5 || agent[0].ConditionType != "AcceleratedHardwareReady" || agent[0].TolerationDuration.Minutes() != 10 {
		t.Errorf("NodeMonitoringAgentRepairPolicies() = %+v", agent)
	}
}
