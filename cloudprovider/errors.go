package cloudprovider

import (
	"errors"
	"fmt"
)

// InsufficientCapacityError means no offering compatible with the request could be launched
// (none available, or the cloud refused with an insufficient-capacity answer). Callers mark the
// offerings unavailable and try others; it is not a failure of the NodeClaim's configuration.
type InsufficientCapacityError struct {
	Err error
	// Offerings are the offerings the cloud refused, when the provider knows them; callers
	// mark exactly these unavailable. Empty means every offering the launch could have used.
	Offerings []OfferingKey
}

// NewInsufficientCapacityError wraps err as an InsufficientCapacityError.
func NewInsufficientCapacityError(err error, refused ...OfferingKey) *InsufficientCapacityError {
	return &InsufficientCapacityError{Err: err, Offerings: refused}
}

func (e *InsufficientCapacityError) Error() string {
	return "insufficient capacity: " + errString(e.Err)
}
func (e *InsufficientCapacityError) Unwrap() error { return e.Err }

// RefusedOfferings returns the offerings an InsufficientCapacityError in err's chain names, or
// nil when there is none or it names none.
func RefusedOfferings(err error) []OfferingKey {
	var target *InsufficientCapacityError
	if errors.As(err, &target) {
		return target.Offerings
	}
	return nil
}

// IsInsufficientCapacityError reports whether err is or wraps an InsufficientCapacityError.
func IsInsufficientCapacityError(err error) bool {
	var target *InsufficientCapacityError
	return errors.As(err, &target)
}

// NodeClaimNotFoundError means the instance behind a NodeClaim does not exist (any more). For
// Delete it signals that termination is complete.
type NodeClaimNotFoundError struct{ Err error }

// NewNodeClaimNotFoundError wraps err as a NodeClaimNotFoundError.
func NewNodeClaimNotFoundError(err error) *NodeClaimNotFoundError {
	return &NodeClaimNotFoundError{Err: err}
}

func (e *NodeClaimNotFoundError) Error() string { return "nodeclaim not found: " + errString(e.Err) }
func (e *NodeClaimNotFoundError) Unwrap() error { return e.Err }

// IsNodeClaimNotFoundError reports whether err is or wraps a NodeClaimNotFoundError.
func IsNodeClaimNotFoundError(err error) bool {
	var target *NodeClaimNotFoundError
	return errors.As(err, &target)
}

// NodeClassNotReadyError means the NodeClass a NodePool or NodeClaim refers to is missing or not
// Ready, so nothing can be launched with it until it is fixed.
type NodeClassNotReadyError struct{ Err error }

// NewNodeClassNotReadyError wraps err as a NodeClassNotReadyError.
func NewNodeClassNotReadyError(err error) *NodeClassNotReadyError {
	return &NodeClassNotReadyError{Err: err}
}

func (e *NodeClassNotReadyError) Error() string { return "nodeclass not ready: " + errString(e.Err) }
func (e *NodeClassNotReadyError) Unwrap() error { return e.Err }

// IsNodeClassNotReadyError reports whether err is or wraps a NodeClassNotReadyError.
func IsNodeClassNotReadyError(err error) bool {
	var target *NodeClassNotReadyError
	return errors.As(err, &target)
}

// CreateError is a launch failure that should be shown on the NodeClaim: its Launched condition
// gets ConditionReason and ConditionMessage.
type CreateError struct {
	Err              error
	ConditionReason  string
	ConditionMessage string
}

// NewCreateError wraps err as a CreateError with the reason and message for the Launched
// condition.
func NewCreateError(err error, reason, message string) *CreateError {
	return &CreateError{Err: err, ConditionReason: reason, ConditionMessage: message}
}

func (e *CreateError) Error() string {
	return fmt.Sprintf("creating nodeclaim (%s: %s): %s", e.ConditionReason, e.ConditionMessage, errString(e.Err))
}
func (e *CreateError) Unwrap() error { return e.Err }

// AsCreateError returns the CreateError in err's chain, if any.
func AsCreateError(err error) (*CreateError, bool) {
	var target *CreateError
	ok := errors.As(err, &target)
	return target, ok
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
