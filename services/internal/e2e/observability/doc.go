//go:build e2e

// Package observability checks deploy/observability with Prometheus's own
// promtool: the alert rules load and their unit tests pass. (That every
// metric they read exists on a live node is an in-process integration test
// in services/node.) It has no code of its own.
package observability
