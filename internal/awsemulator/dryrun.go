package awsemulator

import (
	"context"
	"net/http"
)

// dryRun answers an EC2 call made with DryRun=true as EC2 does once the caller is authorized
// (authorize and injected faults come first): DryRunOperation, with nothing done. EC2NodeClass
// validation proves its launch permissions this way.
func dryRun(service string, q Query) error {
	if service != ServiceEC2 || !q.Bool("DryRun") {
		return nil
	}
	return &APIError{Code: "DryRunOperation", Message: "Request would have succeeded, but DryRun flag is set.", Status: http.StatusPreconditionFailed}
}

// runInstances is RunInstances for its dry-runs only: joinery launches through CreateFleet,
// so a real RunInstances is refused rather than half emulated.
func (s *Server) runInstances(context.Context, Query) (any, error) {
	return nil, &APIError{Code: "UnsupportedOperation", Message: "awsemulator emulates RunInstances only with DryRun=true (joinery launches through CreateFleet)", Status: http.StatusBadRequest}
}
