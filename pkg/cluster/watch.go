package cluster

import (
	"bytes"
	"context"
	"time"
)

// EventType says how membership changed.
type EventType int

// Event types, in the order a watcher first sees them.
const (
	Joined  EventType = iota + 1 // a node appeared (or is part of the initial snapshot)
	Synced                       // the initial snapshot is complete
	Updated                      // a node heartbeat: new heartbeat time and stats
	Left                         // a node deregistered or was swept
)

// Event is one membership change. Node is empty for Synced.
type Event struct {
	Type EventType
	Node Node
}

// Watch sends the current membership (one Joined per node, then Synced) and
// then every change it observes, polling node_registry every interval, until
// ctx is done or send fails. Polling keeps it correct without listen/notify;
// clients of the stream never poll.
func (s *Store) Watch(ctx context.Context, interval time.Duration, send func(Event) error) error {
	known := map[string]Node{}
	nodes, err := s.List(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		known[n.NodeID] = n
		if err := send(Event{Type: Joined, Node: n}); err != nil {
			return err
		}
	}
	if err := send(Event{Type: Synced}); err != nil {
		return err
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		nodes, err := s.List(ctx)
		if err != nil {
			return err
		}
		if err := diff(known, nodes, send); err != nil {
			return err
		}
	}
}

// diff sends what changed between known and now, in seq order, then leaves,
// and updates known in place.
func diff(known map[string]Node, now []Node, send func(Event) error) error {
	seen := make(map[string]bool, len(now))
	for _, n := range now {
		seen[n.NodeID] = true
		old, ok := known[n.NodeID]
		known[n.NodeID] = n
		switch {
		case !ok || old.Seq != n.Seq: // a new seq is a re-registration: a new member
			if err := send(Event{Type: Joined, Node: n}); err != nil {
				return err
			}
		case !old.Heartbeat.Equal(n.Heartbeat) || old.Endpoint != n.Endpoint || !bytes.Equal(old.raw, n.raw):
			if err := send(Event{Type: Updated, Node: n}); err != nil {
				return err
			}
		}
	}
	for id, n := range known {
		if seen[id] {
			continue
		}
		delete(known, id)
		if err := send(Event{Type: Left, Node: n}); err != nil {
			return err
		}
	}
	return nil
}
