package main

import (
	"fmt"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// newLogger is joinery-controller's logger: JSON lines with Karpenter's keys (level, time,
// logger, message, caller; the level in capitals, the time in RFC 3339) at the LOG_LEVEL
// level (debug, info or error). --zap-log-level, when given, sets the level instead; --zap-devel
// keeps controller-runtime's console format for development.
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
	return zap.New(zap.UseFlagOptions(opts)), nil
}
