package disruption

import (
	"errors"
	"fmt"
)

// Refusal is why a command, or a move for a candidate, is refused: not a failure, so the
// functions that decide return it as their error and callers tell it from one with errors.As
// (refusalOf).
type Refusal struct {
	Message string
	// Budget says only the budget refused it: the command may run once the nodes of the
	// commands before it are gone.
	Budget bool
}

func (r *Refusal) Error() string { return r.Message }

// refused returns a *Refusal with the formatted message.
func refused(format string, args ...any) error {
	return &Refusal{Message: fmt.Sprintf(format, args...)}
}

// refusalOf returns err's refusal; nil when err is nil or a failure.
func refusalOf(err error) *Refusal {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return nil
}
