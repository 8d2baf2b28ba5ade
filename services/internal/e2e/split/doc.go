//go:build e2e

// Package split is the process-level test of the split topology: one
// `switchboard serve <service>` process per service on loopback, sharing
// one database, the gateway finding the others only through the registry
// (docs/routing.md). It has no code of its own.
package split
