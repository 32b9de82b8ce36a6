package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// newLogger is serve's logger: JSON lines (the default) or text, to w
// through a logBuffer; Flush it before exiting.
func newLogger(w io.Writer, format string) (*slog.Logger, *logBuffer, error) {
	buf := &logBuffer{w: w}
	var h slog.Handler
	switch format {
	case "json":
		h = slog.NewJSONHandler(buf, nil)
	case "text":
		h = slog.NewTextHandler(buf, nil)
	default:
		return nil, nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
	return slog.New(flushAtWarn{h, buf}), buf, nil
}

// logBuffer holds log lines for w and writes them together, once the
// first has waited logFlushAfter or logMaxBuffer bytes wait: a served
// run's request line took a write of its own, a fiftieth of the run's
// CPU. Warnings and errors are written at once (flushAtWarn).
type logBuffer struct {
	mu    sync.Mutex
	w     io.Writer
	buf   []byte
	timer *time.Timer // flushes the lines held; nil when none are
}

const (
	logFlushAfter = 50 * time.Millisecond
	logMaxBuffer  = 64 << 10
)

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) >= logMaxBuffer {
		return len(p), b.flushLocked()
	}
	if b.timer == nil {
		b.timer = time.AfterFunc(logFlushAfter, func() { _ = b.Flush() })
	}
	return len(p), nil
}

// Flush writes the lines held.
func (b *logBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

func (b *logBuffer) flushLocked() error {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.w.Write(b.buf)
	b.buf = b.buf[:0]
	return err
}

// flushAtWarn writes a warning or an error, and the lines held before
// it, at once.
type flushAtWarn struct {
	slog.Handler
	buf *logBuffer
}

func (h flushAtWarn) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		err = errors.Join(err, h.buf.Flush())
	}
	return err
}

func (h flushAtWarn) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushAtWarn{h.Handler.WithAttrs(attrs), h.buf}
}

func (h flushAtWarn) WithGroup(name string) slog.Handler {
	return flushAtWarn{h.Handler.WithGroup(name), h.buf}
}

// tracerProvider exports spans over OTLP/HTTP when the standard
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set, configured by the standard OTEL_* variables (headers, timeout,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES); nil when neither is set.
// Shut it down on exit: it flushes the spans it holds.
func tracerProvider(ctx context.Context) (*sdktrace.TracerProvider, error) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "runner"),
		attribute.String("service.version", version())), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
