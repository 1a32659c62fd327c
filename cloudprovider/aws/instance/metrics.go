package instance

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// batcherCreateFleet is the batcher label of the CreateFleet batcher, Karpenter's name.
const batcherCreateFleet = "create_fleet"

// Karpenter's batcher metrics: how many launches each CreateFleet batch carried and how long
// its window stayed open.
var (
	batchSize = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider_batcher", Name: "batch_size",
		Help:    "Size of the request batch per batcher: the launches one CreateFleet batch carried.",
		Buckets: []float64{1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 75, 100, 250, 500, 1000},
	}, []string{"batcher"})
	batchTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider_batcher", Name: "batch_time_seconds",
		Help:    "Duration of the batching window per batcher: from a batch's first launch to its sending.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 12),
	}, []string{"batcher"})
)

func init() {
	crmetrics.Registry.MustRegister(batchSize, batchTime)
}
