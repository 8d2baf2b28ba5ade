// Package logging builds the process's zap logger and holds the typed field
// helpers, so a key such as "node_id" is spelled once for every service.
package logging

import (
	"fmt"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns a logger at level ("debug", "info", "warn", "error") in format
// "json" (production: one object per line on stderr) or "console" (dev).
func New(level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	var cfg zap.Config
	switch format {
	case "json":
		cfg = zap.NewProductionConfig()
		cfg.EncoderConfig.TimeKey = "time"
		cfg.EncoderConfig.EncodeTime = zapcore.RFC3339NanoTimeEncoder
		// Sampling drops repeated lines under load; an operator reading an
		// incident wants all of them, and our hot paths do not log per call.
		cfg.Sampling = nil
	case "console":
		cfg = zap.NewDevelopmentConfig()
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalColorLevelEncoder
		cfg.DisableStacktrace = true
	default:
		return nil, fmt.Errorf("log format %q: want json or console", format)
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	return cfg.Build()
}

// Typed fields: use these instead of ad-hoc keys.

// NodeID names the node a line is about.
func NodeID(id string) zap.Field { return zap.String("node_id", id) }

// Service names a Switchboard service (queue, ingest, …).
func Service(name string) zap.Field { return zap.String("service", name) }

// Component names a lifecycle component (grpc, http, readiness, …).
func Component(name string) zap.Field { return zap.String("component", name) }

// RequestID is the per-call id set by the request-id interceptor.
func RequestID(id string) zap.Field { return zap.String("request_id", id) }

// Method is a full gRPC method name.
func Method(m string) zap.Field { return zap.String("grpc_method", m) }

// Addr is a listen or dial address.
func Addr(a string) zap.Field { return zap.String("addr", a) }
