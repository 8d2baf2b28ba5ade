// Package pgnotify is a node's one PostgreSQL listen/notify endpoint: a
// Notifier holds a single listen connection for every channel the node's
// services subscribe to, and a single sender that turns their post-commit
// marks into as few pg_notify statements as it can.
//
// Why one per node: every listen connection is a backend that never goes
// back to the pool, and every component that ran its own also ran its own
// reconnect loop and its own flusher. A Notifier does both once.
//
// Receiving. Subscribe a channel with a Subscriber before Start. OnNotify runs
// on the listen goroutine for each notification (it must not block: the
// next notification, of every channel, waits for it). OnConnect runs each time
// the listen connection is (re)established with all its channels in place:
// notifications sent while the connection was down are lost, so a subscriber
// uses it to re-read whatever state the notifications stand for. The
// connection is retried with exponential backoff for as long as the Notifier
// runs; a lost connection is logged at WARN with its error.
//
// Sending. NOTIFY is an accelerator, never the source of truth: every user
// of this package also polls, so a failed statement is logged at WARN and not
// retried, and what was pending at Stop is dropped. Nothing here sends inside
// the caller's transaction (NOTIFY takes a cluster-wide lock at commit): Mark
// and Send only record, and the flush goroutine sends everything that is due
// in one statement of its own (at most Options.MaxPerStatement notifications
// each). Two shapes:
//
//   - A Coalescer (Notifier.Coalescer) sends at most one notification per key
//     per window: a key marked several times before its channel's window has
//     passed yields one notification with the latest payload. The window
//     counts from the first mark pending on that Coalescer, so a steady
//     stream of marks still goes out once per window.
//   - A Queue (Notifier.Queue) sends every payload as its own notification, in
//     the order sent, as soon as the flusher gets to it. It is bounded: Send
//     never blocks, and a full queue drops the payload and counts it.
//
// The due/coalescing logic (outbox.go) does no I/O and takes its clock as a
// function, so it is tested without a database.
package pgnotify
