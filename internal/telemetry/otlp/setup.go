// Package otlp installs the OpenTelemetry SDK for acp-agent: a tracer
// provider exporting over OTLP/HTTP, set up from the environment or the
// config ([Setup]). Only cmd/acp-agent imports it, so the packages that
// trace (through package telemetry and the otel API) link no SDK and no
// exporter.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/seed02d3eb6b/acp-agent/internal/telemetry"
)

// DefaultShutdownTimeout bounds how long the shutdown returned by [Setup]
// waits for the last spans to be exported.
const DefaultShutdownTimeout = 5 * time.Second

// Options configure [Setup]. The zero value reads the environment only.
type Options struct {
	// Endpoint is the OTLP/HTTP endpoint (config "telemetry".endpoint),
	// such as "http://127.0.0.1:4318": spans go to its /v1/traces. Empty
	// means the environment's OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as
	// is) or OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces added); neither
	// set means tracing is off.
	Endpoint string
	// ServiceName and ServiceVersion are the resource's service.name
	// (default "acp-agent"; OTEL_SERVICE_NAME wins) and service.version.
	ServiceName, ServiceVersion string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Logger receives export failures. Nil discards them.
	Logger *slog.Logger
}

// Setup installs the OpenTelemetry SDK as the global tracer provider, with
// a batching OTLP/HTTP (protobuf) exporter, and W3C Trace Context as the
// global propagator, when an endpoint is configured (see
// [Options].Endpoint) and OTEL_SDK_DISABLED is not "true". It returns whether
// tracing is on and the function that flushes the spans still queued and
// stops the exporter, bounded by [DefaultShutdownTimeout] (a no-op when
// off). It fails only on a malformed endpoint or an OTLP protocol other
// than http/protobuf in OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL; exporting
// failures are logged, never returned.
//
// Only cmd/acp-agent calls Setup; it must be called once, before the
// first span.
func Setup(ctx context.Context, opts *Options) (on bool, shutdown func(), err error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ServiceName == "" {
		o.ServiceName = telemetry.AgentName
	}
	noop := func() {}
	if strings.EqualFold(strings.TrimSpace(o.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false, noop, nil
	}
	if o.Endpoint == "" && o.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && o.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		return false, noop, nil
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := o.Getenv(k); p != "" && p != "http/protobuf" {
			return false, noop, fmt.Errorf("%s=%q: acp-agent exports traces over OTLP/HTTP only: use http/protobuf", k, p)
		}
	}
	var eopts []otlptracehttp.Option
	if o.Endpoint != "" {
		u := strings.TrimSuffix(o.Endpoint, "/")
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return false, noop, fmt.Errorf("telemetry.endpoint %q: want an http:// or https:// URL", o.Endpoint)
		}
		eopts = append(eopts, otlptracehttp.WithEndpointURL(u+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, eopts...)
	if err != nil {
		return false, noop, fmt.Errorf("the OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName(o.ServiceName), semconv.ServiceVersion(o.ServiceVersion)))
	if err != nil {
		// Two schema URLs: keep ours, without the defaults.
		res = resource.NewSchemaless(semconv.ServiceName(o.ServiceName), semconv.ServiceVersion(o.ServiceVersion))
	}
	if name := o.Getenv("OTEL_SERVICE_NAME"); name != "" {
		res, _ = resource.Merge(res, resource.NewSchemaless(semconv.ServiceName(name)))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	log := o.Logger
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("OpenTelemetry: exporting traces failed", "err", err)
	}))
	return true, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultShutdownTimeout)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			log.Warn("OpenTelemetry: flushing the last spans failed", "err", err)
		} else if err != nil {
			log.Warn("OpenTelemetry: the last spans were not exported in time", "timeout", DefaultShutdownTimeout)
		}
	}, nil
}
