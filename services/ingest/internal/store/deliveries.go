package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/postgres"
	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
)

// Delivery is one webhook delivery as its endpoint's log keeps it (table
// endpoint_deliveries, a ring of the last 100 per endpoint).
type Delivery struct {
	EndpointID, HumanID uuid.UUID
	ReceivedAt          time.Time
	// Outcome is the log's word for it ("accepted", "rejected_signature",
	// …): the ingest service maps it to the contract's enum.
	Outcome    string
	HTTPStatus int32
	EventID    int64 // 0: none
	DeliveryID string
	Topic      string
	Detail     string
	SizeBytes  int64
	// DroppedBefore counts the refusals not logged one by one just before it.
	DroppedBefore int32
}

// RecordDeliveries appends ds to their endpoints' rings in one statement.
// Deliveries of endpoints deleted meanwhile are left out. It sorts ds by
// endpoint (stably, so each endpoint's keep their order): the counters'
// lock order, which keeps two nodes' batches from deadlocking.
func (s *Store) RecordDeliveries(ctx context.Context, ds []Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	slices.SortStableFunc(ds, func(a, b Delivery) int { return slices.Compare(a.EndpointID[:], b.EndpointID[:]) })
	p := dbsqlc.DeliveriesRecordParams{
		EndpointIds: make([]uuid.UUID, len(ds)), HumanIds: make([]uuid.UUID, len(ds)), ReceivedAts: make([]time.Time, len(ds)),
		Outcomes: make([]string, len(ds)), HttpStatuses: make([]int32, len(ds)), EventIds: make([]int64, len(ds)),
		DeliveryIds: make([]string, len(ds)), Topics: make([]string, len(ds)), Details: make([]string, len(ds)),
		Sizes: make([]int64, len(ds)), Dropped: make([]int32, len(ds)),
	}
	for i, d := range ds {
		p.EndpointIds[i], p.HumanIds[i], p.ReceivedAts[i] = d.EndpointID, d.HumanID, d.ReceivedAt
		p.Outcomes[i], p.HttpStatuses[i], p.EventIds[i] = d.Outcome, d.HTTPStatus, d.EventID
		p.DeliveryIds[i], p.Topics[i], p.Details[i] = d.DeliveryID, d.Topic, d.Detail
		p.Sizes[i], p.Dropped[i] = d.SizeBytes, d.DroppedBefore
	}
	// Sorted, two batches cannot deadlock in practice; a serialization or
	// deadlock failure is still retried, as every multi-row write here is.
	err := postgres.RetryConflicts(ctx, func() error { _, err := s.q.DeliveriesRecord(ctx, s.pool, p); return err })
	if err != nil {
		return fmt.Errorf("record deliveries: %w", err)
	}
	return nil
}

// LoggedDelivery is one row of an endpoint's delivery log.
type LoggedDelivery = dbsqlc.DeliveryListRow

// ListDeliveries returns up to limit of the endpoint's logged deliveries,
// newest first; found is false when the endpoint is not the tenant's (or
// does not exist).
func (s *Store) ListDeliveries(ctx context.Context, human, endpoint uuid.UUID, limit int32) (rows []LoggedDelivery, found bool, err error) {
	ok, err := s.q.EndpointOfHuman(ctx, s.pool, dbsqlc.EndpointOfHumanParams{EndpointID: endpoint, HumanID: human})
	if err != nil || !ok {
		return nil, false, wrapErr("endpoint lookup", err)
	}
	rows, err = s.q.DeliveryList(ctx, s.pool, dbsqlc.DeliveryListParams{EndpointID: endpoint, HumanID: human, PageSize: limit})
	if err != nil {
		return nil, true, fmt.Errorf("list deliveries: %w", err)
	}
	return rows, true, nil
}

// wrapErr names op in err; nil stays nil.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, err)
}
