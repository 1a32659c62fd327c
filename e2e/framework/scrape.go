package framework

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// Family is one metric family of a scrape: its type and the label names its samples carry.
type Family struct {
	Type   string
	Labels []string // sorted; the label sets of all samples, which must agree
	// Samples counts the family's samples (a histogram's buckets, sum and count included).
	Samples int
	// Value sums the samples' values: of a counter or gauge, every sample; of a histogram or
	// summary, the _count samples (how many observations were made).
	Value float64
}

// ScrapeController reads joinery-controller's metrics endpoint.
func (e *Env) ScrapeController(ctx context.Context) (map[string]*Family, error) {
	if !e.Local() {
		return nil, fmt.Errorf("scrape joinery-controller: not a local cluster")
	}
	return scrape(ctx, http.DefaultClient, e.Cluster.ControllerMetricsURL())
}

// ScrapeScheduler reads joinery-scheduler's metrics on kube-scheduler's secure port, as the
// suite's own (admin) identity: kube-scheduler authenticates the client certificate or token
// and asks the API server whether it may get /metrics. The serving certificate is
// kube-scheduler's self-signed one.
func (e *Env) ScrapeScheduler(ctx context.Context) (map[string]*Family, error) {
	if !e.Local() {
		return nil, fmt.Errorf("scrape joinery-scheduler: not a local cluster")
	}
	cfg := rest.CopyConfig(e.RESTConfig)
	cfg.TLSClientConfig.Insecure, cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = true, nil, ""
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("scrape joinery-scheduler: %w", err)
	}
	return scrape(ctx, &http.Client{Transport: transport}, e.Cluster.SchedulerMetricsURL())
}

func scrape(ctx context.Context, client *http.Client, url string) (map[string]*Family, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("scrape %s: %s: %s", url, resp.Status, body)
	}
	families, err := ParseText(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return families, nil
}

// ParseText reads Prometheus's text format into families by name. A sample's family is the
// name its # TYPE line declared, so a histogram's _bucket, _sum and _count samples count
// under the histogram; le and quantile are not labels of the family.
func ParseText(r io.Reader) (map[string]*Family, error) {
	families := map[string]*Family{}
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			families[name] = &Family{Type: typ}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, value, err := parseSample(line)
		if err != nil {
			return nil, err
		}
		f, suffix := families[name], ""
		if f == nil {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(name, s); ok && families[base] != nil {
					f, suffix = families[base], s
					break
				}
			}
		}
		if f == nil {
			return nil, fmt.Errorf("sample %q of no declared family", line)
		}
		switch f.Type {
		case "histogram", "summary":
			if suffix == "_count" {
				f.Value += value
			}
		default:
			f.Value += value
		}
		labels = slices.DeleteFunc(labels, func(l string) bool { return l == "le" || l == "quantile" })
		slices.Sort(labels)
		if f.Samples > 0 && !slices.Equal(f.Labels, labels) {
			return nil, fmt.Errorf("family %s: samples with labels %v and %v", name, f.Labels, labels)
		}
		f.Labels = labels
		f.Samples++
	}
	return families, scanner.Err()
}

// parseSample returns a sample line's metric name, label names and value.
func parseSample(line string) (string, []string, float64, error) {
	open := strings.IndexAny(line, "{ ")
	if open < 0 {
		return "", nil, 0, fmt.Errorf("malformed sample %q", line)
	}
	name := line[:open]
	if line[open] == ' ' {
		value, err := sampleValue(line[open:])
		return name, nil, value, err
	}
	var labels []string
	rest := line[open+1:]
	for {
		rest = strings.TrimLeft(rest, ", ")
		if after, ok := strings.CutPrefix(rest, "}"); ok {
			value, err := sampleValue(after)
			return name, labels, value, err
		}
		eq := strings.Index(rest, `="`)
		if eq < 0 {
			return "", nil, 0, fmt.Errorf("malformed labels in %q", line)
		}
		labels = append(labels, rest[:eq])
		rest = rest[eq+2:]
		// Skip the quoted value, honouring escapes.
		i := 0
		for ; i < len(rest); i++ {
			if rest[i] == '\\' {
				i++
				continue
			}
			if rest[i] == '"' {
				break
			}
		}
		if i >= len(rest) {
			return "", nil, 0, fmt.Errorf("unterminated label value in %q", line)
		}
		rest = rest[i+1:]
	}
}

// sampleValue reads the value after a sample's name and labels (a timestamp may follow).
func sampleValue(text string) (float64, error) {
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return 0, fmt.Errorf("sample without a value")
	}
	return strconv.ParseFloat(fields[0], 64)
}
