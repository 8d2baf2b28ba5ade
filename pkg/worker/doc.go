// Package worker is the Go client that drains a Switchboard queue: it claims
// todos from QueueService in batches, runs a Handler over each with a
// concurrency limit, keeps every lease alive with Heartbeat while the handler
// runs, and ends each lease with Complete or Fail, presenting the lease token
// it was given.
//
// A Worker stops cleanly: when the context given to Run is cancelled it stops
// claiming, lets running handlers finish for Options.ShutdownGrace, then
// cancels the rest and Releases their todos (a Release does not count as a
// failed attempt), and returns nil.
//
// Handlers signal outcomes with their error: nil completes the todo, any
// other error fails it (the server retries it later with backoff), an error
// wrapped with Permanent dead-letters it, and one wrapped with RetryAfter
// fails it with an explicit retry delay. When the server answers a Heartbeat
// with FAILED_PRECONDITION the lease is gone (it expired and someone else may
// hold the todo now): the handler's context is cancelled and the worker
// never completes or fails that todo.
//
// Round trips are shared: successful completions are queued to one acker per
// Run that sends them in CompleteBatch calls of up to Options.AckBatch items,
// after at most Options.AckDelay (a todo counts as Completed only once its
// item's outcome is OK; a STALE_LEASE or NOT_FOUND outcome counts as
// LeaseLost and is not retried; transport errors are retried with backoff
// within the lease). All running todos' leases are renewed with one
// HeartbeatBatch per HeartbeatInterval tick, and a todo's heartbeat in flight
// is let finish before its completion is queued. A handler slot is claimed
// again as soon as its completion is queued, and Claims ask for all free
// slots (up to Prefetch), at most two at once, long-polling only when the
// queue looked empty. Run returns only after every queued completion was
// answered. Against a server without the batch RPCs (UNIMPLEMENTED) the
// Worker falls back to one Complete or Heartbeat call per todo.
//
// Handlers must honour their context: Run does not return before every
// handler it started has returned.
package worker
