// Package settings is the one home of the deployment-wide settings: their
// keys, their typed values, the defaults every reader falls back to (the
// migrations seed the same values; a test keeps the two in step), the shape
// an operator's new value must have, and the statements on the settings
// table, which this package alone writes.
//
// Statements that must see a setting inside their own transaction (a claim
// reads queue.defaults) read the row in SQL and take the default from here
// as a parameter, so there is no cached copy to go stale and no second
// literal to keep in step.
package settings

import (
	"math"
	"time"
)

// The keys of the known settings.
const (
	RetentionEvents         = "retention.events"
	RetentionTodos          = "retention.todos"
	RetentionRealtimeEvents = "retention.realtime_events"
	RetentionEventPayloads  = "retention.event_payloads"
	QueueDefaults           = "queue.defaults"
	IngestDedup             = "ingest.dedup"
	IngestLimits            = "ingest.limits"
	StreamLimits            = "streams.limits"
	AuthCredentials         = "auth.credentials"
)

// Retention is a retention.* value: rows older than MaxAgeSeconds go, and
// so do the oldest beyond MaxRows (either alone leaves the other dimension
// unbounded).
type Retention struct {
	MaxAgeSeconds int64 `json:"max_age_seconds"`
	MaxRows       int64 `json:"max_rows"`
}

// MaxAge is MaxAgeSeconds as a duration.
func (r Retention) MaxAge() time.Duration { return time.Duration(r.MaxAgeSeconds) * time.Second }

// PayloadRetention is retention.event_payloads: an event's payload is
// emptied MaxAgeSeconds after it was received while the event itself stays
// (retention.events decides that); 0 keeps payloads as long as their event.
type PayloadRetention struct {
	MaxAgeSeconds int64 `json:"max_age_seconds"`
}

// MaxAge is MaxAgeSeconds as a duration (0: payloads are not pruned).
func (r PayloadRetention) MaxAge() time.Duration { return time.Duration(r.MaxAgeSeconds) * time.Second }

// Queue is queue.defaults: what a todo that does not choose gets.
type Queue struct {
	// MaxAttempts is how many claims a todo gets before it is dead.
	MaxAttempts int32 `json:"max_attempts"`
	// LeaseSeconds is the lease a claim grants.
	LeaseSeconds int32 `json:"lease_seconds"`
}

// Dedup is ingest.dedup: how long a delivery whose id is not signed is
// recognised as a duplicate by its body's SHA-256.
type Dedup struct {
	WindowSeconds int64 `json:"window_seconds"`
}

// Limits is ingest.limits.
type Limits struct {
	// TenantRequestsPerSecond is the webhook rate one tenant may send across
	// its endpoints.
	TenantRequestsPerSecond int32 `json:"tenant_requests_per_second"`
}

// Streams is streams.limits: how many server streams (Subscribe,
// WatchNodes) one node keeps open at once for one credential and for one
// tenant. Counted per node, so a client that reaches N nodes may hold N
// times as many.
type Streams struct {
	MaxPerCredential int32 `json:"max_per_credential"`
	MaxPerTenant     int32 `json:"max_per_tenant"`
}

// Credentials is auth.credentials: the longest lifetime MintCredential
// grants a tenant admin's request.
type Credentials struct {
	// MaxTTLSeconds bounds expires_at (and is the expiry of a credential
	// minted without one); 0 means no maximum.
	MaxTTLSeconds int64 `json:"max_ttl_seconds"`
}

// MaxTTL is MaxTTLSeconds as a duration (0: no maximum).
func (c Credentials) MaxTTL() time.Duration { return time.Duration(c.MaxTTLSeconds) * time.Second }

// The defaults: what the migrations seed, and what a reader uses when an
// operator deleted the row or a field of it.
var (
	DefaultRetentionEvents         = Retention{MaxAgeSeconds: 30 * 86400, MaxRows: 1_000_000}
	DefaultRetentionTodos          = Retention{MaxAgeSeconds: 7 * 86400, MaxRows: 1_000_000}
	DefaultRetentionRealtimeEvents = Retention{MaxAgeSeconds: 86400, MaxRows: 100_000}
	DefaultQueue                   = Queue{MaxAttempts: 25, LeaseSeconds: 30}
	DefaultDedup                   = Dedup{WindowSeconds: 3 * 86400}
	DefaultLimits                  = Limits{TenantRequestsPerSecond: 1000}
	// 100 streams per credential is far more than one client process needs
	// (a Subscribe carries up to 100 channels), and 1,000 per tenant bounds
	// what one tenant's streams can hold of a node (each Subscribe holds a
	// goroutine, a 1,024-event buffer and HTTP/2 stream state).
	DefaultStreams = Streams{MaxPerCredential: 100, MaxPerTenant: 1000}
	// A year, the common ceiling for personal access tokens: a leaked
	// token minted without an expiry stops working eventually.
	DefaultCredentials = Credentials{MaxTTLSeconds: 365 * 86400}

	// Off: an existing install keeps every payload as long as its event.
	DefaultRetentionEventPayloads = PayloadRetention{MaxAgeSeconds: 0}
)

// Defaults maps every known key to its default value.
func Defaults() map[string]any {
	return map[string]any{
		RetentionEvents:         DefaultRetentionEvents,
		RetentionTodos:          DefaultRetentionTodos,
		RetentionRealtimeEvents: DefaultRetentionRealtimeEvents,
		RetentionEventPayloads:  DefaultRetentionEventPayloads,
		QueueDefaults:           DefaultQueue,
		IngestDedup:             DefaultDedup,
		IngestLimits:            DefaultLimits,
		StreamLimits:            DefaultStreams,
		AuthCredentials:         DefaultCredentials,
	}
}

// intRange is an inclusive bound for one integer field of a value.
type intRange struct{ min, max float64 }

// shape is the exact object a known setting's value must be: these fields
// and no others, each an integer within its range. The upper bounds keep
// every value inside a PostgreSQL integer, which is how the statements
// that read them pass them on (make_interval(secs => …), LIMIT).
type shape map[string]intRange

var (
	retentionShape = shape{"max_age_seconds": {1, math.MaxInt32}, "max_rows": {1, math.MaxInt32}}
	shapes         = map[string]shape{
		QueueDefaults: {"max_attempts": {1, 1000}, "lease_seconds": {1, 3600}},
		IngestDedup:   {"window_seconds": {1, math.MaxInt32}},
		IngestLimits:  {"tenant_requests_per_second": {1, 1_000_000}},
		StreamLimits:  {"max_per_credential": {1, 1_000_000}, "max_per_tenant": {1, 1_000_000}},
		// 0 is "no maximum"; the upper bound is about 68 years.
		AuthCredentials: {"max_ttl_seconds": {0, math.MaxInt32}},
		// Payloads only, no row cap (the events' own cap is retention.events);
		// 0 is "as long as the event".
		RetentionEventPayloads: {"max_age_seconds": {0, math.MaxInt32}},
	}
)

// shapeOf returns the shape of key's value, or nil for a key this server has
// no rule for (one a later migration adds). A retention.* key without a
// shape of its own is pruned with the same pair of limits, so the prefix
// decides.
func shapeOf(key string) shape {
	if sh, ok := shapes[key]; ok {
		return sh
	}
	if len(key) > len("retention.") && key[:len("retention.")] == "retention." {
		return retentionShape
	}
	return shapes[key]
}
