//go:build e2e

// Package sdk runs the worker SDKs' own test suites against nodes started
// from the binary this tier built and the tier's test Postgres: sdk/python's
// pytest (Debian's Python, grpcio and pytest) and sdk/typescript's type
// check and node:test suite, so a server change that breaks an SDK fails
// `make test` like any other test. It has no code of its own.
package sdk
