//go:build integration

package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// listAll pages through ListTodos with req's filters, pageSize at a time,
// and returns the ids newest first.
func (e *env) listAll(t *testing.T, req *queuev1.ListTodosRequest) []int64 {
	t.Helper()
	var got []int64
	for {
		res, err := e.srv.ListTodos(e.owner(t), req)
		require.NoError(t, err)
		for _, td := range res.GetTodos() {
			got = append(got, td.GetId())
		}
		if res.GetNextPageToken() == "" {
			return got
		}
		req.PageToken = res.GetNextPageToken()
	}
}

// seedEvent stores an event of human directly: no queue RPC creates them.
func (e *env) seedEvent(t *testing.T) int64 {
	t.Helper()
	var id int64
	require.NoError(t, e.pool.QueryRow(t.Context(),
		`INSERT INTO events (human_id, source, payload, size_bytes) VALUES ($1, 'publish', '\x7b7d', 2) RETURNING id`, e.human).Scan(&id))
	return id
}

func TestListTodosKindEventAndTimeFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.owner(t)
	ev, otherEv := e.seedEvent(t), e.seedEvent(t)
	var sends, ofEvent []int64
	for i := range 7 {
		r, err := e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "q", Kind: "send"})
		require.NoError(t, err)
		sends = append([]int64{r.GetTodo().GetId()}, sends...) // newest first
		evID := otherEv
		if i%2 == 0 {
			evID = ev
		}
		r, err = e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "q", Kind: "sync", EventId: evID})
		require.NoError(t, err)
		if evID == ev {
			ofEvent = append([]int64{r.GetTodo().GetId()}, ofEvent...)
		}
	}

	// Kind, paged two at a time: the keyset continues across pages.
	require.Equal(t, sends, e.listAll(t, &queuev1.ListTodosRequest{Kind: "send", PageSize: 2}))
	require.Empty(t, e.listAll(t, &queuev1.ListTodosRequest{Kind: "nothing"}))
	// Event, alone and with kind and queue.
	require.Equal(t, ofEvent, e.listAll(t, &queuev1.ListTodosRequest{EventId: ev, PageSize: 3}))
	require.Equal(t, ofEvent, e.listAll(t, &queuev1.ListTodosRequest{EventId: ev, Kind: "sync", Queue: "q", PageSize: 1}))
	require.Empty(t, e.listAll(t, &queuev1.ListTodosRequest{EventId: ev, Kind: "send"}))

	// Creation time: move the first four sends an hour back.
	old := sends[len(sends)-4:]
	_, err := e.pool.Exec(t.Context(), `UPDATE todos SET created_at = created_at - interval '1 hour' WHERE id = ANY($1)`, old)
	require.NoError(t, err)
	cut := timestamppb.New(e.dbNow(t).Add(-30 * time.Minute))
	require.Equal(t, old, e.listAll(t, &queuev1.ListTodosRequest{Kind: "send", CreatedBefore: cut, PageSize: 3}))
	require.Equal(t, sends[:3], e.listAll(t, &queuev1.ListTodosRequest{Kind: "send", CreatedAfter: cut, PageSize: 2}))

	// Another tenant's filter finds nothing of ours.
	other := seedHuman(t, e.pool)
	res, err := e.srv.ListTodos(asHuman(t, other), &queuev1.ListTodosRequest{EventId: ev})
	require.NoError(t, err)
	require.Empty(t, res.GetTodos())

	// A token is bound to its filters, the new ones included.
	first, err := e.srv.ListTodos(ctx, &queuev1.ListTodosRequest{Kind: "send", PageSize: 2})
	require.NoError(t, err)
	require.NotEmpty(t, first.GetNextPageToken())
	_, err = e.srv.ListTodos(ctx, &queuev1.ListTodosRequest{Kind: "sync", PageSize: 2, PageToken: first.GetNextPageToken()})
	require.Equal(t, codes.InvalidArgument, code(err))

	// Bad filters.
	for name, req := range map[string]*queuev1.ListTodosRequest{
		"negative event": {EventId: -1},
		"inverted range": {CreatedAfter: timestamppb.New(time.Now()), CreatedBefore: timestamppb.New(time.Now().Add(-time.Hour))},
		"long kind":      {Kind: string(make([]byte, 256))},
	} {
		_, err := e.srv.ListTodos(ctx, req)
		require.Equal(t, codes.InvalidArgument, code(err), name)
	}
}
