//go:build e2e

// Package sdk runs the worker SDKs' own test suites (sdk/python, with
// Debian's Python, grpcio and pytest) against nodes started from the
// binary this tier built and the tier's test Postgres, so a server change
// that breaks an SDK fails `make test` like any other test. It has no code
// of its own.
package sdk
