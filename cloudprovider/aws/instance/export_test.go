package instance

import "github.com/prometheus/client_golang/prometheus"

// PendingLaunches is how many launches wait in p's open batches.
func PendingLaunches(p *Provider) int { return p.batches.pending() }

// BatchHistograms are the create_fleet batcher's size and time histograms.
var BatchHistograms = struct {
	Size, Time interface {
		WithLabelValues(...string) prometheus.Observer
	}
}{batchSize, batchTime}
