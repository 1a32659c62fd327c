package awsemulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// AdminClient drives an emulator in another process through its admin API (see Handler).
type AdminClient struct {
	// URL is the emulator's base endpoint, e.g. http://127.0.0.1:4566.
	URL  string
	HTTP *http.Client
}

// NewAdminClient returns a client of the emulator at baseURL.
func NewAdminClient(baseURL string) *AdminClient {
	return &AdminClient{URL: strings.TrimRight(baseURL, "/"), HTTP: &http.Client{}}
}

// Healthy returns nil once the emulator answers.
func (c *AdminClient) Healthy(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "healthz", nil, nil)
}

// Inject adds a fault (see Server.Inject). Only whole milliseconds of latency are carried.
func (c *AdminClient) Inject(ctx context.Context, f Fault) error {
	return c.do(ctx, http.MethodPost, "faults", adminFault(f), nil)
}

// ClearFaults removes every injected fault.
func (c *AdminClient) ClearFaults(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "faults", nil, nil)
}

// SetInsufficientCapacity makes EC2 refuse the offering with InsufficientInstanceCapacity.
func (c *AdminClient) SetInsufficientCapacity(ctx context.Context, capacityType, instanceType, zone string) error {
	return c.do(ctx, http.MethodPost, "insufficient-capacity", AdminOffering{capacityType, instanceType, zone}, nil)
}

// ClearInsufficientCapacity makes the offering launch again.
func (c *AdminClient) ClearInsufficientCapacity(ctx context.Context, capacityType, instanceType, zone string) error {
	return c.do(ctx, http.MethodDelete, "insufficient-capacity", AdminOffering{capacityType, instanceType, zone}, nil)
}

// PutParameter creates or changes an SSM parameter, e.g. an AMI alias's.
func (c *AdminClient) PutParameter(ctx context.Context, name, value string) error {
	return c.do(ctx, http.MethodPut, "parameters", AdminParameter{Name: name, Value: value}, nil)
}

// DeleteParameter deletes an SSM parameter.
func (c *AdminClient) DeleteParameter(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "parameters?name="+url.QueryEscape(name), nil, nil)
}

// StartAutoshift starts an AWS-initiated autoshift away from the zone of ID zoneID (see
// Server.StartAutoshift).
func (c *AdminClient) StartAutoshift(ctx context.Context, zoneID string) error {
	return c.do(ctx, http.MethodPost, "autoshifts", AdminAutoshift{AwayFrom: zoneID}, nil)
}

// EndAutoshift ends the active autoshift away from the zone of ID zoneID.
func (c *AdminClient) EndAutoshift(ctx context.Context, zoneID string) error {
	return c.do(ctx, http.MethodDelete, "autoshifts", AdminAutoshift{AwayFrom: zoneID}, nil)
}

// Instances returns every instance, terminated ones included, sorted by id.
func (c *AdminClient) Instances(ctx context.Context) ([]Instance, error) {
	var out []Instance
	if err := c.do(ctx, http.MethodGet, "instances", nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// DelayResponses holds back the answers of service's action by delay, times times (0: until
// ClearResponseDelays): the action happens at once, its caller hears of it late.
func (c *AdminClient) DelayResponses(ctx context.Context, service, action string, delay time.Duration, times int) error {
	return c.do(ctx, http.MethodPost, "response-delays", AdminResponseDelay{Service: service, Action: action, DelayMS: delay.Milliseconds(), Times: times}, nil)
}

// ClearResponseDelays removes every response delay.
func (c *AdminClient) ClearResponseDelays(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "response-delays", nil, nil)
}

// Calls reports how many times service's action was called, failed calls included.
func (c *AdminClient) Calls(ctx context.Context, service, action string) (int, error) {
	var out struct {
		Calls int `json:"calls"`
	}
	path := "calls?service=" + url.QueryEscape(service) + "&action=" + url.QueryEscape(action)
	if err := c.do(ctx, http.MethodGet, path, nil, &out); err != nil {
		return 0, err
	}
	return out.Calls, nil
}

// CallsBy reports how many times service's action was called with the access key ID
// accessKey: one process's calls, when several share the emulator.
func (c *AdminClient) CallsBy(ctx context.Context, service, action, accessKey string) (int, error) {
	var out struct {
		Calls int `json:"calls"`
	}
	path := "calls?service=" + url.QueryEscape(service) + "&action=" + url.QueryEscape(action) + "&accessKey=" + url.QueryEscape(accessKey)
	if err := c.do(ctx, http.MethodGet, path, nil, &out); err != nil {
		return 0, err
	}
	return out.Calls, nil
}

// do sends one admin request with in as its JSON body (when not nil) and decodes the answer
// into out (when not nil).
func (c *AdminClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("awsemulator admin %s %s: encoding the request: %w", method, path, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+AdminPathPrefix+path, body)
	if err != nil {
		return fmt.Errorf("awsemulator admin %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("awsemulator admin %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("awsemulator admin %s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return &adminError{method: method, path: path, status: resp.StatusCode, message: strings.TrimSpace(string(data))}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("awsemulator admin %s %s: decoding the answer: %w", method, path, err)
		}
	}
	return nil
}
