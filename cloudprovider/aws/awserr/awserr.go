// Package awserr sorts AWS API errors into the kinds joinery reacts to differently: throttling
// (back off and keep the last good data), authorization (a permission is missing; retrying will
// not help) and not-found (the resource is gone).
package awserr

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"
)

// Kinds of AWS errors. Classify wraps an error with one of them so callers can use errors.Is.
var (
	ErrThrottled    = errors.New("throttled by AWS")
	ErrUnauthorized = errors.New("not authorized by AWS")
	ErrNotFound     = errors.New("not found in AWS")
)

var (
	throttlingCodes = set("Throttling", "ThrottlingException", "ThrottledException", "RequestLimitExceeded",
		"RequestThrottled", "RequestThrottledException", "TooManyRequestsException", "SlowDown",
		"PriorRequestNotComplete", "EC2ThrottledException", "BandwidthLimitExceeded")
	authCodes = set("UnauthorizedOperation", "AuthFailure", "AccessDenied", "AccessDeniedException",
		"InvalidClientTokenId", "UnrecognizedClientException", "SignatureDoesNotMatch", "ExpiredToken",
		"ExpiredTokenException", "OptInRequired", "Blocked")
	notFoundCodes = set("NotFoundException", "NoSuchEntity", "ParameterNotFound", "ResourceNotFoundException",
		"InvalidInstanceType")
)

// Code returns the AWS error code of err, or "" when err is not an AWS API error.
func Code(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// Classify returns err wrapped with ErrThrottled, ErrUnauthorized or ErrNotFound when its code
// says so, and err unchanged otherwise (including nil).
func Classify(err error) error {
	code := Code(err)
	var kind error
	switch {
	case code == "":
		return err
	case throttlingCodes[code]:
		kind = ErrThrottled
	case authCodes[code]:
		kind = ErrUnauthorized
	case notFoundCodes[code] || strings.HasSuffix(code, ".NotFound") || strings.HasSuffix(code, "NotFound"):
		kind = ErrNotFound
	default:
		return err
	}
	return fmt.Errorf("%w: %w", kind, err)
}

// IsThrottled reports whether err is an AWS throttling error.
func IsThrottled(err error) bool { return errors.Is(Classify(err), ErrThrottled) }

// IsUnauthorized reports whether err is an AWS authorization or authentication failure.
func IsUnauthorized(err error) bool { return errors.Is(Classify(err), ErrUnauthorized) }

// IsNotFound reports whether err says the resource does not exist.
func IsNotFound(err error) bool { return errors.Is(Classify(err), ErrNotFound) }

func set(codes ...string) map[string]bool {
	out := make(map[string]bool, len(codes))
	for _, c := range codes {
		out[c] = true
	}
	return out
}
