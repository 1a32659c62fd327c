package nodeclass

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
)

// NoMatchError says a part of the class resolved to nothing: no subnets, security groups or
// AMIs match its terms. Nodes cannot launch until the spec or the account changes.
type NoMatchError struct {
	// What names the part, e.g. "subnets".
	What string
	// Detail says what was looked for.
	Detail string
}

func (e *NoMatchError) Error() string {
	return fmt.Sprintf("no %s matched: %s", e.What, e.Detail)
}

// Class is how a resolution error should be handled.
type Class string

// Error classes.
const (
	// ClassThrottled: AWS rate-limited the calls (after the SDK's own retries); retry soon.
	ClassThrottled Class = "Throttled"
	// ClassTransient: a 5xx or a network error; retry soon.
	ClassTransient Class = "Transient"
	// ClassUnauthorized: the credentials are invalid or lack a permission; retrying does not
	// help until IAM changes.
	ClassUnauthorized Class = "Unauthorized"
	// ClassNotFound: something the spec names does not exist (a role, a parameter, a profile).
	ClassNotFound Class = "NotFound"
	// ClassNoMatch: the selectors matched nothing.
	ClassNoMatch Class = "NoMatch"
	// ClassInvalid: AWS refused the request as malformed or over a limit.
	ClassInvalid Class = "Invalid"
)

// Classification is an error's class plus the AWS error code, when AWS answered one.
type Classification struct {
	Class Class
	Code  string
}

// Retryable reports whether retrying the same request may succeed without a change.
func (c Classification) Retryable() bool {
	return c.Class == ClassThrottled || c.Class == ClassTransient
}

// Classify sorts an error from resolution.
func Classify(err error) Classification {
	var noMatch *NoMatchError
	if errors.As(err, &noMatch) {
		return Classification{Class: ClassNoMatch}
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return Classification{Class: ClassTransient}
	}
	code := apiErr.ErrorCode()
	switch {
	case awserr.IsThrottled(err):
		return Classification{Class: ClassThrottled, Code: code}
	case awserr.IsUnauthorized(err):
		return Classification{Class: ClassUnauthorized, Code: code}
	// SSM's GetParameters answers InvalidParameters for names that do not exist.
	case awserr.IsNotFound(err) || code == "InvalidParameters":
		return Classification{Class: ClassNotFound, Code: code}
	case apiErr.ErrorFault() == smithy.FaultServer || code == "InternalError" || code == "ServiceUnavailable" || code == "InternalFailure":
		return Classification{Class: ClassTransient, Code: code}
	}
	return Classification{Class: ClassInvalid, Code: code}
}

// isCode reports whether err is an AWS error with the given code.
func isCode(err error, code string) bool {
	return awserr.Code(err) == code
}

// Message is a short, user-facing account of a resolution error for a status condition: what
// joinery was doing and AWS's error code and message, without the SDK's request details.
func Message(err error) string {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return err.Error()
	}
	doing, _, _ := strings.Cut(err.Error(), ": operation error")
	return fmt.Sprintf("%s: %s: %s", doing, apiErr.ErrorCode(), apiErr.ErrorMessage())
}
