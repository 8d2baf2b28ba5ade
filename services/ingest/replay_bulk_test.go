//go:build integration

package ingest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
)

// TestReplayEventsByFilterInPagesSkippingPruned: a bulk replay takes the
// filter's events oldest first, limit at a time, continues from its
// cursor, skips and counts pruned events, and is idempotent under a key.
func TestReplayEventsByFilterInPagesSkippingPruned(t *testing.T) {
	t.Parallel()
	e := newReplayEnv(t)
	ctx := asHuman(t, e.human, nil)
	slug := e.endpoint(t, "none", nil, "")
	var ids []int64
	for i := range 4 {
		code, resp := e.post(t, slug, []byte(fmt.Sprintf(`{"n":%d}`, i)), nil)
		require.Equal(t, http.StatusOK, code, resp)
	}
	rows, err := e.pool.Query(t.Context(), `SELECT e.id FROM events AS e JOIN endpoints AS p ON p.id = e.endpoint_id WHERE p.slug = $1 ORDER BY e.id`, slug)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, ids, 4)
	e.prune(t, ids[1])
	otherEndpoint, _ := e.hook(t, "", `{"elsewhere":true}`)
	var endpoint string
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT id::text FROM endpoints WHERE slug = $1`, slug).Scan(&endpoint))

	page := func(after int64, limit int32, key string) *ingestv1.ReplayEventsResponse {
		t.Helper()
		res, err := e.srv.ReplayEvents(ctx, &ingestv1.ReplayEventsRequest{EndpointId: endpoint, AfterId: after, Limit: limit, ReplayKey: key})
		require.NoError(t, err)
		return res
	}
	first := page(0, 2, "")
	require.Equal(t, &ingestv1.ReplayEventsResponse{Replayed: 1, SkippedPruned: 1, LastEventId: ids[1], More: true}, stripped(first))
	second := page(first.GetLastEventId(), 2, "")
	require.Equal(t, &ingestv1.ReplayEventsResponse{Replayed: 2, LastEventId: ids[3], More: true}, stripped(second))
	last := page(second.GetLastEventId(), 2, "")
	require.Equal(t, &ingestv1.ReplayEventsResponse{}, stripped(last), "nothing left")
	require.Zero(t, e.count(t, fmt.Sprintf(`SELECT replay_count FROM events WHERE human_id = $1 AND id = %d`, otherEndpoint)), "another endpoint's event")
	require.Zero(t, e.count(t, fmt.Sprintf(`SELECT replay_count FROM events WHERE human_id = $1 AND id = %d`, ids[1])), "the pruned one")
	var replays int
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT count(*) FROM todos WHERE event_id = ANY ($1)`, ids).Scan(&replays))
	require.Equal(t, 4+3, replays, "each event's first todo, and one replay of each but the pruned")

	// Under a key, the whole range once; its retry writes nothing.
	keyed := page(0, 1000, "fix-42")
	require.Equal(t, &ingestv1.ReplayEventsResponse{Replayed: 3, SkippedPruned: 1, LastEventId: ids[3]}, stripped(keyed))
	before := e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`)
	retry := page(0, 1000, "fix-42")
	require.Equal(t, &ingestv1.ReplayEventsResponse{AlreadyReplayed: 3, SkippedPruned: 1, LastEventId: ids[3]}, stripped(retry))
	require.Equal(t, before, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`))
	require.Equal(t, 2, e.count(t, fmt.Sprintf(`SELECT replay_count FROM events WHERE human_id = $1 AND id = %d`, ids[0])))
}

// stripped is r without its counters' noise: a copy to compare whole.
func stripped(r *ingestv1.ReplayEventsResponse) *ingestv1.ReplayEventsResponse {
	return &ingestv1.ReplayEventsResponse{
		Replayed: r.GetReplayed(), AlreadyReplayed: r.GetAlreadyReplayed(), SkippedPruned: r.GetSkippedPruned(),
		SkippedNoTarget: r.GetSkippedNoTarget(), LastEventId: r.GetLastEventId(), More: r.GetMore(),
	}
}

// TestReplayEventsByTopicAndTime: topic and time filters, events without a
// target skipped unless a queue is named, and the request's bounds.
func TestReplayEventsByTopicAndTime(t *testing.T) {
	t.Parallel()
	e := newReplayEnv(t)
	ctx := asHuman(t, e.human, nil)
	publish := func(topic, queue string) int64 {
		res, err := e.srv.PublishEvent(ctx, &ingestv1.PublishEventRequest{Topic: topic, Queue: queue})
		require.NoError(t, err)
		return res.GetEvent().GetId()
	}
	publish("order.paid", "orders")
	publish("order.paid", "")
	publish("order.refunded", "orders")
	lastPaid := publish("order.paid", "orders")

	res, err := e.srv.ReplayEvents(ctx, &ingestv1.ReplayEventsRequest{Topic: "order.paid", Limit: 10})
	require.NoError(t, err)
	require.Equal(t, &ingestv1.ReplayEventsResponse{Replayed: 2, SkippedNoTarget: 1, LastEventId: lastPaid}, stripped(res))
	res, err = e.srv.ReplayEvents(ctx, &ingestv1.ReplayEventsRequest{Topic: "order.paid", Limit: 10, Queue: "triage"})
	require.NoError(t, err)
	require.EqualValues(t, 3, res.GetReplayed())
	require.Equal(t, 3, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND queue = 'triage' AND kind = 'order.paid'`))

	future := timestamppb.New(time.Now().Add(time.Hour))
	res, err = e.srv.ReplayEvents(ctx, &ingestv1.ReplayEventsRequest{ReceivedAfter: future, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, &ingestv1.ReplayEventsResponse{}, stripped(res))
	res, err = e.srv.ReplayEvents(ctx, &ingestv1.ReplayEventsRequest{ReceivedBefore: future, Topic: "order.refunded", Limit: 10})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.GetReplayed())

	for field, req := range map[string]*ingestv1.ReplayEventsRequest{
		"limit":          {},
		"after_id":       {Limit: 1, AfterId: -1},
		"endpoint_id":    {Limit: 1, EndpointId: "nope"},
		"received_after": {Limit: 1, ReceivedAfter: future, ReceivedBefore: timestamppb.Now()},
		"queue":          {Limit: 1, Queue: "-bad"},
	} {
		_, err := e.srv.ReplayEvents(ctx, req)
		require.Equal(t, codes.InvalidArgument, code(err), field)
		require.Equal(t, []string{field}, fieldsOf(err), field)
	}
	res, err = e.srv.ReplayEvents(ctx, &ingestv1.ReplayEventsRequest{Limit: 1001})
	require.Equal(t, codes.InvalidArgument, code(err), "limit above 1000")
	require.Nil(t, res)
}

// TestReplayOverREST: the routes work through the node's gateway.
func TestReplayOverREST(t *testing.T) {
	t.Parallel()
	g := startNode(t)
	status, body := g.rest(t, "/api/events", `{"topic":"build.finished","queue":"builds"}`)
	require.Equal(t, http.StatusOK, status, body)
	var pub struct {
		Event struct {
			ID string `json:"id"`
		} `json:"event"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &pub))

	status, body = g.rest(t, "/api/events/"+pub.Event.ID+":replay", `{"replay_key":"r1"}`)
	require.Equal(t, http.StatusOK, status, body)
	var one struct {
		Event struct {
			ReplayCount int `json:"replay_count"`
		} `json:"event"`
		Todos []struct {
			Queue string `json:"queue"`
		} `json:"todos"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &one))
	require.Equal(t, 1, one.Event.ReplayCount)
	require.Len(t, one.Todos, 1)
	require.Equal(t, "builds", one.Todos[0].Queue)

	status, body = g.rest(t, "/api/events:replay", `{"limit":5,"queue":"triage"}`)
	require.Equal(t, http.StatusOK, status, body)
	require.JSONEq(t, `{"replayed":1,"already_replayed":0,"skipped_pruned":0,"skipped_no_target":0,"last_event_id":"`+pub.Event.ID+`","more":false}`, body)

	status, body = g.rest(t, "/api/events:replay", `{"limit":0}`)
	require.Equal(t, http.StatusBadRequest, status, body)
	var refused struct {
		Details []struct {
			FieldViolations []struct {
				Field string `json:"field"`
			} `json:"field_violations"`
		} `json:"details"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &refused))
	require.Len(t, refused.Details, 1)
	require.Len(t, refused.Details[0].FieldViolations, 1)
	require.Equal(t, "limit", refused.Details[0].FieldViolations[0].Field)
	require.Equal(t, 3, g.todos(t), "the original and two replays")
}

// TestReplayEventsCrossesChunks: more events than one transaction takes
// are all replayed, and limit stops it exactly.
func TestReplayEventsCrossesChunks(t *testing.T) {
	t.Parallel()
	e := newReplayEnv(t)
	ctx := asHuman(t, e.human, nil)
	var last int64
	for range 230 {
		res, err := e.srv.PublishEvent(ctx, &ingestv1.PublishEventRequest{Topic: "tick", Queue: "ticks"})
		require.NoError(t, err)
		last = res.GetEvent().GetId()
	}
	part, err := e.srv.ReplayEvents(ctx, &ingestv1.ReplayEventsRequest{Limit: 150})
	require.NoError(t, err)
	require.EqualValues(t, 150, part.GetReplayed())
	require.True(t, part.GetMore())
	rest, err := e.srv.ReplayEvents(ctx, &ingestv1.ReplayEventsRequest{Limit: 1000, AfterId: part.GetLastEventId()})
	require.NoError(t, err)
	require.Equal(t, &ingestv1.ReplayEventsResponse{Replayed: 80, LastEventId: last}, stripped(rest))
	require.Equal(t, 230, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1 AND replay_count = 1`))
	require.Equal(t, 460, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND queue = 'ticks'`))
}
