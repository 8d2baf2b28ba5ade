package auth

import (
	"slices"
	"strings"
)

// Rule says who may call one RPC.
type Rule struct {
	// Open methods need no credential (health, reflection, GET /health).
	Open bool
	// Administrator methods act across tenants: they need an admin-scoped
	// credential of an administrator human.
	Administrator bool
	// AnyOf lists the scopes any one of which allows the call (admin implies
	// every scope; see Principal.Has).
	AnyOf []Scope
}

// Allows reports whether p may call a method under r.
func (r Rule) Allows(p Principal) bool {
	if r.Open {
		return true
	}
	if r.Administrator {
		return p.Administrator
	}
	return slices.ContainsFunc(r.AnyOf, p.Has)
}

func anyOf(s ...Scope) Rule { return Rule{AnyOf: s} }

var (
	open          = Rule{Open: true}
	administrator = Rule{Administrator: true}
	tenantAdmin   = anyOf(ScopeAdmin)
)

// openServices answer without a credential: probes and tooling must work
// before anyone holds a token.
var openServices = []string{
	"grpc.health.v1.Health",
	"grpc.reflection.v1.ServerReflection",
	"grpc.reflection.v1alpha.ServerReflection",
}

// Policy is the rule for every Switchboard RPC, keyed by full method name.
// A method missing here is denied (tests check that every registered method
// has a rule). What a scope allows inside a call — an agent only its own
// todos, a tenant only its rows — is enforced by the stores' SQL.
var Policy = map[string]Rule{
	// Queue: publishers put work in, agents work it, readers watch it. An
	// agent may also put follow-up work in and watch the queues it works
	// (what a River or Hatchet worker does from inside a job); the SQL
	// limits its reads to the todos addressed to it or to no agent.
	"/switchboard.queue.v1.QueueService/Enqueue":        anyOf(ScopePublisher, ScopeAgent),
	"/switchboard.queue.v1.QueueService/EnqueueBatch":   anyOf(ScopePublisher, ScopeAgent),
	"/switchboard.queue.v1.QueueService/Claim":          anyOf(ScopeAgent),
	"/switchboard.queue.v1.QueueService/Heartbeat":      anyOf(ScopeAgent),
	"/switchboard.queue.v1.QueueService/HeartbeatBatch": anyOf(ScopeAgent),
	"/switchboard.queue.v1.QueueService/CompleteBatch":  anyOf(ScopeAgent),
	"/switchboard.queue.v1.QueueService/Complete":       anyOf(ScopeAgent),
	"/switchboard.queue.v1.QueueService/Fail":           anyOf(ScopeAgent),
	"/switchboard.queue.v1.QueueService/Release":        anyOf(ScopeAgent),
	"/switchboard.queue.v1.QueueService/Cancel":         tenantAdmin,
	"/switchboard.queue.v1.QueueService/GetTodo":        anyOf(ScopeRead, ScopeAgent),
	"/switchboard.queue.v1.QueueService/ListTodos":      anyOf(ScopeRead, ScopeAgent),
	"/switchboard.queue.v1.QueueService/Redrive":        tenantAdmin,
	// Retrying a waiting todo now overrides its backoff or schedule: the
	// operator's act on the queue, like Cancel and Redrive.
	"/switchboard.queue.v1.QueueService/RetryTodo":  tenantAdmin,
	"/switchboard.queue.v1.QueueService/QueueStats": anyOf(ScopeRead, ScopeAgent),
	// Pausing stops every worker of the queue, the tenant's and its agents'
	// alike: an operator's act on the queue, like Redrive and Cancel, not a
	// worker's (an agent could otherwise stop its peers). Listing the queues
	// is watching them, like QueueStats.
	"/switchboard.queue.v1.QueueService/PauseQueue":  tenantAdmin,
	"/switchboard.queue.v1.QueueService/ResumeQueue": tenantAdmin,
	// Limits throttle every worker of the queue: the operator's act, like a pause.
	"/switchboard.queue.v1.QueueService/SetQueueLimits": tenantAdmin,
	"/switchboard.queue.v1.QueueService/ListQueues":     anyOf(ScopeRead, ScopeAgent),
	// Schedules enqueue work in the tenant's name on a clock, unattended:
	// defining them is the operator's, like pausing; reading them is
	// watching the queues, like QueueStats.
	"/switchboard.queue.v1.QueueService/CreateSchedule": tenantAdmin,
	"/switchboard.queue.v1.QueueService/UpdateSchedule": tenantAdmin,
	"/switchboard.queue.v1.QueueService/DeleteSchedule": tenantAdmin,
	"/switchboard.queue.v1.QueueService/GetSchedule":    anyOf(ScopeRead, ScopeAgent),
	"/switchboard.queue.v1.QueueService/ListSchedules":  anyOf(ScopeRead, ScopeAgent),

	// Ingest: publishing is putting work in; the history is for readers and
	// for an agent's own events.
	"/switchboard.ingest.v1.IngestService/PublishEvent": anyOf(ScopePublisher),
	"/switchboard.ingest.v1.IngestService/GetEvent":     anyOf(ScopeRead, ScopeAgent),
	"/switchboard.ingest.v1.IngestService/ListEvents":   anyOf(ScopeRead, ScopeAgent),
	// Replaying a stored event puts work in, like Enqueue (an agent's
	// replays reach only the events it may read, in SQL).
	"/switchboard.ingest.v1.IngestService/ReplayEvent":  anyOf(ScopePublisher, ScopeAgent),
	"/switchboard.ingest.v1.IngestService/ReplayEvents": anyOf(ScopePublisher, ScopeAgent),
	// An endpoint's delivery log is part of the endpoint: whoever may read
	// the endpoint (GetEndpoint) may read it.
	"/switchboard.ingest.v1.IngestService/ListDeliveries": tenantAdmin,

	// Registry: health is open; the cluster view is the operator's.
	"/switchboard.registry.v1.RegistryService/GetHealth":  open,
	"/switchboard.registry.v1.RegistryService/ListNodes":  administrator,
	"/switchboard.registry.v1.RegistryService/WatchNodes": administrator,

	// Realtime: agents both talk (typing, presence) and listen.
	"/switchboard.realtime.v1.RealtimeService/Publish":   anyOf(ScopePublisher, ScopeAgent),
	"/switchboard.realtime.v1.RealtimeService/Subscribe": anyOf(ScopeRead, ScopeAgent),
	"/switchboard.realtime.v1.RealtimeService/Presence":  anyOf(ScopeRead, ScopeAgent),
	// The tenant's live channels: Presence for every channel at once.
	"/switchboard.realtime.v1.RealtimeService/ListChannels": anyOf(ScopeRead, ScopeAgent),

	// The node-to-node mesh carries no user credential: the mesh service
	// itself requires the cluster secret on every link (services/realtime/
	// internal/mesh), so at this layer it is open.
	"/switchboard.mesh.v1.MeshService/Relay": open,

	// Admin: tenants are the operator's; everything inside a tenant is its
	// admin's; settings are deployment-wide, readable by a tenant admin.
	"/switchboard.admin.v1.AdminService/CreateHuman":      administrator,
	"/switchboard.admin.v1.AdminService/GetHuman":         tenantAdmin,
	"/switchboard.admin.v1.AdminService/ListHumans":       tenantAdmin, // a tenant admin sees only itself
	"/switchboard.admin.v1.AdminService/UpdateHuman":      tenantAdmin, // its own email and name only
	"/switchboard.admin.v1.AdminService/DeleteHuman":      administrator,
	"/switchboard.admin.v1.AdminService/CreateAgent":      tenantAdmin,
	"/switchboard.admin.v1.AdminService/GetAgent":         tenantAdmin,
	"/switchboard.admin.v1.AdminService/ListAgents":       tenantAdmin,
	"/switchboard.admin.v1.AdminService/UpdateAgent":      tenantAdmin,
	"/switchboard.admin.v1.AdminService/DeleteAgent":      tenantAdmin,
	"/switchboard.admin.v1.AdminService/CreateEndpoint":   tenantAdmin,
	"/switchboard.admin.v1.AdminService/GetEndpoint":      tenantAdmin,
	"/switchboard.admin.v1.AdminService/ListEndpoints":    tenantAdmin,
	"/switchboard.admin.v1.AdminService/UpdateEndpoint":   tenantAdmin,
	"/switchboard.admin.v1.AdminService/DeleteEndpoint":   tenantAdmin,
	"/switchboard.admin.v1.AdminService/CreateAdapter":    tenantAdmin,
	"/switchboard.admin.v1.AdminService/GetAdapter":       tenantAdmin,
	"/switchboard.admin.v1.AdminService/ListAdapters":     tenantAdmin,
	"/switchboard.admin.v1.AdminService/UpdateAdapter":    tenantAdmin,
	"/switchboard.admin.v1.AdminService/DeleteAdapter":    tenantAdmin,
	"/switchboard.admin.v1.AdminService/GetSetting":       tenantAdmin,
	"/switchboard.admin.v1.AdminService/ListSettings":     tenantAdmin,
	"/switchboard.admin.v1.AdminService/UpdateSetting":    administrator,
	"/switchboard.admin.v1.AdminService/MintCredential":   tenantAdmin,
	"/switchboard.admin.v1.AdminService/ListCredentials":  tenantAdmin,
	"/switchboard.admin.v1.AdminService/RevokeCredential": tenantAdmin,

	// Endpoint secret rotation, like the other endpoint RPCs.
	"/switchboard.admin.v1.AdminService/AddEndpointSecret":    tenantAdmin,
	"/switchboard.admin.v1.AdminService/RemoveEndpointSecret": tenantAdmin,
}

// RuleFor returns the rule for a full method name ("/pkg.Service/Method").
func RuleFor(fullMethod string) (Rule, bool) {
	if r, ok := Policy[fullMethod]; ok {
		return r, true
	}
	service, _, ok := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if ok && slices.Contains(openServices, service) {
		return open, true
	}
	return Rule{}, false
}
