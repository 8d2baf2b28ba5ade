package auth

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
)

// Scope names what a credential may do. See policy.go for which RPCs each
// allows and docs/access.md for the model.
type Scope string

// The scopes. admin implies every other scope within the tenant.
const (
	// ScopeAdmin: everything in the tenant — agents, credentials, endpoints,
	// adapters, enqueue, claim and ack (any of the tenant's todos), redrive,
	// cancel. On an administrator human's credential it also reaches across
	// tenants (humans, settings, the cluster) and may name the tenant a call
	// acts in (TenantHeader).
	ScopeAdmin Scope = "admin"
	// ScopeAgent: work as an agent — claim, heartbeat, complete, fail and
	// release its own todos, enqueue follow-up todos, list the todos it can
	// see and its queues' stats, read its own events, subscribe to its
	// channels. Only on a credential minted for an agent.
	ScopeAgent Scope = "agent"
	// ScopePublisher: put work in — enqueue todos, publish events and
	// realtime messages.
	ScopePublisher Scope = "publisher"
	// ScopeRead: read the tenant's todos, event history and queue stats.
	ScopeRead Scope = "read"
)

// AllScopes lists every scope, in a stable order.
var AllScopes = []Scope{ScopeAdmin, ScopeAgent, ScopePublisher, ScopeRead}

// ParseScopes validates scope names (as stored or as requested).
func ParseScopes(names []string) ([]Scope, error) {
	out := make([]Scope, 0, len(names))
	for _, n := range names {
		s := Scope(n)
		if !slices.Contains(AllScopes, s) {
			return nil, fmt.Errorf("unknown scope %q (known: admin, agent, publisher, read)", n)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// Principal is who a verified credential stands for.
//
// The tenant boundary is the human: every tenant-owned row carries human_id
// and every store query filters by the principal's HumanID in SQL. A
// credential minted for an agent also carries AgentID, and agent-level reads
// and writes (claims, its events) filter by it too.
type Principal struct {
	CredentialID uuid.UUID
	// HumanID is the tenant.
	HumanID uuid.UUID
	// AgentID is set when the credential acts as an agent.
	AgentID *uuid.UUID
	Scopes  []Scope
	// Administrator is true for an admin-scoped credential of a human with
	// humans.is_admin: it may act on every tenant.
	Administrator bool
}

// Has reports whether the principal holds scope; admin implies every scope:
// it is everything in the tenant. (A human's admin credential doing agent
// work acts for no agent, so it reaches all of the tenant's todos; an agent
// credential can never hold admin, see agentScopes.)
func (p Principal) Has(s Scope) bool {
	return slices.Contains(p.Scopes, s) || slices.Contains(p.Scopes, ScopeAdmin)
}

// CanActFor reports whether the principal may act on humanID's resources:
// its own tenant, or any tenant for an administrator.
func (p Principal) CanActFor(humanID uuid.UUID) bool {
	return p.Administrator || p.HumanID == humanID
}

type principalKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal the auth interceptor verified. ok is
// false on open methods (health, reflection) and in code not behind it.
func FromContext(ctx context.Context) (p Principal, ok bool) {
	p, ok = ctx.Value(principalKey{}).(Principal)
	return p, ok
}
