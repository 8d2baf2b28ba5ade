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
	TenantLimits            = "tenant.limits"
	RealtimeLimits          = "realtime.limits"
	QueueSchedules          = "queue.schedules"
)

// Retention is a retention.* value: rows older than MaxAgeSeconds go, and
// so do a tenant's oldest beyond its newest MaxRowsPerTenant (either bound
// alone leaves the other dimension unbounded). MaxRows is the whole table's
// safety net, for when the tenants together outgrow what the operator
// provisioned: the only cap under which one tenant's rows can go because of
// another's writes, so it should stay above tenants × MaxRowsPerTenant
// (docs/data-model.md says which rows it takes).
type Retention struct {
	MaxAgeSeconds    int64 `json:"max_age_seconds"`
	MaxRows          int64 `json:"max_rows"`
	MaxRowsPerTenant int64 `json:"max_rows_per_tenant"`
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

// Tenant is tenant.limits: how many of each resource one tenant may hold.
// Each is enforced by the table's owner when the resource is created (one
// more is RESOURCE_EXHAUSTED); lowering a limit removes nothing a tenant
// already holds.
type Tenant struct {
	// MaxAgents bounds the tenant's agents.
	MaxAgents int32 `json:"max_agents"`
	// MaxCredentials bounds its live credentials (neither revoked nor
	// expired).
	MaxCredentials int32 `json:"max_credentials"`
	// MaxEndpoints bounds its webhook endpoints.
	MaxEndpoints int32 `json:"max_endpoints"`
	// MaxAdapters bounds its pull adapters: each holds a blocking Redis
	// connection and a goroutine on every ingest node.
	MaxAdapters int32 `json:"max_adapters"`
	// MaxSchedules bounds its schedules: every node ticks every tenant's
	// schedules.
	MaxSchedules int32 `json:"max_schedules"`
}

// Realtime is realtime.limits: the publishes per second one node accepts
// for one tenant (a cluster of N nodes accepts up to N times as many; like
// ingest.limits it protects each node and the database, it is not a meter).
type Realtime struct {
	// TenantDurablePerSecond bounds durable publishes: each is a row.
	TenantDurablePerSecond int32 `json:"tenant_durable_per_second"`
	// TenantEphemeralPerSecond bounds ephemeral publishes: each is fan-out
	// work on every node, and a notification when the transport is Postgres.
	TenantEphemeralPerSecond int32 `json:"tenant_ephemeral_per_second"`
}

// Schedules is queue.schedules.
type Schedules struct {
	// MinIntervalSeconds is the shortest gap a schedule's spec may put
	// between two of its ticks (CreateSchedule and UpdateSchedule refuse a
	// spec that fires more often).
	MinIntervalSeconds int32 `json:"min_interval_seconds"`
}

// MinInterval is MinIntervalSeconds as a duration.
func (s Schedules) MinInterval() time.Duration {
	return time.Duration(s.MinIntervalSeconds) * time.Second
}

// The defaults: what the migrations seed, and what a reader uses when an
// operator deleted the row or a field of it.
var (
	// A tenant keeps what the whole table kept before the caps were per
	// tenant; the table-wide safety net is ten tenants' worth.
	DefaultRetentionEvents         = Retention{MaxAgeSeconds: 30 * 86400, MaxRows: 10_000_000, MaxRowsPerTenant: 1_000_000}
	DefaultRetentionTodos          = Retention{MaxAgeSeconds: 7 * 86400, MaxRows: 10_000_000, MaxRowsPerTenant: 1_000_000}
	DefaultRetentionRealtimeEvents = Retention{MaxAgeSeconds: 86400, MaxRows: 1_000_000, MaxRowsPerTenant: 100_000}
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

	// Generous for a team's real use, small enough that a hostile tenant
	// cannot hold a node's goroutines, Redis connections or the
	// tickers' time: adapters are the dear ones (a blocking connection on
	// every ingest node each).
	DefaultTenant = Tenant{MaxAgents: 1000, MaxCredentials: 10_000, MaxEndpoints: 1000, MaxAdapters: 10, MaxSchedules: 1000}
	// Like ingest.limits' 1,000 webhooks a second; ephemeral events are
	// cheaper (no row), so ten times as many.
	DefaultRealtime = Realtime{TenantDurablePerSecond: 1000, TenantEphemeralPerSecond: 10_000}
	// Ten seconds: the ticker looks once a second on every node, and a
	// spec firing every second would make one schedule a tight loop.
	DefaultSchedules = Schedules{MinIntervalSeconds: 10}
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
		TenantLimits:            DefaultTenant,
		RealtimeLimits:          DefaultRealtime,
		QueueSchedules:          DefaultSchedules,
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
	retentionShape = shape{"max_age_seconds": {1, math.MaxInt32}, "max_rows": {1, math.MaxInt32}, "max_rows_per_tenant": {1, math.MaxInt32}}
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
		TenantLimits: {
			"max_agents": {1, 1_000_000}, "max_credentials": {1, 1_000_000}, "max_endpoints": {1, 1_000_000},
			"max_adapters": {1, 10_000}, "max_schedules": {1, 1_000_000},
		},
		// 0 would refuse every publish: switching them off is not a limit.
		RealtimeLimits: {"tenant_durable_per_second": {1, 1_000_000}, "tenant_ephemeral_per_second": {1, 1_000_000}},
		// At least a second: the ticker's own resolution.
		QueueSchedules: {"min_interval_seconds": {1, 86400}},
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
