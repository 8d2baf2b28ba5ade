package realtime

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/timestamppb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/services/realtime/internal/store"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// Presence event kinds, sent as ephemeral events on the channel itself.
const (
	KindPresenceJoin  = "presence.join"
	KindPresenceLeave = "presence.leave"
)

// presenceTimeout bounds the presence writes of one subscribe or leave.
const presenceTimeout = 5 * time.Second

// Presence lists the channel's members across the cluster.
func (s *Server) Presence(ctx context.Context, req *realtimev1.PresenceRequest) (*realtimev1.PresenceResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if !channelName.MatchString(req.GetChannel()) {
		return nil, invalid("channel", "must match ^[A-Za-z0-9][A-Za-z0-9:._/-]{0,127}$")
	}
	rows, err := s.store.Presence(ctx, c.human, req.GetChannel())
	if err != nil {
		return nil, err
	}
	out := &realtimev1.PresenceResponse{Members: make([]*realtimev1.PresenceMember, len(rows))}
	for i, r := range rows {
		out.Members[i] = &realtimev1.PresenceMember{Member: r.Member, Streams: r.Streams, NodeIds: r.NodeIds, JoinedAt: timestamppb.New(r.JoinedAt)}
	}
	return out, nil
}

// joined records sub's presence and announces it. A failed write is logged,
// not fatal: live delivery does not need it, and presenceLoop re-inserts
// the rows of every live subscriber it finds missing.
func (s *Server) joined(ctx context.Context, sub *subscriber) {
	m := store.Member{SubscriptionID: sub.id, NodeID: s.opts.NodeID, HumanID: sub.human, Member: sub.member, JoinedAt: time.Now(), Channels: sub.channels}
	s.presence.add(m)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), presenceTimeout)
	defer cancel()
	if err := s.store.Join(wctx, m); err != nil {
		s.log.Warn("presence join not recorded; will retry", zap.Error(err))
	}
	for _, ch := range sub.channels {
		s.announcePresence(KindPresenceJoin, sub.human, ch, sub.member, s.opts.NodeID)
	}
}

// left removes sub's presence and announces it.
func (s *Server) left(sub *subscriber) {
	s.presence.remove(sub.id)
	ctx, cancel := context.WithTimeout(context.Background(), presenceTimeout)
	defer cancel()
	if err := s.store.Leave(ctx, sub.id); err != nil {
		s.log.Warn("presence leave not recorded; the node's rows go when it does", zap.Error(err))
	}
	for _, ch := range sub.channels {
		s.announcePresence(KindPresenceLeave, sub.human, ch, sub.member, s.opts.NodeID)
	}
}

// announcePresence publishes a join or leave as an ephemeral event.
func (s *Server) announcePresence(kind string, human uuid.UUID, channel, member, node string) {
	p, _ := json.Marshal(map[string]string{"member": member, "node_id": node}) //nolint:errchkjson // strings only
	e := wire.Ephemeral{Origin: s.opts.NodeID, HumanID: human, Channel: channel, Kind: kind, Payload: p, PublishedBy: "node:" + s.opts.NodeID, CreatedAt: time.Now()}
	if err := s.publishEphemeral(e, nil); err != nil {
		s.log.Debug("presence event not sent", zap.Error(err))
	}
}

// presenceSet is this node's live presence, by subscription, for
// re-inserting rows that a Postgres crash (UNLOGGED table) or a failed write
// lost.
type presenceSet struct {
	mu sync.Mutex
	m  map[uuid.UUID]store.Member
}

func (p *presenceSet) add(m store.Member) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[uuid.UUID]store.Member{}
	}
	p.m[m.SubscriptionID] = m
}

func (p *presenceSet) remove(subscription uuid.UUID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, subscription)
}

// snapshot returns the number of presence rows the live set should have,
// and a copy of it.
func (p *presenceSet) snapshot() (int64, []store.Member) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	out := make([]store.Member, 0, len(p.m))
	for _, m := range p.m {
		n += int64(len(m.Channels))
		out = append(out, m)
	}
	return n, out
}

func (p *presenceSet) has(subscription uuid.UUID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.m[subscription]
	return ok
}

// presenceTick, every Options.PresenceInterval: removes (and announces the
// leave of) the members of nodes the registry no longer lists, re-inserts
// this node's rows if some are missing, and refreshes which system channels
// have listeners anywhere.
func (s *Server) presenceTick(ctx context.Context) {
	gone, err := s.store.SweepPresence(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("presence sweep failed", zap.Error(err))
		}
		return
	}
	for _, d := range gone {
		s.announcePresence(KindPresenceLeave, d.HumanID, d.Channel, d.Member, d.NodeID)
	}
	want, members := s.presence.snapshot()
	if have, err := s.store.PresenceRows(ctx, s.opts.NodeID); err == nil && have < want {
		for _, m := range members {
			if err := s.store.Join(ctx, m); err != nil {
				s.log.Warn("presence re-insert failed", zap.Error(err))
				return
			}
			if !s.presence.has(m.SubscriptionID) { // it left meanwhile: undo
				_ = s.store.Leave(ctx, m.SubscriptionID)
			}
		}
	}
	s.refreshListened(ctx)
}
