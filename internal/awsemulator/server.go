package awsemulator

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Service names as they appear in the SigV4 credential scope.
const (
	ServiceEC2     = "ec2"
	ServiceIAM     = "iam"
	ServiceSSM     = "ssm"
	ServicePricing = "pricing"
	ServiceSQS     = "sqs"
	ServiceARC     = "arc-zonal-shift"
	ServiceEKS     = "eks"
	ServiceSTS     = "sts"
)

// DefaultRegion is the region a Server answers for unless Options say otherwise.
const DefaultRegion = "us-west-2"

// queryAction answers a query-protocol call (EC2, IAM). It returns the value to encode inside
// the response element, or an *APIError.
type queryAction func(ctx context.Context, q Query) (any, error)

// jsonAction answers a JSON-protocol call (SSM, Pricing, SQS) with the decoded request body.
type jsonAction func(ctx context.Context, body json.RawMessage) (any, error)

// Options configure a Server.
type Options struct {
	// Region is the region the emulator is in; DefaultRegion when empty.
	Region string
	// ReadOnlyAccessKeys are access key IDs allowed only Describe*, Get* and List* calls
	// (readonly.go); any other key may call anything.
	ReadOnlyAccessKeys []string
	// Cluster is the EKS cluster the account runs (eks.go); its zero fields take
	// DefaultEKSCluster's.
	Cluster EKSCluster
}

// Server is a running emulator. Create it with NewServer and Close it when done.
type Server struct {
	// URL is the base endpoint for every SDK client, e.g. http://127.0.0.1:41234.
	URL    string
	Region string

	httpServer *httptest.Server
	requestSeq atomic.Int64
	// readOnlyKeys are Options.ReadOnlyAccessKeys.
	readOnlyKeys []string

	// mu guards every piece of emulated state; actions run with it held.
	mu     sync.Mutex
	query  map[string]queryAction    // "<service>:<Action>"
	json   map[string]jsonAction     // "<service>:<Operation>"
	rest   map[string]*http.ServeMux // REST-JSON routes by service (rest.go)
	faults []*Fault
	// calls counts calls by "<service>:<Action>" and by "<service>:<Action>:<access key>".
	calls   map[string]int
	started time.Time
	// now is the emulator's clock (time.Now); tests of expiring state set it.
	now func() time.Time

	// resources holds subnets, security groups, images, capacity reservations, SSM
	// parameters and IAM roles and instance profiles (resources*.go).
	resources *resourceState
	catalog   *catalogState // instance types, offerings and prices (catalog*.go)
	launch    *launchState  // launch templates, fleets and instances (launch*.go, fleet.go, instances.go)
	sqs       *sqsState     // queues and messages (sqs*.go)
	cluster   EKSCluster    // the EKS cluster (eks.go)
	shifts    *shiftState   // ARC zonal shifts (arc.go)
}

// NewServer starts an emulator on 127.0.0.1 with its built-in catalog and state.
func NewServer(opts Options) *Server {
	s := &Server{
		Region:       opts.Region,
		readOnlyKeys: opts.ReadOnlyAccessKeys,
		query:        map[string]queryAction{},
		json:         map[string]jsonAction{},
		rest:         map[string]*http.ServeMux{},
		calls:        map[string]int{},
		started:      time.Now(),
		now:          time.Now,
	}
	if s.Region == "" {
		s.Region = DefaultRegion
	}
	s.cluster = opts.Cluster.withDefaults(s.Region)
	s.register()
	s.httpServer = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.httpServer.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.httpServer.Close() }

// Config returns an aws.Config whose clients talk to this server with static credentials.
// Retries stay at the SDK's defaults so tests see the SDK's real retry behaviour.
func (s *Server) Config() aws.Config {
	return aws.Config{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIAJOINERYTEST", "secret", ""),
		HTTPClient:   bufferedBodyClient{next: &http.Client{}},
	}
}

// bufferedBodyClient hands the transport its own copy of each request body. The SDK closes the
// body it passed in as soon as Do returns, while net/http may still read it to retry on a
// reused connection; against a server that answers in microseconds that read fails and the
// transport drops the connection mid-answer. Real AWS is too slow to meet the race.
type bufferedBodyClient struct{ next *http.Client }

func (c bufferedBodyClient) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("buffering the request body: %w", err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return c.next.Do(r)
}

// handleQuery registers a query-protocol action.
func (s *Server) handleQuery(service, action string, fn queryAction) {
	s.query[service+":"+action] = fn
}

// handleJSON registers a JSON-protocol operation.
func (s *Server) handleJSON(service, operation string, fn jsonAction) {
	s.json[service+":"+operation] = fn
}

// Calls reports how many times service's action was called, failed calls included.
func (s *Server) Calls(service, action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[service+":"+action]
}

// CallsBy reports how many times service's action was called with the access key ID: one
// caller's calls, when several processes share the emulator.
func (s *Server) CallsBy(service, action, accessKey string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[service+":"+action+":"+accessKey]
}

var credentialScope = regexp.MustCompile(`Credential=[^/]+/[0-9]{8}/[^/]+/([a-z0-9-]+)/aws4_request`)

// serviceOf reads the signing service from the Authorization header.
func serviceOf(r *http.Request) string {
	m := credentialScope.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		return ""
	}
	return m[1]
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	requestID := fmt.Sprintf("00000000-0000-4000-8000-%012d", s.requestSeq.Add(1))
	service := serviceOf(r)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	switch service {
	case ServiceEC2, ServiceIAM, ServiceSTS:
		s.serveQuery(w, r, service, body, requestID)
	case ServiceSSM, ServicePricing, ServiceSQS:
		s.serveJSON(w, r, service, body, requestID)
	case ServiceARC, ServiceEKS:
		s.serveREST(w, r, service, body, requestID)
	default:
		http.Error(w, fmt.Sprintf("awsemulator: no emulated service %q (Authorization %q)", service, r.Header.Get("Authorization")), http.StatusBadRequest)
	}
}

func (s *Server) serveQuery(w http.ResponseWriter, r *http.Request, service string, body []byte, requestID string) {
	q, err := parseQuery(string(body))
	if err != nil {
		writeQueryError(w, service, requestID, &APIError{Code: "MalformedQueryString", Message: err.Error(), Status: http.StatusBadRequest})
		return
	}
	action := q.Get("Action")
	result, err := s.dispatch(r.Context(), service, action, callerOf(r), func(ctx context.Context) (any, error) {
		if err := s.authorize(r, action); err != nil {
			return nil, err
		}
		fn, ok := s.query[service+":"+action]
		if !ok {
			return nil, &APIError{Code: "InvalidAction", Message: fmt.Sprintf("the action %s is not valid for this web service (awsemulator does not emulate it)", action), Status: http.StatusBadRequest}
		}
		if err := dryRun(service, q); err != nil {
			return nil, err
		}
		return fn(ctx, q)
	})
	if err != nil {
		writeQueryError(w, service, requestID, asAPIError(err))
		return
	}
	// Encode into a buffer first: an answer the emulator cannot encode is its own bug and is
	// reported as a 500, while a client that hung up mid-answer is nobody's error.
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	root := xml.StartElement{Name: xml.Name{Local: action + "Response"}}
	switch service {
	case ServiceEC2:
		// EC2 puts the result's members straight under <ActionResponse>.
		root.Attr = []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: "http://ec2.amazonaws.com/doc/2016-11-15/"}}
		if result == nil {
			result = struct{}{}
		}
		err = enc.EncodeElement(ec2Result{RequestID: requestID, Result: result}, root)
	default:
		// IAM and STS wrap them in <ActionResult> and add <ResponseMetadata>.
		ns := "https://iam.amazonaws.com/doc/2010-05-08/"
		if service == ServiceSTS {
			ns = "https://sts.amazonaws.com/doc/2011-06-15/"
		}
		root.Attr = []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: ns}}
		err = enc.EncodeElement(iamResult{Result: result, ResultName: action + "Result", RequestID: requestID}, root)
	}
	if err == nil {
		err = enc.Flush()
	}
	if err != nil {
		writeQueryError(w, service, requestID, &APIError{Code: "InternalError", Message: fmt.Sprintf("awsemulator cannot encode its %s answer: %v", action, err), Status: http.StatusInternalServerError})
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("X-Amzn-RequestId", requestID)
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request, service string, body []byte, requestID string) {
	target := r.Header.Get("X-Amz-Target")
	operation := target[strings.LastIndex(target, ".")+1:]
	result, err := s.dispatch(r.Context(), service, operation, callerOf(r), func(ctx context.Context) (any, error) {
		if err := s.authorize(r, operation); err != nil {
			return nil, err
		}
		fn, ok := s.json[service+":"+operation]
		if !ok {
			return nil, &APIError{Code: "UnknownOperationException", Message: fmt.Sprintf("awsemulator does not emulate %s", target), Status: http.StatusBadRequest}
		}
		if len(body) == 0 {
			body = []byte("{}")
		}
		return fn(ctx, body)
	})
	contentType := "application/x-amz-json-1.1"
	if service == ServiceSQS {
		contentType = "application/x-amz-json-1.0"
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Amzn-RequestId", requestID)
	if err != nil {
		apiErr := asAPIError(err)
		if service == ServiceSQS {
			w.Header().Set("X-Amzn-Query-Error", sqsQueryError(apiErr))
		}
		w.WriteHeader(apiErr.status())
		_ = json.NewEncoder(w).Encode(map[string]string{
			"__type":  jsonErrorNamespace(service) + "#" + apiErr.Code,
			"message": apiErr.Message,
		})
		return
	}
	if result == nil {
		result = struct{}{}
	}
	body, err = json.Marshal(result)
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(map[string]string{
			"__type":  jsonErrorNamespace(service) + "#InternalError",
			"message": fmt.Sprintf("awsemulator cannot encode its %s answer: %v", operation, err),
		})
		return
	}
	_, _ = w.Write(body)
}

// dispatch counts the call (also under the caller's access key), applies injected faults, and
// runs the action with the state lock.
func (s *Server) dispatch(ctx context.Context, service, action, caller string, run func(context.Context) (any, error)) (any, error) {
	s.mu.Lock()
	s.calls[service+":"+action]++
	s.calls[service+":"+action+":"+caller]++
	fault := s.takeFault(service, action)
	s.mu.Unlock()
	if fault != nil {
		if fault.Latency > 0 {
			select {
			case <-time.After(fault.Latency):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if fault.Code != "" {
			return nil, fault.apiError()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return run(ctx)
}

type ec2Result struct {
	RequestID string `xml:"requestId"`
	Result    any
}

// MarshalXML writes requestId followed by the result's own members.
func (r ec2Result) MarshalXML(enc *xml.Encoder, start xml.StartElement) error {
	if err := enc.EncodeToken(start); err != nil {
		return err
	}
	if err := enc.EncodeElement(r.RequestID, xml.StartElement{Name: xml.Name{Local: "requestId"}}); err != nil {
		return err
	}
	if err := encodeMembers(enc, r.Result); err != nil {
		return err
	}
	return enc.EncodeToken(start.End())
}

type iamResult struct {
	Result     any
	ResultName string
	RequestID  string
}

func (r iamResult) MarshalXML(enc *xml.Encoder, start xml.StartElement) error {
	if err := enc.EncodeToken(start); err != nil {
		return err
	}
	resultStart := xml.StartElement{Name: xml.Name{Local: r.ResultName}}
	if err := enc.EncodeToken(resultStart); err != nil {
		return err
	}
	if r.Result != nil {
		if err := encodeMembers(enc, r.Result); err != nil {
			return err
		}
	}
	if err := enc.EncodeToken(resultStart.End()); err != nil {
		return err
	}
	meta := struct {
		RequestID string `xml:"RequestId"`
	}{r.RequestID}
	if err := enc.EncodeElement(meta, xml.StartElement{Name: xml.Name{Local: "ResponseMetadata"}}); err != nil {
		return err
	}
	return enc.EncodeToken(start.End())
}

// encodeMembers writes the fields of result (a struct) without an element of its own, so that
// action structs describe only their members.
func encodeMembers(enc *xml.Encoder, result any) error {
	var buf strings.Builder
	inner := xml.NewEncoder(&buf)
	if err := inner.EncodeElement(result, xml.StartElement{Name: xml.Name{Local: "x"}}); err != nil {
		return err
	}
	if err := inner.Flush(); err != nil {
		return err
	}
	dec := xml.NewDecoder(strings.NewReader(buf.String()))
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 1 {
				continue
			}
			t.Name.Space = "" // the decoder fills in the inherited namespace; keep the output plain
			tok = t
		case xml.EndElement:
			depth--
			if depth == 0 {
				continue
			}
			t.Name.Space = ""
			tok = t
		}
		if err := enc.EncodeToken(xml.CopyToken(tok)); err != nil {
			return err
		}
	}
}

func jsonErrorNamespace(service string) string {
	switch service {
	case ServiceSSM:
		return "com.amazonaws.ssm"
	case ServicePricing:
		return "com.amazonaws.pricing"
	case ServiceSQS:
		return "com.amazonaws.sqs"
	}
	return "com.amazonaws." + service
}

func writeQueryError(w http.ResponseWriter, service, requestID string, apiErr *APIError) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("X-Amzn-RequestId", requestID)
	w.WriteHeader(apiErr.status())
	_, _ = io.WriteString(w, xml.Header)
	enc := xml.NewEncoder(w)
	var doc any
	if service == ServiceIAM {
		doc = struct {
			XMLName xml.Name `xml:"ErrorResponse"`
			Error   struct {
				Type    string `xml:"Type"`
				Code    string `xml:"Code"`
				Message string `xml:"Message"`
			} `xml:"Error"`
			RequestID string `xml:"RequestId"`
		}{Error: struct {
			Type    string `xml:"Type"`
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		}{Type: apiErr.faultType(), Code: apiErr.Code, Message: apiErr.Message}, RequestID: requestID}
	} else {
		type errorXML struct {
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		}
		doc = struct {
			XMLName   xml.Name   `xml:"Response"`
			Errors    []errorXML `xml:"Errors>Error"`
			RequestID string     `xml:"RequestID"`
		}{Errors: []errorXML{{Code: apiErr.Code, Message: apiErr.Message}}, RequestID: requestID}
	}
	_ = enc.Encode(doc)
}
