package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/realtime/internal/store"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// System channels: the services publish their lifecycle events on them as
// ephemeral events, so dashboards can go live:
//
//	sys:queue:<queue>   todo.enqueued, todo.claimed, todo.completed, todo.failed,
//	                    todo.released, todo.cancelled, todo.expired, todo.redriven,
//	                    todo.retried, todo.progress
//	                    (payload: todo_id, queue, state, agent_id; todo.progress
//	                    adds progress, the worker's JSON object, and progress_at);
//	                    queue.paused, queue.resumed (payload: queue, state =
//	                    paused or running)
//	sys:todo:<id>       todo.progress of that one todo (same payload), for a
//	                    page that follows a single todo
//	sys:ingest          event.received (payload: event_id, source, topic, todo_id)
//
// Like every channel they are the tenant's own: a subscription names a
// channel within its credential's human, so another tenant's sys:todo:<id>
// is a different channel that nothing is ever published on.
//
// They are only published where someone listens (a subscriber on this node,
// or a presence row anywhere, refreshed every Options.PresenceInterval), so
// a queue moving 40k todos a second with nobody watching pays two map
// lookups per change, allocates nothing and sends nothing.
const (
	QueueChannelPrefix = SystemPrefix + "queue:"
	TodoChannelPrefix  = SystemPrefix + "todo:"
	IngestChannel      = SystemPrefix + "ingest"
)

// listenedSet is the cluster-wide set of system channels with a subscriber.
type listenedSet struct {
	mu sync.RWMutex
	m  map[channelKey]struct{}
}

func (l *listenedSet) has(k channelKey) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	_, ok := l.m[k]
	return ok
}

func (s *Server) refreshListened(ctx context.Context) { s.listened.refresh(ctx, s.log, s.store) }

// refresh replaces the set with the system channels that have a presence
// row anywhere; when Postgres cannot answer, the set stays as it was.
func (l *listenedSet) refresh(ctx context.Context, log *zap.Logger, st *store.Store) {
	rows, err := st.ListenedChannels(ctx, SystemPrefix)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("could not read the listened system channels", zap.Error(err))
		}
		return
	}
	m := make(map[channelKey]struct{}, len(rows))
	for _, r := range rows {
		m[channelKey{r.HumanID, r.Channel}] = struct{}{}
	}
	l.mu.Lock()
	l.m = m
	l.mu.Unlock()
}

// memberAgentPrefix starts the member name of a subscriber whose credential
// acts as an agent.
const memberAgentPrefix = "agent:"

// AgentMember is the member name of a credential acting as agent.
func AgentMember(agent uuid.UUID) string { return memberAgentPrefix + agent.String() }

// System publishes a service's lifecycle event (kind, payload fields) on a
// system channel of human, if anyone listens; fields is only called then, so
// an unwatched channel costs no allocation. It never blocks and never fails
// the caller: lifecycle events are ephemeral, best effort. kind must be in a
// namespace reserved for the services (ReservedKindPrefixes); any other is
// not sent.
//
// agent is the agent the event is about (a todo's or an event's agent_id),
// nil for the tenant's shared work: an agent's credential receives only
// events about its own work and the shared ones, exactly what it may read
// with GetTodo and GetEvent; the tenant's own credentials receive all.
func (s *Server) System(human uuid.UUID, agent *uuid.UUID, channel, kind string, fields func() map[string]any) {
	k := channelKey{human, channel}
	if !s.hub.listening(k) && !s.listened.has(k) {
		return
	}
	e, err := systemEvent(s.opts.NodeID, human, agent, channel, kind, fields)
	if err != nil {
		logUnsent(s.log, channel, kind, err)
		return
	}
	if err := s.publishEphemeral(e, nil); err != nil {
		s.log.Debug("lifecycle event not sent", zap.String("channel", channel), zap.Error(err))
	}
}

// errUnreservedKind is a lifecycle event whose kind a client could publish
// too (kinds.go): a bug of the service that sends it.
var errUnreservedKind = errors.New("a lifecycle event's kind must be in a reserved namespace (" +
	strings.Join(ReservedKindPrefixes, ", ") + ")")

// systemEvent is the envelope of a lifecycle event that node publishes (the
// same from a Server and from a SystemPublisher, so subscribers cannot tell
// them apart); an error if the fields cannot be encoded or the kind is not
// reserved for the services (clients could then forge it).
func systemEvent(node string, human uuid.UUID, agent *uuid.UUID, channel, kind string, fields func() map[string]any) (wire.Ephemeral, error) {
	if !ReservedKind(kind) {
		return wire.Ephemeral{}, errUnreservedKind
	}
	p, err := json.Marshal(fields())
	if err != nil {
		return wire.Ephemeral{}, fmt.Errorf("encode lifecycle event: %w", err)
	}
	e := wire.Ephemeral{Origin: node, HumanID: human, Channel: channel, Kind: kind, Payload: p, PublishedBy: "node:" + node, CreatedAt: time.Now()}
	if agent != nil {
		e.Audience = AgentMember(*agent)
	}
	return e, nil
}

// logUnsent logs a lifecycle event systemEvent refused: loudly for a kind
// outside the reserved namespaces (DPanic: a development build panics), as
// a debug line for fields that do not encode.
func logUnsent(log *zap.Logger, channel, kind string, err error) {
	if errors.Is(err, errUnreservedKind) {
		log.DPanic("lifecycle event not sent", zap.String("channel", channel), zap.String("kind", kind), zap.Error(err))
		return
	}
	log.Debug("lifecycle event not encodable", zap.String("channel", channel), zap.Error(err))
}
