// Package chaos is the chaos suite: real `switchboard serve` processes on
// loopback, a private PostgreSQL cluster it starts and crash-restarts, and
// worker processes built on the Go SDK (pkg/worker), under faults: workers
// SIGKILLed, a node SIGKILLed (the workers fail over), Postgres stopped with
// `pg_ctl -m immediate` and started again, a node paused past the registry's
// stale threshold (SIGSTOP, SIGCONT), and concurrent shuffled EnqueueBatch
// calls with the same dedupe keys across three nodes.
//
// Every scenario counts in the database what a queue must never do: lose a
// todo or complete one twice (an AFTER UPDATE trigger on todos records each
// transition to completed in chaos_completions), and reports redeliveries,
// how long completions stalled after each fault, and the SDK's own counts
// (acks retried, acks abandoned: finished work thrown away).
//
// The tests carry the build tag chaos, so neither `make unit` nor `make
// integration` runs them: `make chaos` does (a few minutes; CHAOS_REPORT=path
// also writes the report table to a file). This file holds no code, so the
// package builds without the tag.
package chaos
