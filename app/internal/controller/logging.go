package controller

import (
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// optimisticLockConflicts counts the conflicts newLogger keeps out of the ERROR lines.
var optimisticLockConflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "joinery", Name: "optimistic_lock_conflicts_total",
	Help: "Writes refused because the object changed since it was read (\"the object has been modified\"), by source: the controller that wrote, or else the logger's name. Each is retried (the reconcile is requeued), and logged at debug level, not as an error.",
}, []string{"source"})

func init() {
	crmetrics.Registry.MustRegister(optimisticLockConflicts)
}

// newLogger is joinery-controller's logger: JSON lines with Karpenter's keys (level, time,
// logger, message, caller; the level in capitals, the time in RFC 3339) at the LOG_LEVEL
// level (debug, info or error). --zap-log-level, when given, sets the level instead; --zap-devel
// keeps controller-runtime's console format for development. An optimistic-lock conflict reported
// as an error is logged at debug level and counted instead (see conflictSink).
func newLogger(level string, opts *zap.Options, zapLevelGiven bool) (logr.Logger, error) {
	if !zapLevelGiven {
		switch level {
		case "debug":
			opts.Level = zapcore.DebugLevel
		case "info":
			opts.Level = zapcore.InfoLevel
		case "error":
			opts.Level = zapcore.ErrorLevel
		default:
			return logr.Logger{}, fmt.Errorf("--log-level=%q: must be one of debug, info, error", level)
		}
	}
	opts.EncoderConfigOptions = append(opts.EncoderConfigOptions, func(c *zapcore.EncoderConfig) {
		if opts.Development {
			return
		}
		c.TimeKey, c.MessageKey, c.LevelKey, c.NameKey, c.CallerKey = "time", "message", "level", "logger", "caller"
		c.EncodeLevel = zapcore.CapitalLevelEncoder
		c.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	})
	// opts.ZapOpts go on again after controller-runtime's own zap.ErrorOutput (DestWriter), so
	// that the logger's errors go to LOG_ERROR_OUTPUT_PATHS when it is set.
	raw := zap.NewRaw(zap.UseFlagOptions(opts)).WithOptions(opts.ZapOpts...)
	return logr.New(newConflictSink(zapr.NewLogger(raw).GetSink())), nil
}

// conflictSink keeps optimistic-lock conflicts ("the object has been modified") out of the
// ERROR lines, where real errors must stand out. A conflict is routine when several
// controllers write one object: the reconcile that met it returns it and is retried with
// backoff (controller-runtime logs that return as "Reconciler error"). It is logged at debug
// level (V(1), LOG_LEVEL=debug) and counted in joinery_optimistic_lock_conflicts_total, by
// the controller that met it. The one place for this policy: every controller, joinery's or
// a provider's, logs through it.
type conflictSink struct {
	logr.LogSink
	name       string // the logger's name, dotted
	controller string // controller-runtime's "controller" value, once given
}

// newConflictSink wraps an initialized sink. Its one extra frame is skipped when the sink
// reports the caller.
func newConflictSink(sink logr.LogSink) *conflictSink {
	if withDepth, ok := sink.(logr.CallDepthLogSink); ok {
		sink = withDepth.WithCallDepth(1)
	}
	return &conflictSink{LogSink: sink}
}

// Init does nothing: the wrapped sink was initialized when it was built.
func (s *conflictSink) Init(logr.RuntimeInfo) {}

// Info is written out, not promoted, so that Info and Error both add one frame.
func (s *conflictSink) Info(level int, msg string, keysAndValues ...any) {
	s.LogSink.Info(level, msg, keysAndValues...)
}

// WithCallDepth keeps logr.Logger.WithCallDepth working through the wrapper.
func (s *conflictSink) WithCallDepth(depth int) logr.LogSink {
	out := *s
	if withDepth, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		out.LogSink = withDepth.WithCallDepth(depth)
	}
	return &out
}

func (s *conflictSink) Error(err error, msg string, keysAndValues ...any) {
	if !onlyConflicts(err) {
		s.LogSink.Error(err, msg, keysAndValues...)
		return
	}
	optimisticLockConflicts.WithLabelValues(s.source()).Inc()
	if s.LogSink.Enabled(1) {
		s.LogSink.Info(1, msg, append(keysAndValues, "error", err.Error(), "conflict", true)...)
	}
}

func (s *conflictSink) WithValues(keysAndValues ...any) logr.LogSink {
	out := *s
	out.LogSink = s.LogSink.WithValues(keysAndValues...)
	for i := 0; i+1 < len(keysAndValues); i += 2 {
		if keysAndValues[i] == "controller" {
			out.controller = fmt.Sprint(keysAndValues[i+1])
		}
	}
	return &out
}

func (s *conflictSink) WithName(name string) logr.LogSink {
	out := *s
	out.LogSink = s.LogSink.WithName(name)
	out.name = strings.TrimPrefix(s.name+"."+name, ".")
	return &out
}

// source names where a conflict was met: the controller, else the logger's name.
func (s *conflictSink) source() string {
	switch {
	case s.controller != "":
		return s.controller
	case s.name != "":
		return s.name
	}
	return "unknown"
}

// onlyConflicts reports whether err is an optimistic-lock conflict, wrapped or not; an error
// that joins several is one only when each of them is, so a real error joined to a conflict
// still logs as an error.
func onlyConflicts(err error) bool {
	for err != nil {
		if _, ok := err.(apierrors.APIStatus); ok {
			return apierrors.IsConflict(err)
		}
		switch e := err.(type) {
		case interface{ Unwrap() []error }:
			parts := e.Unwrap()
			for _, part := range parts {
				if !onlyConflicts(part) {
					return false
				}
			}
			return len(parts) > 0
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		default:
			return false
		}
	}
	return false
}
