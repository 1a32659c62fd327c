package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// progressLogger prints the cluster's progress messages as short "==>" lines.
func progressLogger() *slog.Logger { return slog.New(progressHandler{}) }

type progressHandler struct{ attrs []slog.Attr }

func (progressHandler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelInfo
}

func (h progressHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("==> " + r.Message)
	write := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	b.WriteByte('\n')
	_, err := os.Stderr.WriteString(b.String())
	return err
}

func (h progressHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return progressHandler{attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)}
}

func (h progressHandler) WithGroup(string) slog.Handler { return h }
