package buffer

import (
	"errors"
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
)

// SizeError is a buffer spec that cannot be sized; its message names the field.
type SizeError struct{ msg string }

func (e *SizeError) Error() string { return e.msg }

func sizeErrorf(format string, args ...any) error {
	return &SizeError{msg: fmt.Sprintf(format, args...)}
}

// IsSizeError reports whether err says the spec cannot be sized (a validation error, not a
// transient one).
func IsSizeError(err error) bool {
	var s *SizeError
	return errors.As(err, &s)
}

// Replicas is the number of chunks spec asks for:
//   - replicas alone: replicas;
//   - percentage alone: percentage of workloadReplicas (the scalableRef's spec.replicas),
//     rounded up and at least 1 when the percentage is above 0;
//   - both: the smaller of the two;
//   - limits: a cap on the total requests of all chunks — with neither replicas nor
//     percentage, as many chunks (each requesting chunk) as fit within every limit.
//
// workloadReplicas is nil for a podTemplateRef buffer. An error names the field that makes
// the spec unusable.
func Replicas(spec *autoscalingv1alpha1.CapacityBufferSpec, workloadReplicas *int32, chunk corev1.ResourceList) (int32, error) {
	var count *int32
	if spec.Replicas != nil {
		if *spec.Replicas < 0 {
			return 0, sizeErrorf("spec.replicas: %d is negative", *spec.Replicas)
		}
		count = new(*spec.Replicas)
	}
	if spec.Percentage != nil {
		if *spec.Percentage < 0 {
			return 0, sizeErrorf("spec.percentage: %d is negative", *spec.Percentage)
		}
		if workloadReplicas == nil {
			return 0, sizeErrorf("spec.percentage: only applicable when scalableRef is set")
		}
		p := percentOf(*spec.Percentage, *workloadReplicas)
		if count == nil || p < *count {
			count = &p
		}
	}
	if len(spec.Limits) == 0 {
		if count == nil {
			return 0, sizeErrorf("spec: one of replicas, percentage or limits must be set")
		}
		return *count, nil
	}
	fit, err := chunksWithin(spec.Limits, chunk)
	if err != nil {
		if count == nil {
			return 0, err
		}
		// Limits on resources a chunk does not request cap nothing.
		return *count, nil
	}
	if count == nil || fit < *count {
		return fit, nil
	}
	return *count, nil
}

// percentOf is pct% of replicas, rounded up, at least 1 for a percentage above 0.
func percentOf(pct, replicas int32) int32 {
	if pct == 0 {
		return 0
	}
	v := math.Ceil(float64(pct) * float64(max(replicas, 0)) / 100)
	return int32(max(1, min(v, math.MaxInt32)))
}

// chunksWithin is how many chunks fit within limits: the smallest quotient over the limited
// resources the chunk requests. It fails when the chunk requests none of them.
func chunksWithin(limits, chunk corev1.ResourceList) (int32, error) {
	names := make([]corev1.ResourceName, 0, len(limits))
	for name := range limits {
		names = append(names, name)
	}
	slices.Sort(names)
	fit := int64(-1)
	for _, name := range names {
		req, ok := chunk[name]
		if !ok || req.IsZero() {
			continue
		}
		limit := limits[name]
		n := limit.MilliValue() / req.MilliValue()
		if fit < 0 || n < fit {
			fit = n
		}
	}
	if fit < 0 {
		return 0, sizeErrorf("spec.limits: the pod template requests none of the limited resources (%s), so limits cannot size the buffer", joinNames(names))
	}
	return int32(min(fit, math.MaxInt32)), nil
}

func joinNames(names []corev1.ResourceName) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += string(n)
	}
	return out
}
