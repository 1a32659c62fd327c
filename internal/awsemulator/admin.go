package awsemulator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// AdminPathPrefix is where Handler serves the admin API. AWS's SDKs never send requests under
// it (the query and JSON protocols post to "/"), so admin calls cannot be mistaken for AWS
// calls.
const AdminPathPrefix = "/_awstest/"

// The admin API lets a test in another process drive an emulator served by Handler (see
// cmd/awsemulator), with JSON bodies:
//
//	GET    /_awstest/healthz                  "ok"
//	POST   /_awstest/faults                   AdminFault: inject a fault
//	DELETE /_awstest/faults                   clear every fault
//	POST   /_awstest/insufficient-capacity    AdminOffering: EC2 refuses the offering
//	DELETE /_awstest/insufficient-capacity    AdminOffering: the offering launches again
//	PUT    /_awstest/parameters               AdminParameter: create or change an SSM parameter
//	DELETE /_awstest/parameters?name=NAME     delete an SSM parameter
//	GET    /_awstest/instances                []Instance, terminated ones included
//	GET    /_awstest/calls?service=S&action=A {"calls": N}: how often the action was called
//	GET    /_awstest/calls?service=S&action=A&accessKey=K   ... with the access key ID K
//	POST   /_awstest/response-delays          AdminResponseDelay: hold matching answers back
//	DELETE /_awstest/response-delays          clear every response delay
//	POST   /_awstest/autoshifts               AdminAutoshift: AWS starts an autoshift away from a zone
//	DELETE /_awstest/autoshifts               AdminAutoshift: AWS ends it
//
// Errors answer 4xx or 5xx with a plain-text message.

// AdminFault is a Fault as the admin API carries it.
type AdminFault struct {
	Service   string `json:"service,omitempty"`
	Action    string `json:"action,omitempty"`
	Code      string `json:"code,omitempty"`
	Message   string `json:"message,omitempty"`
	Status    int    `json:"status,omitempty"`
	Times     int    `json:"times,omitempty"`
	LatencyMS int64  `json:"latencyMs,omitempty"`
}

// AdminResponseDelay holds back the answer of matching calls: the action runs at once (a
// CreateFleet launches its instance), but the caller hears of it only DelayMS later, as when
// a response is slow to arrive. A caller that gives up or dies in between never learns the
// outcome, which is what idempotency tokens are for. A Fault's latency, by contrast, delays
// the action itself. Service and Action select calls as a Fault's do; Times is how many
// answers are held (0: all until cleared).
type AdminResponseDelay struct {
	Service string `json:"service,omitempty"`
	Action  string `json:"action,omitempty"`
	DelayMS int64  `json:"delayMs"`
	Times   int    `json:"times,omitempty"`
}

// AdminOffering names an offering: capacity type (on-demand, spot), instance type and zone.
type AdminOffering struct {
	CapacityType string `json:"capacityType"`
	InstanceType string `json:"instanceType"`
	Zone         string `json:"zone"`
}

// AdminAutoshift names the zone (by ID, as ARC does) of an AWS-initiated autoshift.
type AdminAutoshift struct {
	AwayFrom string `json:"awayFrom"`
}

// AdminParameter is an SSM parameter's name and value.
type AdminParameter struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func (f AdminFault) fault() Fault {
	return Fault{
		Service: f.Service, Action: f.Action, Code: f.Code, Message: f.Message, Status: f.Status,
		Times: f.Times, Latency: time.Duration(f.LatencyMS) * time.Millisecond,
	}
}

func adminFault(f Fault) AdminFault {
	return AdminFault{
		Service: f.Service, Action: f.Action, Code: f.Code, Message: f.Message, Status: f.Status,
		Times: f.Times, LatencyMS: f.Latency.Milliseconds(),
	}
}

// Handler serves the emulated AWS APIs and, under AdminPathPrefix, the admin API. Serve it on
// a listener of your own to run the emulator at a chosen address; clients then use that
// address as their base endpoint. Response delays apply to the calls this handler serves.
func (s *Server) Handler() http.Handler {
	delays := &responseDelays{}
	admin := s.adminMux(delays)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, AdminPathPrefix) {
			admin.ServeHTTP(w, r)
			return
		}
		delay, err := delays.take(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if delay <= 0 {
			s.serveHTTP(w, r)
			return
		}
		held := &heldResponse{header: http.Header{}}
		s.serveHTTP(held, r)
		select {
		case <-time.After(delay):
			held.flush(w)
		case <-r.Context().Done(): // the caller gave up; the action has happened all the same
		}
	})
}

func (s *Server) adminMux(delays *responseDelays) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+AdminPathPrefix+"healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("POST "+AdminPathPrefix+"faults", func(w http.ResponseWriter, r *http.Request) {
		var f AdminFault
		if !decodeAdmin(w, r, &f) {
			return
		}
		if f.Code == "" && f.LatencyMS <= 0 {
			http.Error(w, "a fault needs a code or a latency", http.StatusBadRequest)
			return
		}
		if f.Code != "" && f.Status == 0 {
			http.Error(w, "a fault with a code needs its HTTP status", http.StatusBadRequest)
			return
		}
		s.Inject(f.fault())
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE "+AdminPathPrefix+"faults", func(w http.ResponseWriter, _ *http.Request) {
		s.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	offering := func(clear bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var o AdminOffering
			if !decodeAdmin(w, r, &o) {
				return
			}
			if o.CapacityType == "" || o.InstanceType == "" || o.Zone == "" {
				http.Error(w, "capacityType, instanceType and zone are required", http.StatusBadRequest)
				return
			}
			if clear {
				s.ClearInsufficientCapacity(o.CapacityType, o.InstanceType, o.Zone)
			} else {
				s.SetInsufficientCapacity(o.CapacityType, o.InstanceType, o.Zone)
			}
			w.WriteHeader(http.StatusNoContent)
		}
	}
	mux.HandleFunc("POST "+AdminPathPrefix+"insufficient-capacity", offering(false))
	mux.HandleFunc("DELETE "+AdminPathPrefix+"insufficient-capacity", offering(true))
	mux.HandleFunc("PUT "+AdminPathPrefix+"parameters", func(w http.ResponseWriter, r *http.Request) {
		var p AdminParameter
		if !decodeAdmin(w, r, &p) {
			return
		}
		if p.Name == "" {
			http.Error(w, "name is required", http.StatusBadRequest)
			return
		}
		s.PutParameter(p.Name, p.Value)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE "+AdminPathPrefix+"parameters", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		if name == "" {
			http.Error(w, "the name query parameter is required", http.StatusBadRequest)
			return
		}
		s.DeleteParameter(name)
		w.WriteHeader(http.StatusNoContent)
	})
	autoshift := func(end bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var a AdminAutoshift
			if !decodeAdmin(w, r, &a) {
				return
			}
			act := s.StartAutoshift
			if end {
				act = s.EndAutoshift
			}
			if err := act(a.AwayFrom); err != nil {
				http.Error(w, err.Error(), http.StatusConflict)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}
	}
	mux.HandleFunc("POST "+AdminPathPrefix+"autoshifts", autoshift(false))
	mux.HandleFunc("DELETE "+AdminPathPrefix+"autoshifts", autoshift(true))
	mux.HandleFunc("GET "+AdminPathPrefix+"instances", func(w http.ResponseWriter, _ *http.Request) {
		writeAdminJSON(w, s.Instances())
	})
	mux.HandleFunc("GET "+AdminPathPrefix+"calls", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("service") == "" || q.Get("action") == "" {
			http.Error(w, "the service and action query parameters are required", http.StatusBadRequest)
			return
		}
		calls := s.Calls(q.Get("service"), q.Get("action"))
		if key := q.Get("accessKey"); key != "" {
			calls = s.CallsBy(q.Get("service"), q.Get("action"), key)
		}
		writeAdminJSON(w, map[string]int{"calls": calls})
	})
	mux.HandleFunc("POST "+AdminPathPrefix+"response-delays", func(w http.ResponseWriter, r *http.Request) {
		var d AdminResponseDelay
		if !decodeAdmin(w, r, &d) {
			return
		}
		if d.DelayMS <= 0 {
			http.Error(w, "delayMs must be positive", http.StatusBadRequest)
			return
		}
		delays.add(d)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE "+AdminPathPrefix+"response-delays", func(w http.ResponseWriter, _ *http.Request) {
		delays.clear()
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// maxAdminBody bounds an admin request's body; every admin body is a few hundred bytes.
const maxAdminBody = 1 << 20

// decodeAdmin decodes r's JSON body into v, rejecting unknown fields so that a misspelt field
// is an error rather than a silently different fault; it answers 400 and returns false when
// the body is not valid.
func decodeAdmin(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAdminBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		http.Error(w, "decoding the request body: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeAdminJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// adminError is a non-2xx answer of the admin API.
type adminError struct {
	method, path string
	status       int
	message      string
}

func (e *adminError) Error() string {
	return fmt.Sprintf("awsemulator admin %s %s: %d %s", e.method, e.path, e.status, e.message)
}
