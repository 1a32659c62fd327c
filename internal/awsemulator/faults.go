package awsemulator

import (
	"net/http"
	"time"
)

// Fault makes matching calls fail or slow down. Service and Action select the calls ("" matches
// any); Times is how many calls it affects (0: every call until ClearFaults).
type Fault struct {
	Service string
	Action  string
	// Code and Status make the call fail with that error; an empty Code only adds Latency.
	Code    string
	Message string
	Status  int
	// Latency delays the answer (before the error, if any).
	Latency time.Duration
	Times   int

	used int
}

// Common faults with AWS's codes and statuses.
var (
	// Throttling is EC2's throttling answer; the SDK retries it.
	Throttling = Fault{Code: "RequestLimitExceeded", Message: "Request limit exceeded.", Status: http.StatusServiceUnavailable}
	// ServerError is a 500 the SDK retries.
	ServerError = Fault{Code: "InternalError", Message: "An internal error has occurred", Status: http.StatusInternalServerError}
	// Unauthorized is EC2's authorization failure; the SDK does not retry it.
	Unauthorized = Fault{Code: "UnauthorizedOperation", Message: "You are not authorized to perform this operation.", Status: http.StatusForbidden}
	// AuthFailure is EC2's answer to bad credentials.
	AuthFailure = Fault{Code: "AuthFailure", Message: "AWS was not able to validate the provided access credentials", Status: http.StatusUnauthorized}
)

// For returns a copy of f limited to service's action, affecting times calls (0: all).
func (f Fault) For(service, action string, times int) Fault {
	f.Service, f.Action, f.Times = service, action, times
	return f
}

// Inject adds a fault; faults are matched in the order they were added.
func (s *Server) Inject(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	copied := f
	copied.used = 0
	s.faults = append(s.faults, &copied)
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// takeFault returns the first fault matching the call and counts it. Callers hold s.mu.
func (s *Server) takeFault(service, action string) *Fault {
	for i, f := range s.faults {
		if (f.Service != "" && f.Service != service) || (f.Action != "" && f.Action != action) {
			continue
		}
		f.used++
		if f.Times > 0 && f.used >= f.Times {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
		}
		return f
	}
	return nil
}

func (f *Fault) apiError() *APIError {
	msg := f.Message
	if msg == "" {
		msg = "injected fault " + f.Code
	}
	return &APIError{Code: f.Code, Message: msg, Status: f.Status}
}
