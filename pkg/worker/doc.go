// Package worker is the Go client that drains a Switchboard queue: it claims
// todos from QueueService in batches, runs a Handler over each with a
// concurrency limit, keeps every lease alive with Heartbeat from the claim
// until its outcome is confirmed, and ends each lease with Complete, Fail or
// Release, presenting the lease token it was given (Todo.lease_token, the
// secret of the ClaimResponse, never the attempt number).
//
// # Connecting
//
// Dial connects to a set of nodes: several "host:port" addresses, or one
// target such as "dns:///queue.internal:7000" resolving to many. RPCs are
// balanced round robin over the nodes that are up, with keepalive pings
// so that a node that died silently is left within seconds, and an optional
// bearer token (DialOptions.Token) sent as "authorization: Bearer <token>",
// over TLS (DialOptions.TLS) or, only when DialOptions.AllowInsecure says
// so, in plaintext. Leases live in the database, not in a node: when a node
// dies the Worker's claims, heartbeats and acks go on through the others
// and the todos it holds stay its own. Claims wait for a ready node
// (grpc.WaitForReady) within their deadline.
//
// # Outcomes
//
// Handlers signal outcomes with their error: nil completes the todo, any
// other error fails it (the server retries it later with backoff), an error
// wrapped with Permanent dead-letters it, and one wrapped with RetryAfter
// fails it with an explicit retry delay. When the server answers a Heartbeat
// with FAILED_PRECONDITION the lease is gone (it expired and someone else may
// hold the todo now): the handler's context is cancelled and the worker
// never completes or fails that todo.
//
// Options.OnAck is told every claimed todo's final Outcome exactly once,
// after the server confirmed it: Completed, Failed, DeadLettered, Released;
// or LeaseLost when the server said the lease is gone, or Unconfirmed when
// the SDK gave up. Tie exactly-once side effects to Completed: stage them in
// the handler, commit them in OnAck on Completed, and drop them on any other
// outcome (the todo will run again, here or elsewhere; Unconfirmed is the
// one ambiguous case: the Complete may have committed without its answer
// reaching us, so side effects that must never be lost need their own
// idempotency key, such as the todo id).
//
// # Retries
//
// Acks (Complete, CompleteBatch items, Fail, Release) are idempotent on the
// server: an ack retried after its first attempt committed is answered
// success with already = true (BATCH_OUTCOME_ALREADY for a batch item), so
// the Worker retries an ack whose answer it did not get. Transient errors
// are retried with jittered exponential backoff (50 ms doubling up to 2 s):
// UNAVAILABLE (a node or the database restarting), ABORTED (deadlock,
// serialization), DEADLINE_EXCEEDED of one attempt, RESOURCE_EXHAUSTED,
// UNKNOWN and errors that are no gRPC status (broken connections). Between
// the attempts the heartbeater keeps renewing the lease (no heartbeat is in
// flight during an attempt, so none overtakes a completion), and it stops
// only once the outcome is settled. An ack is given up (Unconfirmed) when
// its next attempt would start after the lease could have expired (the end
// of the last lease the server granted, measured from when the granting
// call was sent, so it is never later than the server's), or after
// Options.AckTimeout. FAILED_PRECONDITION and NOT_FOUND (a stale lease) end
// it at once as LeaseLost; INTERNAL (a server bug), INVALID_ARGUMENT,
// PERMISSION_DENIED, UNAUTHENTICATED and other errors end it at once as
// Unconfirmed, logged at error. Stats count the acks retried (AcksRetried),
// confirmed after a retry (AcksRecovered), answered already (AcksAlready)
// and given up (AcksAbandoned).
//
// # Progress
//
// A handler reports how far it got with Progress(ctx, v): v must marshal to
// a JSON object of at most 1 KiB. The latest value is sent with the todo's
// next lease heartbeat, stored as Todo.progress and published as a
// todo.progress event on sys:queue:<queue> and sys:todo:<id>.
//
// # Results
//
// A handler sets what its todo completes with (Todo.result) with
// SetResult(ctx, v): v must marshal to a JSON object of at most 1 MiB. The
// last value is sent with the completion; it is dropped when the handler
// fails. examples/echo is a complete worker that completes each todo with
// its payload.
//
// # Tracing
//
// Each handler runs in a span, "process <queue>" (kind consumer), that
// continues the trace of the request that created the todo
// (Todo.trace_parent: an Enqueue, a webhook, a PublishEvent): it is that
// context's child and is linked to it, and carries the todo's id, queue,
// kind and attempt; a handler error sets its status. The Heartbeat,
// Complete, Fail and Release calls about the todo are children of the
// handler's span (a batch of several todos gets a span of its own, child
// of the first and linked to the others), and every RPC sends its W3C
// trace context. Spans go to Options.TracerProvider and
// DialOptions.TracerProvider, by default the global provider; with none
// set they are no-ops, but the handler's context still carries the todo's
// trace. See docs/tracing.md.
//
// # Batching and shutdown
//
// Round trips are shared: successful completions are queued to one acker per
// Run that sends them in CompleteBatch calls of up to Options.AckBatch items,
// after at most Options.AckDelay. All held todos' leases are renewed with one
// HeartbeatBatch per HeartbeatInterval tick. A handler slot is claimed again
// as soon as its completion is queued, and Claims ask for all free slots (up
// to Prefetch), at most two at once, long-polling only when the queue looked
// empty. Against a server without the batch RPCs (UNIMPLEMENTED) the Worker
// falls back to one Complete or Heartbeat call per todo.
//
// A Worker stops cleanly: when the context given to Run is cancelled it stops
// claiming, lets running handlers finish for Options.ShutdownGrace, then
// cancels the rest and Releases their todos (a Release does not count as a
// failed attempt), and returns nil. Run returns only after every ack was
// settled (confirmed or given up, its OnAck called), which with the database
// down can take up to a lease duration (up to Options.AckTimeout while
// heartbeats get through but acks do not). Handlers must honour their context:
// Run does not return before every handler it started has returned.
package worker
