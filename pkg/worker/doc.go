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
// Handlers must honour their context: Run does not return before every
// handler it started has returned.
package worker
