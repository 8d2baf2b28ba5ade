// Package wire is an ephemeral realtime event as it travels between nodes:
// inside a Postgres NOTIFY payload (REALTIME_EPHEMERAL_TRANSPORT=notify) or
// over the node-to-node mesh (=mesh). Durable events never travel this way:
// they are rows in realtime_events, and nodes only learn "new rows up to id N".
package wire

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Ephemeral is one ephemeral event. Field names are short because a NOTIFY
// payload is capped at 8000 bytes and the envelope comes out of the caller's
// share.
type Ephemeral struct {
	// Origin is the publishing node's id; a node ignores its own events
	// coming back (it delivered them locally at publish time).
	Origin      string          `json:"o"`
	HumanID     uuid.UUID       `json:"h"`
	Channel     string          `json:"c"`
	Kind        string          `json:"k,omitempty"`
	Payload     json.RawMessage `json:"p"`
	PublishedBy string          `json:"b"`
	CreatedAt   time.Time       `json:"t"`
	// Audience narrows who receives it: empty is every subscriber of the
	// channel; "agent:<uuid>" is the tenant's own (non-agent) credentials
	// and that agent only (a lifecycle event about that agent's work).
	Audience string `json:"a,omitempty"`
}

// Transport carries ephemeral events to the other nodes of the cluster,
// best effort: a node that is away, or a link that breaks, loses them by
// design. Broadcast must not block the publisher for long; the receiving
// side hands each event from another node to the deliver function it was
// built with.
type Transport interface {
	Broadcast(e Ephemeral)
}
