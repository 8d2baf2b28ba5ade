package ingest

import (
	"context"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
)

// ListDeliveries page sizes: "0–100; 0 means 50" (the ring holds 100).
const (
	defaultDeliveriesPage = 50
	maxDeliveriesPage     = 100
)

// deliveryOutcomes maps the log's stored words to the contract's enum.
var deliveryOutcomes = map[string]ingestv1.DeliveryOutcome{
	outcomeAccepted:    ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_ACCEPTED,
	outcomeDuplicate:   ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_DUPLICATE,
	outcomeHandshake:   ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_HANDSHAKE,
	outcomeSignature:   ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_REJECTED_SIGNATURE,
	outcomeTimestamp:   ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_REJECTED_TIMESTAMP,
	outcomeTooLarge:    ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_REJECTED_TOO_LARGE,
	outcomeDisabled:    ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_REJECTED_DISABLED,
	outcomeRateLimited: ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_REJECTED_RATE_LIMITED,
	outcomeOther:       ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_REJECTED_OTHER,
	outcomeUnavailable: ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_UNAVAILABLE,
}

// ListDeliveries lists an endpoint's most recent deliveries, newest first.
// Whoever may read the endpoint may read its log (the policy is
// GetEndpoint's); another tenant's endpoint is NOT_FOUND, in SQL.
func (s *Server) ListDeliveries(ctx context.Context, req *ingestv1.ListDeliveriesRequest) (*ingestv1.ListDeliveriesResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	endpoint, err := uuid.Parse(req.GetEndpointId())
	if err != nil {
		return nil, apierr.Invalid(apierr.FieldViolation{Field: "endpoint_id", Description: "must be a uuid"})
	}
	limit := req.GetPageSize()
	switch {
	case limit == 0:
		limit = defaultDeliveriesPage
	case limit < 0 || limit > maxDeliveriesPage:
		return nil, apierr.Invalid(apierr.FieldViolation{Field: "page_size", Description: "must be between 0 and 100"})
	}
	rows, found, err := s.store.ListDeliveries(ctx, p.HumanID, endpoint, limit)
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, apierr.NotFound("endpoint %s not found", endpoint)
	}
	out := &ingestv1.ListDeliveriesResponse{Deliveries: make([]*ingestv1.Delivery, len(rows))}
	for i, r := range rows {
		d := &ingestv1.Delivery{
			ReceivedAt: timestamppb.New(r.ReceivedAt), Outcome: deliveryOutcomes[r.Outcome], HttpStatus: r.HttpStatus,
			DeliveryId: r.DeliveryID, Topic: r.Topic, Detail: r.Detail, SizeBytes: r.SizeBytes, DroppedBefore: r.DroppedBefore,
		}
		if r.EventID != nil {
			d.EventId = *r.EventID
		}
		out.Deliveries[i] = d
	}
	return out, nil
}
