//go:build e2e

// Package binary tests the switchboard binary as an operator runs it: real
// processes on loopback sharing a database, started, signalled, killed and
// restarted (boot, shutdown, configuration errors, migrate, the cluster's
// membership, schedules across nodes, realtime across nodes, TLS on every
// listener and link, and the bench commands). It has no code of its own.
package binary
