package awsemulator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// restAction answers a REST-JSON call (ARC zonal shift, EKS) with the request's path values,
// query and body. It returns the value to encode as the JSON answer, or an *APIError.
type restAction func(ctx context.Context, r restRequest) (any, error)

// restRequest is what a REST-JSON action reads of its request.
type restRequest struct {
	path  func(name string) string // a {name} of the route's pattern
	query url.Values
	body  []byte
}

// handleREST registers a REST-JSON operation of service at pattern, a net/http ServeMux
// pattern such as "DELETE /zonalshifts/{zonalShiftId}".
func (s *Server) handleREST(service, operation, pattern string, fn restAction) {
	mux := s.rest[service]
	if mux == nil {
		mux = http.NewServeMux()
		s.rest[service] = mux
	}
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		body, _ := r.Context().Value(restBodyKey{}).([]byte)
		result, err := s.dispatch(r.Context(), service, operation, callerOf(r), func(ctx context.Context) (any, error) {
			if err := s.authorize(r, operation); err != nil {
				return nil, err
			}
			return fn(ctx, restRequest{path: r.PathValue, query: r.URL.Query(), body: body})
		})
		writeREST(w, result, err)
	})
}

// restBodyKey carries the request body serveHTTP already read to the route's handler.
type restBodyKey struct{}

// serveREST routes a REST-JSON call by method and path; a route the emulator does not know is
// answered as AWS answers an unknown operation.
func (s *Server) serveREST(w http.ResponseWriter, r *http.Request, service string, body []byte, requestID string) {
	w.Header().Set("X-Amzn-RequestId", requestID)
	mux := s.rest[service]
	if mux == nil {
		writeREST(w, nil, &APIError{Code: "UnknownOperationException", Message: fmt.Sprintf("awsemulator does not emulate %s", service), Status: http.StatusNotFound})
		return
	}
	if _, pattern := mux.Handler(r); pattern == "" {
		writeREST(w, nil, &APIError{Code: "UnknownOperationException", Message: fmt.Sprintf("awsemulator does not emulate %s %s of %s", r.Method, r.URL.Path, service), Status: http.StatusNotFound})
		return
	}
	mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), restBodyKey{}, body)))
}

// writeREST writes a REST-JSON answer: the result as JSON, or the error's code in
// X-Amzn-ErrorType (which the SDK reads first) and its message in the body.
func writeREST(w http.ResponseWriter, result any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		apiErr := asAPIError(err)
		w.Header().Set("X-Amzn-ErrorType", apiErr.Code)
		w.WriteHeader(apiErr.status())
		_ = json.NewEncoder(w).Encode(map[string]string{"message": apiErr.Message})
		return
	}
	if result == nil {
		result = struct{}{}
	}
	body, err := json.Marshal(result)
	if err != nil {
		w.Header().Set("X-Amzn-ErrorType", "InternalServerException")
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": fmt.Sprintf("awsemulator cannot encode its answer: %v", err)})
		return
	}
	_, _ = w.Write(body)
}

// epochSeconds is a time as REST-JSON bodies carry it: seconds since the epoch.
func epochSeconds(t time.Time) float64 {
	return float64(t.UnixMilli()) / 1000
}
