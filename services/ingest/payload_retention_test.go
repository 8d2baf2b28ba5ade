//go:build integration

package ingest_test

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
)

// payloadRetention sets retention.event_payloads.
func (e replayEnv) payloadRetention(t *testing.T, maxAgeSeconds int) {
	t.Helper()
	_, err := e.pool.Exec(t.Context(), `UPDATE settings SET value = jsonb_build_object('max_age_seconds', $1::integer) WHERE key = 'retention.event_payloads'`, maxAgeSeconds)
	require.NoError(t, err)
}

// finish ends an event's todos, so its payload is no longer read.
func (e replayEnv) finish(t *testing.T, id int64) {
	t.Helper()
	_, err := e.pool.Exec(t.Context(), `UPDATE todos SET state = 'completed', finished_at = now() WHERE event_id = $1`, id)
	require.NoError(t, err)
}

// age makes events look received two days ago.
func (e replayEnv) age(t *testing.T, ids ...int64) {
	t.Helper()
	_, err := e.pool.Exec(t.Context(), `UPDATE events SET received_at = now() - interval '2 days' WHERE id = ANY ($1)`, ids)
	require.NoError(t, err)
}

// TestPayloadRetentionEmptiesOldPayloadsOnly: with retention.event_payloads
// set, the retention pass empties the payload of an old event whose todo is
// done and keeps its row, metadata and size; a recent event and an old one
// whose todo is live keep theirs (until that todo ends). A second pass does
// nothing. The pruned event reads back empty with payload_pruned_at set, and
// replay refuses it (one) or skips and counts it (bulk).
func TestPayloadRetentionEmptiesOldPayloadsOnly(t *testing.T) {
	t.Parallel()
	e := newReplayEnv(t)
	ctx := asHuman(t, e.human, nil)
	slug := e.endpoint(t, "none", nil, "")
	var endpoint string
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT id::text FROM endpoints WHERE slug = $1`, slug).Scan(&endpoint))
	ids := make([]int64, 3)
	for i, body := range []string{`{"old":true}`, `{"live":true}`, `{"recent":true}`} {
		code, resp := e.post(t, slug, []byte(body), nil)
		require.Equal(t, http.StatusOK, code, resp)
		require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT max(id) FROM events WHERE human_id = $1`, e.human).Scan(&ids[i]))
	}
	old, live, recent := ids[0], ids[1], ids[2]
	e.finish(t, old)
	e.finish(t, recent)
	e.age(t, old, live)

	n, err := e.srv.PrunePayloadsOnce(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "the default keeps payloads")

	e.payloadRetention(t, 86400)
	deleted, err := e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	require.Zero(t, deleted, "events themselves stay (retention.events)")

	got, err := e.srv.GetEvent(ctx, &ingestv1.GetEventRequest{Id: old})
	require.NoError(t, err)
	ev := got.GetEvent()
	require.Empty(t, ev.GetPayload())
	require.NotNil(t, ev.GetPayloadPrunedAt())
	require.EqualValues(t, len(`{"old":true}`), ev.GetSizeBytes(), "size_bytes is the size received")
	require.Equal(t, "endpoint:"+endpoint, ev.GetSource())
	require.NotEmpty(t, ev.GetHeaders(), "metadata stays")
	prunedAt := ev.GetPayloadPrunedAt().AsTime()

	list, err := e.srv.ListEvents(ctx, &ingestv1.ListEventsRequest{IncludePayload: true})
	require.NoError(t, err)
	payloads := map[int64]string{}
	for _, ev := range list.GetEvents() {
		payloads[ev.GetId()] = string(ev.GetPayload())
		require.EqualValues(t, len(map[int64]string{old: `{"old":true}`, live: `{"live":true}`, recent: `{"recent":true}`}[ev.GetId()]), ev.GetSizeBytes())
		require.Equal(t, ev.GetId() == old, ev.GetPayloadPrunedAt() != nil, ev.GetId())
	}
	require.Equal(t, map[int64]string{old: "", live: `{"live":true}`, recent: `{"recent":true}`}, payloads)

	n, err = e.srv.PrunePayloadsOnce(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "a second pass finds nothing")
	var again bool
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT payload_pruned_at = $2 FROM events WHERE id = $1`, old, prunedAt).Scan(&again))
	require.True(t, again, "the first mark stays")

	_, err = e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: old})
	require.Equal(t, codes.FailedPrecondition, code(err))
	require.Contains(t, message(err), "payload was pruned")
	bulk, err := e.srv.ReplayEvents(ctx, &ingestv1.ReplayEventsRequest{EndpointId: endpoint, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, &ingestv1.ReplayEventsResponse{Replayed: 2, SkippedPruned: 1, LastEventId: recent}, stripped(bulk))

	// The live event's payload goes once its todos (the first and the
	// replay's) are done.
	e.finish(t, live)
	n, err = e.srv.PrunePayloadsOnce(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Equal(t, 2, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1 AND payload_pruned_at IS NOT NULL AND payload = ''`))
}

// TestPayloadRetentionPassesRunConcurrently: two passes at once (two nodes)
// over more than a batch of due events neither wait on each other nor
// empty a payload twice: their counts add up to the events due, each
// marked once.
func TestPayloadRetentionPassesRunConcurrently(t *testing.T) {
	t.Parallel()
	e := newReplayEnv(t)
	const due = 2500 // two and a half batches
	_, err := e.pool.Exec(t.Context(), `
		INSERT INTO events (human_id, source, payload, size_bytes, received_at)
		SELECT $1, 'publish', convert_to(g::text, 'UTF8'), octet_length(g::text), now() - interval '2 days'
		FROM generate_series(1, $2::integer) AS g`, e.human, due)
	require.NoError(t, err)
	fresh, err := e.srv.PublishEvent(asHuman(t, e.human, nil), &ingestv1.PublishEventRequest{Topic: "fresh"})
	require.NoError(t, err)
	e.payloadRetention(t, 3600)

	var total int64
	for {
		var (
			wg     sync.WaitGroup
			counts [2]int64
			errs   [2]error
		)
		for i := range counts {
			wg.Go(func() { counts[i], errs[i] = e.srv.PrunePayloadsOnce(t.Context()) })
		}
		wg.Wait()
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])
		if counts[0]+counts[1] == 0 {
			break
		}
		total += counts[0] + counts[1]
		require.LessOrEqual(t, total, int64(due), "no payload is emptied twice")
	}
	require.EqualValues(t, due, total)
	require.Equal(t, due, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1 AND payload_pruned_at IS NOT NULL AND payload = ''`))
	wantBytes := 0
	for g := 1; g <= due; g++ {
		wantBytes += len(strconv.Itoa(g))
	}
	require.Equal(t, wantBytes, e.count(t, `SELECT sum(size_bytes)::integer FROM events WHERE human_id = $1 AND payload_pruned_at IS NOT NULL`),
		"each keeps the size it was stored with")
	require.Zero(t, e.count(t, fmt.Sprintf(`SELECT count(*) FROM events WHERE human_id = $1 AND id = %d AND payload_pruned_at IS NOT NULL`, fresh.GetEvent().GetId())), "a recent event keeps its payload")
}
