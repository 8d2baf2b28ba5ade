//go:build integration

package ingest_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/durationpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/services/ingest"
	"github.com/switchboard/switchboard/services/queue"
)

// TestHookTodoAnnouncesItself: a todo that the webhook edge stores with its
// event is announced like any enqueued one: todo.enqueued is emitted with
// its id, and a long-poll Claim waiting on its queue is woken (the claim
// never polls here, so only the wake-up can answer it in time).
func TestHookTodoAnnouncesItself(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var enqueued []queue.TodoEvent
	todos := queue.NewTodos(e.pool, nil, queue.TodosOptions{OnChange: func(ev queue.TodoEvent) {
		if ev.Kind == queue.EventEnqueued {
			mu.Lock()
			enqueued = append(enqueued, ev)
			mu.Unlock()
		}
	}})
	q := queue.New(zap.NewNop(), e.pool, queue.Options{Todos: todos, PollInterval: time.Hour})
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys, Todos: todos})
	mux := http.NewServeMux()
	mux.Handle(ingest.HookPattern, srv.HookHandler())
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	e.url = hs.URL
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")

	worker := auth.NewContext(t.Context(), auth.Principal{CredentialID: uuid.New(), HumanID: e.human, Scopes: []auth.Scope{auth.ScopeAdmin}})
	claimed := make(chan *queuev1.ClaimResponse, 1)
	go func() {
		res, err := q.Claim(worker, &queuev1.ClaimRequest{Queue: "hooks", WorkerId: "w", Wait: durationpb.New(time.Minute)})
		if err != nil {
			res = nil
		}
		claimed <- res
	}()
	require.Eventually(t, func() bool { return q.Waiting() == 1 }, time.Minute, 5*time.Millisecond, "the claim waits")

	body := []byte(`{"hello":"announce"}`)
	code, resp := e.post(t, slug, body, standardHeaders(t, "msg_announce", time.Now(), body))
	require.Equal(t, http.StatusOK, code, resp)
	var todoID int64
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT id FROM todos WHERE human_id = $1`, e.human).Scan(&todoID))

	res := <-claimed
	require.NotNil(t, res)
	require.Len(t, res.GetTodos(), 1, "the wake-up answered the claim")
	require.Equal(t, todoID, res.GetTodos()[0].GetId())
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, enqueued, 1)
	require.Equal(t, queue.TodoEvent{Kind: queue.EventEnqueued, TodoID: todoID, HumanID: e.human, Queue: "hooks", State: "pending"}, enqueued[0])
}
