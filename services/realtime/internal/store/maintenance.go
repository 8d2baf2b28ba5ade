package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/services/realtime/internal/store/dbsqlc"
)

// Member is one subscription's presence on its channels.
type Member struct {
	SubscriptionID uuid.UUID
	NodeID         string
	HumanID        uuid.UUID
	Member         string
	JoinedAt       time.Time
	Channels       []string
}

// Join writes m's presence rows (idempotent).
func (s *Store) Join(ctx context.Context, m Member) error {
	err := s.q.PresenceJoin(ctx, s.pool, dbsqlc.PresenceJoinParams{
		SubscriptionID: m.SubscriptionID, NodeID: m.NodeID, HumanID: m.HumanID, Member: m.Member, JoinedAt: m.JoinedAt, Channels: m.Channels,
	})
	if err != nil {
		return fmt.Errorf("presence join: %w", err)
	}
	return nil
}

// Leave removes a subscription's presence rows.
func (s *Store) Leave(ctx context.Context, subscription uuid.UUID) error {
	if err := s.q.PresenceLeave(ctx, s.pool, subscription); err != nil {
		return fmt.Errorf("presence leave: %w", err)
	}
	return nil
}

// PresenceRows is how many presence rows node holds.
func (s *Store) PresenceRows(ctx context.Context, node string) (int64, error) {
	n, err := s.q.PresenceCount(ctx, s.pool, node)
	if err != nil {
		return 0, fmt.Errorf("presence count: %w", err)
	}
	return n, nil
}

// PresenceMember is one member of a channel, cluster-wide.
type PresenceMember = dbsqlc.PresenceListRow

// Presence lists a channel's members.
func (s *Store) Presence(ctx context.Context, human uuid.UUID, channel string) ([]PresenceMember, error) {
	rows, err := s.q.PresenceList(ctx, s.pool, dbsqlc.PresenceListParams{HumanID: human, Channel: channel})
	if err != nil {
		return nil, fmt.Errorf("presence list: %w", err)
	}
	return rows, nil
}

// Departed is a presence row of a node that is gone.
type Departed = dbsqlc.PresenceSweepRow

// SweepPresence deletes and returns the rows of unregistered nodes.
func (s *Store) SweepPresence(ctx context.Context) ([]Departed, error) {
	rows, err := s.q.PresenceSweep(ctx, s.pool)
	if err != nil {
		return nil, fmt.Errorf("presence sweep: %w", err)
	}
	return rows, nil
}

// Listened is a (tenant, channel) with a subscriber somewhere.
type Listened = dbsqlc.ListenedChannelsRow

// ListenedChannels returns the channels starting with prefix that have a
// subscriber anywhere in the cluster.
func (s *Store) ListenedChannels(ctx context.Context, prefix string) ([]Listened, error) {
	rows, err := s.q.ListenedChannels(ctx, s.pool, prefix)
	if err != nil {
		return nil, fmt.Errorf("listened channels: %w", err)
	}
	return rows, nil
}

// ChannelInfo is one channel with a subscriber, cluster-wide.
type ChannelInfo = dbsqlc.ChannelListRow

// Channels lists up to limit of the tenant's channels with a subscriber
// whose name starts with prefix, by name, after after ("" for the first).
func (s *Store) Channels(ctx context.Context, human uuid.UUID, prefix, after string, limit int32) ([]ChannelInfo, error) {
	p := dbsqlc.ChannelListParams{HumanID: human, Prefix: prefix, PageSize: limit}
	if after != "" {
		p.AfterChannel = &after
	}
	rows, err := s.q.ChannelList(ctx, s.pool, p)
	if err != nil {
		return nil, fmt.Errorf("channel list: %w", err)
	}
	return rows, nil
}
