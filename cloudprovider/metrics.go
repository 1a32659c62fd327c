package cloudprovider

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// Karpenter's cloud provider metrics: every call a controller makes, timed, and its errors
// counted by kind.
var (
	methodDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "duration_seconds",
		Help:    "Duration of cloud provider method calls. Labeled by the controller, method name and provider.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"controller", "method", "provider"})
	methodErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "errors_total",
		Help: "Total number of errors returned from CloudProvider calls, by controller, method, provider and error kind (InsufficientCapacityError, NodeClaimNotFoundError, NodeClassNotReadyError, CreateError, or empty).",
	}, []string{"controller", "method", "provider", "error"})

	// Karpenter's instance type metrics, set from every GetInstanceTypes answer.
	instanceTypeCPU = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "instance_type_cpu_cores",
		Help: "VCPUs cores for a given instance type.",
	}, []string{"instance_type"})
	instanceTypeMemory = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "instance_type_memory_bytes",
		Help: "Memory, in bytes, for a given instance type.",
	}, []string{"instance_type"})
	offeringAvailable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "instance_type_offering_available",
		Help: "Instance type offering availability, based on instance type, capacity type, and zone: 1 when an offering of the three is available, else 0.",
	}, []string{"instance_type", "capacity_type", "zone"})
	offeringPrice = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "instance_type_offering_price_estimate",
		Help: "Instance type offering estimated hourly price used when making informed decisions on node cost calculation, based on instance type, capacity type, and zone (the cheapest of the offerings of the three).",
	}, []string{"instance_type", "capacity_type", "zone"})
)

func init() {
	crmetrics.Registry.MustRegister(methodDuration, methodErrors, instanceTypeCPU, instanceTypeMemory, offeringAvailable, offeringPrice)
}

// Instrument returns cp with every call timed in karpenter_cloudprovider_duration_seconds and
// every error counted in karpenter_cloudprovider_errors_total, labelled with controller, the
// name of the controller that makes the calls. Wrap once per controller, never twice.
func Instrument(cp CloudProvider, controller string) CloudProvider {
	return &instrumented{CloudProvider: cp, controller: controller}
}

type instrumented struct {
	CloudProvider
	controller string
}

// measure starts timing method; the returned func records the duration and err.
func (i *instrumented) measure(method string) func(err error) {
	start := time.Now()
	return func(err error) {
		provider := i.CloudProvider.Name()
		methodDuration.WithLabelValues(i.controller, method, provider).Observe(time.Since(start).Seconds())
		if err != nil {
			methodErrors.WithLabelValues(i.controller, method, provider, ErrorKind(err)).Inc()
		}
	}
}

func (i *instrumented) Create(ctx context.Context, nc *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	done := i.measure("Create")
	out, err := i.CloudProvider.Create(ctx, nc)
	done(err)
	return out, err
}

func (i *instrumented) Delete(ctx context.Context, nc *karpv1.NodeClaim) error {
	done := i.measure("Delete")
	err := i.CloudProvider.Delete(ctx, nc)
	// NodeClaimNotFound is how Delete reports a finished termination, not a failure.
	if IsNodeClaimNotFoundError(err) {
		done(nil)
	} else {
		done(err)
	}
	return err
}

func (i *instrumented) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	done := i.measure("Get")
	out, err := i.CloudProvider.Get(ctx, providerID)
	done(err)
	return out, err
}

func (i *instrumented) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	done := i.measure("List")
	out, err := i.CloudProvider.List(ctx)
	done(err)
	return out, err
}

func (i *instrumented) GetInstanceTypes(ctx context.Context, np *karpv1.NodePool) ([]*InstanceType, error) {
	done := i.measure("GetInstanceTypes")
	out, err := i.CloudProvider.GetInstanceTypes(ctx, np)
	done(err)
	if err == nil {
		recordInstanceTypes(out)
	}
	return out, err
}

// recordInstanceTypes sets the instance type gauges from its. Several offerings of one type,
// capacity type and zone (capacity reservations) count as available when any is, at the
// cheapest price.
func recordInstanceTypes(its []*InstanceType) {
	type key struct{ instanceType, capacityType, zone string }
	type seen struct {
		available bool
		price     float64
	}
	for _, it := range its {
		if cpu, ok := it.Capacity[corev1.ResourceCPU]; ok {
			instanceTypeCPU.WithLabelValues(it.Name).Set(cpu.AsApproximateFloat64())
		}
		if mem, ok := it.Capacity[corev1.ResourceMemory]; ok {
			instanceTypeMemory.WithLabelValues(it.Name).Set(mem.AsApproximateFloat64())
		}
		offerings := map[key]seen{}
		for _, o := range it.Offerings {
			k := key{it.Name, o.CapacityType(), o.Zone()}
			s, ok := offerings[k]
			if !ok || o.Price < s.price {
				s.price = o.Price
			}
			s.available = s.available || o.Available
			offerings[k] = s
		}
		for k, s := range offerings {
			offeringAvailable.WithLabelValues(k.instanceType, k.capacityType, k.zone).Set(map[bool]float64{true: 1, false: 0}[s.available])
			offeringPrice.WithLabelValues(k.instanceType, k.capacityType, k.zone).Set(s.price)
		}
	}
}

func (i *instrumented) IsDrifted(ctx context.Context, nc *karpv1.NodeClaim) (DriftReason, error) {
	done := i.measure("IsDrifted")
	out, err := i.CloudProvider.IsDrifted(ctx, nc)
	done(err)
	return out, err
}

// ErrorKind names err's kind for metric labels: the cloud provider error type it wraps, or ""
// for any other error (Karpenter's values).
func ErrorKind(err error) string {
	switch {
	case IsInsufficientCapacityError(err):
		return "InsufficientCapacityError"
	case IsNodeClaimNotFoundError(err):
		return "NodeClaimNotFoundError"
	case IsNodeClassNotReadyError(err):
		return "NodeClassNotReadyError"
	}
	if _, ok := AsCreateError(err); ok {
		return "CreateError"
	}
	return ""
}
