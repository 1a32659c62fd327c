package interruption

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	awsinterruption "github.com/joinery-dev/joinery/cloudprovider/aws/interruption"
)

// Karpenter's interruption metrics.
var (
	receivedMessages = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter",
		Subsystem: "interruption",
		Name:      "received_messages_total",
		Help:      "Interruption messages received from the queue, by message type; messages that cannot be parsed count as no_op.",
	}, []string{"message_type"})
	deletedMessages = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "karpenter",
		Subsystem: "interruption",
		Name:      "deleted_messages_total",
		Help:      "Interruption messages deleted from the queue after they were handled.",
	})
	messageQueueDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "karpenter",
		Subsystem: "interruption",
		Name:      "message_queue_duration_seconds",
		Help:      "Time from an interruption message's arrival in the queue to its deletion after handling.",
		Buckets:   []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600},
	})
)

func init() {
	crmetrics.Registry.MustRegister(receivedMessages, deletedMessages, messageQueueDuration)
	for _, kind := range awsinterruption.Kinds {
		receivedMessages.WithLabelValues(string(kind)) // export zeros, so rates work from the start
	}
}
