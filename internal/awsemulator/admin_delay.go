package awsemulator

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// responseDelays are the AdminResponseDelays of one Handler, matched in the order added.
type responseDelays struct {
	mu    sync.Mutex
	rules []*responseDelay
}

type responseDelay struct {
	AdminResponseDelay
	used int
}

func (d *responseDelays) add(rule AdminResponseDelay) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rules = append(d.rules, &responseDelay{AdminResponseDelay: rule})
}

func (d *responseDelays) clear() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rules = nil
}

// take returns how long to hold the answer to r, counting the use of the rule that matched.
// It reads the body to find a query-protocol action, and leaves r's body readable again.
func (d *responseDelays) take(r *http.Request) (time.Duration, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.rules) == 0 {
		return 0, nil
	}
	service := serviceOf(r)
	action, err := actionOf(r, service)
	if err != nil {
		return 0, err
	}
	for i, rule := range d.rules {
		if (rule.Service != "" && rule.Service != service) || (rule.Action != "" && rule.Action != action) {
			continue
		}
		rule.used++
		if rule.Times > 0 && rule.used >= rule.Times {
			d.rules = append(d.rules[:i:i], d.rules[i+1:]...)
		}
		return time.Duration(rule.DelayMS) * time.Millisecond, nil
	}
	return 0, nil
}

// actionOf names the call: the JSON protocols' X-Amz-Target operation, or the query
// protocol's Action form field.
func actionOf(r *http.Request, service string) (string, error) {
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		return target[strings.LastIndex(target, ".")+1:], nil
	}
	if service != ServiceEC2 && service != ServiceIAM {
		return "", nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return "", fmt.Errorf("reading the request body: %w", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return "", nil // serveHTTP reports the malformed query
	}
	return form.Get("Action"), nil
}

// heldResponse records an answer so it can be sent later.
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}

func (h *heldResponse) Write(p []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	return h.body.Write(p)
}

func (h *heldResponse) flush(w http.ResponseWriter) {
	for k, v := range h.header {
		w.Header()[k] = v
	}
	if h.status == 0 {
		h.status = http.StatusOK
	}
	w.WriteHeader(h.status)
	_, _ = w.Write(h.body.Bytes())
}
