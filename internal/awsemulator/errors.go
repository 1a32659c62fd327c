package awsemulator

import (
	"errors"
	"fmt"
	"net/http"
)

// APIError is an error answer in the service's own format: Code is what the SDK surfaces as
// the smithy APIError's ErrorCode, Status the HTTP status (400 when zero).
type APIError struct {
	Code    string
	Message string
	Status  int
}

func (e *APIError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

func (e *APIError) status() int {
	if e.Status == 0 {
		return http.StatusBadRequest
	}
	return e.Status
}

// faultType is IAM's Sender/Receiver split: 5xx are the service's fault.
func (e *APIError) faultType() string {
	if e.status() >= 500 {
		return "Receiver"
	}
	return "Sender"
}

func asAPIError(err error) *APIError {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	return &APIError{Code: "InternalError", Message: err.Error(), Status: http.StatusInternalServerError}
}

// Errors the emulated services answer with; the codes are AWS's.
func errInvalidParameter(format string, args ...any) *APIError {
	return &APIError{Code: "InvalidParameterValue", Message: fmt.Sprintf(format, args...)}
}

func errMissingParameter(name string) *APIError {
	return &APIError{Code: "MissingParameter", Message: fmt.Sprintf("the request must contain the parameter %s", name)}
}
