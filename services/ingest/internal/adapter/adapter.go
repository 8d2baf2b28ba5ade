// Package adapter is the framework for Switchboard's pull adapters: long-running
// readers that fetch events from an external source (a Redis stream, later an
// HTTP endpoint or a mailbox) and hand them to a Sink that turns each one into a
// durable event and todo.
//
// The contract every adapter follows is store-then-ack: a message is
// acknowledged at its source only after Sink.Store has returned nil for it. A
// crash between the two therefore re-delivers the message instead of losing it,
// and the Sink, being idempotent on (adapter, SourceID), turns that re-delivery
// into a no-op. Delivery is at-least-once towards the Sink and exactly-once in
// the database.
//
// The package also holds the small helpers adapters share: jittered backoff
// (Backoff, Sleep) and the operator's allow list (Allowlist: Check when an
// adapter is configured, DialContext when it connects), which stops a tenant
// from making the nodes connect anywhere the operator did not name.
package adapter

import (
	"context"
	"errors"
	"time"
)

// ErrSinkUnavailable marks a Store failure that is not the messages' fault (the
// database is down, the transaction timed out…). A Sink should wrap it in such
// errors: adapters then retry with backoff but never count the failure towards
// dead-lettering, so an outage cannot push good messages into a dead-letter
// queue. Any other error is treated as possibly caused by the messages.
var ErrSinkUnavailable = errors.New("sink unavailable")

// Message is one event read from a source, not yet stored.
type Message struct {
	// SourceID is the source's own id for the message (a Redis stream entry id,
	// an IMAP UID…). It is unique per adapter and is the deduplication key.
	SourceID string
	// Body is the payload as the source delivered it.
	Body []byte
	// Headers is source metadata worth keeping (stream name, field names…).
	Headers map[string]string
	// ContentType describes Body, empty when the source does not say.
	ContentType string
	// At is when the source received the message, zero when it does not
	// say: the adapter's lag metric.
	At time.Time
}

// Sink stores messages durably (event + todo, in one transaction each or one for
// the batch) and is idempotent: storing a message whose (adapter, SourceID) was
// stored before stores nothing new and is not an error. Only after Store returns
// nil may the source be acknowledged.
type Sink interface {
	Store(ctx context.Context, adapterID string, msgs []Message) error
}

// Source is one pull adapter instance.
type Source interface {
	// Run reads from the source and stores into sink until ctx ends. It returns
	// nil when ctx ends and an error only when it cannot go on at all (for
	// example an invalid configuration); transient failures are retried.
	Run(ctx context.Context, sink Sink) error
}
