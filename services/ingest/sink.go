package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
	"github.com/switchboard/switchboard/services/ingest/internal/store"
)

// AdapterTarget is one pull adapter's row: whose events its messages
// become and where their todos go.
type AdapterTarget struct {
	ID      uuid.UUID
	HumanID uuid.UUID
	Queue   string
	AgentID *uuid.UUID
}

// sink is the adapter.Sink that stores an adapter's messages as events
// (source "adapter:<id>", delivery id = the message's id in its source, so
// a message read again after a crash stores nothing new) with their todos,
// one statement per batch.
type sink struct {
	s      *Server
	target AdapterTarget
}

// AdapterSink returns the Sink a pull adapter for t stores through. The
// adapter must use t.ID (as a string) as its id.
func (s *Server) AdapterSink(t AdapterTarget) adapter.Sink { return sink{s: s, target: t} }

// Store implements adapter.Sink.
func (k sink) Store(ctx context.Context, adapterID string, msgs []adapter.Message) error {
	if adapterID != k.target.ID.String() {
		return fmt.Errorf("ingest: sink of adapter %s asked to store for %q", k.target.ID, adapterID)
	}
	if len(msgs) == 0 {
		return nil
	}
	events := make([]store.Event, len(msgs))
	for i, m := range msgs {
		events[i] = store.Event{
			HumanID: k.target.HumanID, Source: "adapter:" + k.target.ID.String(), AdapterID: &k.target.ID,
			AgentID: k.target.AgentID, DeliveryID: m.SourceID, Headers: m.Headers, ContentType: m.ContentType, Payload: m.Body,
		}
	}
	res, err := k.s.store.Ingest(ctx, events, store.Target{Queue: k.target.Queue, AgentID: k.target.AgentID, Kind: "adapter"})
	if err != nil {
		if !apierr.IsDataError(err) {
			// The database, not the messages: retry with backoff, never
			// dead-letter for it.
			err = fmt.Errorf("%w: %w", adapter.ErrSinkUnavailable, err)
		}
		return err
	}
	for i, r := range res {
		k.s.received(events[i], r)
	}
	if at := msgs[len(msgs)-1].At; !at.IsZero() {
		k.s.opts.Metrics.IngestSeries().AdapterLag(adapterID, time.Since(at).Seconds())
	}
	return nil
}
