package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/seed02d3eb6b/acp-agent/internal/audit"
	"github.com/seed02d3eb6b/acp-agent/internal/metrics"
	"github.com/seed02d3eb6b/acp-agent/internal/telemetry/otlp"
)

// TelemetryConfig is config "telemetry": OpenTelemetry traces, off unless
// an OTLP endpoint is set here or in OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
type TelemetryConfig struct {
	// Endpoint is the OTLP/HTTP collector's base URL, such as
	// "http://127.0.0.1:4318" (spans go to its /v1/traces); the
	// environment's OTEL_EXPORTER_OTLP_* variables configure the rest
	// (headers, timeout, compression).
	Endpoint string `json:"endpoint"`
}

// AuditConfig is config "audit": the audit log of tool calls, JSON lines
// appended to Path (--audit-log wins). Off when no path is given.
type AuditConfig struct {
	Path string `json:"path"`
	// IncludeArguments and IncludeResults add each call's arguments and
	// result to its line; off by default (they may carry secrets).
	IncludeArguments bool `json:"includeArguments"`
	IncludeResults   bool `json:"includeResults"`
}

// auditCloseTimeout bounds how long exiting waits for the audit log's last
// lines.
const auditCloseTimeout = 2 * time.Second

// startObservability sets up what operators watch, from the config and
// --audit-log (auditFlag): the tracer provider (otlp.Setup) and the
// audit log, which it sets on cfg for the runner (Config.auditor). stop
// flushes both, bounded (otlp.DefaultShutdownTimeout,
// auditCloseTimeout). A bad endpoint or an audit file that cannot be
// opened is a startup error naming it.
func startObservability(cfg *Config, auditFlag string, log *slog.Logger) (stop func(), err error) {
	on, stopTraces, err := otlp.Setup(context.Background(), &otlp.Options{
		Endpoint: cfg.Telemetry.Endpoint, ServiceVersion: agentVersion(), Logger: log.With("component", "otel"),
	})
	if err != nil {
		return nil, err
	}
	if on {
		log.Info("tracing on: spans are exported over OTLP/HTTP")
	}
	path := cfg.Audit.Path
	if auditFlag != "" {
		path = auditFlag
	}
	if path == "" {
		return stopTraces, nil
	}
	al, err := audit.Open(path, &audit.Options{
		IncludeArguments: cfg.Audit.IncludeArguments, IncludeResults: cfg.Audit.IncludeResults,
		Logger: log.With("component", "audit"),
	})
	if err != nil {
		stopTraces()
		if auditFlag != "" {
			return nil, fmt.Errorf("--audit-log: %w", err)
		}
		return nil, fmt.Errorf("audit.path: %w", err)
	}
	cfg.auditor = al
	log.Info("audit log on", "path", path, "arguments", cfg.Audit.IncludeArguments, "results", cfg.Audit.IncludeResults)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), auditCloseTimeout)
		defer cancel()
		if err := al.Close(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			log.Warn("closing the audit log", "err", err)
		} else if err != nil {
			log.Warn("the audit log's last lines were not written in time", "err", err)
		}
		stopTraces()
	}, nil
}

// observe has met record the process's audit log (its dropped lines), if
// cfg has one; met may be nil.
func (c *Config) observe(met *metrics.Metrics) {
	if al, ok := c.auditor.(*audit.Log); ok && met != nil {
		met.AuditDropped(al.Dropped)
	}
}
