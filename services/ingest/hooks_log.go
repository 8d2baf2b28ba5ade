package ingest

import (
	"errors"
	"net/http"

	"github.com/switchboard/switchboard/services/ingest/internal/store"
	"github.com/switchboard/switchboard/services/ingest/verify"
)

// The delivery log's outcomes, as stored (endpoint_deliveries.outcome); the
// contract's DeliveryOutcome names them in capitals (deliveries.go).
const (
	outcomeAccepted    = "accepted"
	outcomeDuplicate   = "duplicate"
	outcomeHandshake   = "handshake"
	outcomeSignature   = "rejected_signature"
	outcomeTimestamp   = "rejected_timestamp"
	outcomeTooLarge    = "rejected_too_large"
	outcomeDisabled    = "rejected_disabled"
	outcomeRateLimited = "rejected_rate_limited"
	outcomeOther       = "rejected_other"
	outcomeUnavailable = "unavailable"
)

// logEntry is what the edge learnt of a delivery for its endpoint's log.
type logEntry struct {
	outcome    string
	limited    bool // before verification: recorded through the refusal limit
	detail     string
	eventID    int64
	deliveryID string
	topic      string
	size       int64
}

// refuse notes a delivery refused (or a handshake answered) before any
// verification passed: logged through the per-endpoint refusal limit.
func (d *delivery) refuse(ep *hookEndpoint, outcome, detail string) {
	d.ep = ep
	d.entry.outcome, d.entry.detail, d.entry.limited = outcome, detail, true
}

// refuseBody notes a body that could not be read (readBody's status); the
// size is the one the sender announced, if any.
func (d *delivery) refuseBody(ep *hookEndpoint, status int, announced int64) {
	switch status {
	case http.StatusRequestEntityTooLarge:
		d.refuse(ep, outcomeTooLarge, "the body is over the endpoint's cap")
	case http.StatusRequestTimeout:
		d.refuse(ep, outcomeOther, "the body was not received in time")
	default:
		d.refuse(ep, outcomeOther, "the body could not be read")
	}
	d.entry.size = max(announced, 0)
}

// refuseUnverified notes a failed verification: a stale timestamp or a bad
// signature, with the verifier's short reason.
func (d *delivery) refuseUnverified(ep *hookEndpoint, err error) {
	outcome := outcomeSignature
	if errors.Is(err, verify.ErrTimestamp) {
		outcome = outcomeTimestamp
	}
	reason := verify.Reason(err)
	if reason == "" {
		reason = "not verified"
	}
	d.refuse(ep, outcome, reason)
}

// verified notes the end of a verified delivery: stored (accepted or
// duplicate, by st), or refused after verification (outcome other than
// accepted).
func (d *delivery) verified(ep *hookEndpoint, outcome string, ev store.Event, st store.Stored, detail string) {
	d.ep = ep
	if outcome == outcomeAccepted && st.Duplicate {
		outcome = outcomeDuplicate
	}
	d.entry = logEntry{outcome: outcome, detail: detail, eventID: st.EventID, deliveryID: ev.DeliveryID, topic: ev.Topic, size: d.entry.size}
}

// logDelivery hands the delivery to the endpoint's log, if it has an
// endpoint and an outcome. It never blocks the answer (already written).
func (s *Server) logDelivery(d *delivery) {
	if d.ep == nil || d.entry.outcome == "" {
		return
	}
	status := d.status
	if status == 0 {
		status = http.StatusOK
	}
	e := d.entry
	row := store.Delivery{
		EndpointID: d.ep.ID, HumanID: d.ep.HumanID, ReceivedAt: d.received, Outcome: e.outcome,
		HTTPStatus: int32(status), EventID: e.eventID, DeliveryID: e.deliveryID, Topic: e.topic, //nolint:gosec // an HTTP status
		Detail: e.detail, SizeBytes: e.size,
	}
	if e.limited {
		s.deliveries.refused(row)
		return
	}
	s.deliveries.accepted(row)
}
