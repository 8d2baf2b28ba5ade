//go:build integration

package realtime_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/grpcserver"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/realtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Tests(m)) }

// waitFor is the bound of every wait on a condition in these tests: long, so
// a loaded CI machine does not fail them; conditions usually hold in ms.
const waitFor = 60 * time.Second

// env is a realtime node over its own migrated database, served over real
// gRPC on loopback with the node's interceptor chain. Callers are chosen per
// call with the x-test-human / x-test-agent metadata (authentication itself
// is pkg/auth's and is tested there and in services/node).
type env struct {
	t      *testing.T
	addr   string
	pool   *pgxpool.Pool
	srv    *realtime.Server
	client realtimev1.RealtimeServiceClient
	human  uuid.UUID
}

func newEnv(t *testing.T, opts realtime.Options) *env {
	t.Helper()
	return newEnvOn(t, pgtest.NewPool(t), opts)
}

func newEnvOn(t *testing.T, pool *pgxpool.Pool, opts realtime.Options) *env {
	t.Helper()
	return newEnvLogged(t, pool, opts, zap.NewNop())
}

// newEnvLogged is newEnvOn with the service logging to log.
func newEnvLogged(t *testing.T, pool *pgxpool.Pool, opts realtime.Options, log *zap.Logger) *env {
	t.Helper()
	if opts.NodeID == "" {
		opts.NodeID = "node-" + uuid.NewString()[:8]
	}
	// The node's own registry row: presence sweeps the rows of unregistered nodes.
	_, err := pool.Exec(t.Context(), `INSERT INTO node_registry (node_id, endpoint) VALUES ($1, '127.0.0.1:1') ON CONFLICT DO NOTHING`, opts.NodeID)
	require.NoError(t, err)
	e := &env{t: t, pool: pool, srv: realtime.New(log, pool, opts)}
	e.human = e.seedHuman()
	gs, err := grpcserver.New(t.Context(), zap.NewNop(), grpcserver.Options{Addr: "127.0.0.1:0", Authorize: testAuthorize})
	require.NoError(t, err)
	gs.Register(e.srv.Desc(), e.srv)
	if n := opts.Notifier; n != nil { // shared, as a node runs it: first in, last out
		require.NoError(t, n.Start(t.Context()))
		t.Cleanup(func() { require.NoError(t, n.Stop(context.Background())) })
	}
	for _, c := range e.srv.Components() {
		require.NoError(t, c.Start(t.Context()))
		t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })
	}
	require.NoError(t, gs.Start(t.Context()))
	t.Cleanup(func() { _ = gs.Stop(context.Background()) })
	e.addr = gs.Addr()
	conn, err := grpc.NewClient(gs.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	e.client = realtimev1.NewRealtimeServiceClient(conn)
	return e
}

// testAuthorize makes the caller the human (and agent) named in metadata;
// through the REST edge, which forwards no other header, "Authorization:
// Bearer test-human:<uuid>" names the human.
func testAuthorize(ctx context.Context, _ string) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	h := md.Get("x-test-human")
	if a := md.Get("authorization"); len(h) == 0 && len(a) == 1 {
		if id, ok := strings.CutPrefix(a[0], "Bearer test-human:"); ok {
			h = []string{id}
		}
	}
	if len(h) != 1 {
		return nil, apierr.Unauthenticated("no test caller")
	}
	p := auth.Principal{CredentialID: uuid.New(), HumanID: uuid.MustParse(h[0]), Scopes: []auth.Scope{auth.ScopeAdmin}}
	if a := md.Get("x-test-agent"); len(a) == 1 {
		id := uuid.MustParse(a[0])
		p.AgentID = &id
		p.Scopes = []auth.Scope{auth.ScopeAgent}
	}
	return auth.NewContext(ctx, p), nil
}

func (e *env) seedHuman() uuid.UUID {
	e.t.Helper()
	var id uuid.UUID
	require.NoError(e.t, e.pool.QueryRow(e.t.Context(),
		`INSERT INTO humans (email) VALUES ($1) RETURNING id`, uuid.NewString()+"@example.test").Scan(&id))
	return id
}

// as is a context calling as human.
func as(ctx context.Context, human uuid.UUID) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-test-human", human.String())
}

func (e *env) publish(ctx context.Context, channel string, durable bool, fields map[string]any) *realtimev1.PublishResponse {
	e.t.Helper()
	p, err := structpb.NewStruct(fields)
	require.NoError(e.t, err)
	resp, err := e.client.Publish(as(ctx, e.human), &realtimev1.PublishRequest{Channel: channel, Payload: p, Durable: durable, Kind: "message"})
	require.NoError(e.t, err)
	return resp
}

// stream is an open subscription read by a goroutine into events.
type stream struct {
	events chan *realtimev1.SubscribeResponse
	err    chan error
	cancel context.CancelFunc
	// pending holds the rest of a batch (SubscribeResponse.events) that
	// nextAny has begun.
	pending []*realtimev1.RealtimeEvent
}

func (e *env) subscribe(human uuid.UUID, req *realtimev1.SubscribeRequest) *stream {
	e.t.Helper()
	return e.subscribeWith(as(e.t.Context(), human), req)
}

// subscribeWith subscribes with the credentials ctx carries (as, asAgent).
func (e *env) subscribeWith(ctx context.Context, req *realtimev1.SubscribeRequest) *stream {
	e.t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	st, err := e.client.Subscribe(ctx, req)
	require.NoError(e.t, err)
	s := &stream{events: make(chan *realtimev1.SubscribeResponse, 100000), err: make(chan error, 1), cancel: cancel}
	go func() {
		for {
			m, err := st.Recv()
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				s.err <- err
				return
			}
			s.events <- m
		}
	}()
	e.t.Cleanup(cancel)
	return s
}

// next returns the next event, skipping keepalives and presence events
// (a subscriber that takes ephemeral events also sees joins, its own too).
func (s *stream) next(t *testing.T) *realtimev1.RealtimeEvent {
	t.Helper()
	for {
		if ev := s.nextAny(t); !strings.HasPrefix(ev.GetKind(), "presence.") {
			return ev
		}
	}
}

// nextAny returns the next event of any kind (keepalives skipped).
func (s *stream) nextAny(t *testing.T) *realtimev1.RealtimeEvent {
	t.Helper()
	if len(s.pending) > 0 {
		ev := s.pending[0]
		s.pending = s.pending[1:]
		return ev
	}
	deadline := time.After(waitFor)
	for {
		select {
		case m := <-s.events:
			if ev := m.GetEvent(); ev != nil {
				return ev
			}
			if evs := m.GetEvents().GetEvents(); len(evs) > 0 {
				s.pending = evs[1:]
				return evs[0]
			}
		case err := <-s.err:
			t.Fatalf("stream ended: %v", err)
		case <-deadline:
			t.Fatalf("no event within %s", waitFor)
		}
	}
}

// nextMessage returns the events of the next message that carries any: one
// for SubscribeResponse.event, all of SubscribeResponse.events.
func (s *stream) nextMessage(t *testing.T) []*realtimev1.RealtimeEvent {
	t.Helper()
	require.Empty(t, s.pending, "nextMessage after nextAny began a batch")
	deadline := time.After(waitFor)
	for {
		select {
		case m := <-s.events:
			if ev := m.GetEvent(); ev != nil {
				return []*realtimev1.RealtimeEvent{ev}
			}
			if evs := m.GetEvents().GetEvents(); len(evs) > 0 {
				return evs
			}
		case err := <-s.err:
			t.Fatalf("stream ended: %v", err)
		case <-deadline:
			t.Fatalf("no message within %s", waitFor)
		}
	}
}

// subscribed waits until the node has n open subscriptions (Subscribe has
// registered with the hub).
func (e *env) subscribed(n int64) {
	e.t.Helper()
	require.Eventually(e.t, func() bool { return e.srv.Subscribers() == n }, waitFor, time.Millisecond)
}

// listening waits until n listen connections on e's database have their
// LISTENs in place: a notifier connects in the background after Start, and
// an ephemeral event (never stored, nothing re-reads it) sent before that is
// not lost by a fault but by design. A session that ran its LISTENs and went
// idle is listening: LISTEN takes effect when its statement commits.
func (e *env) listening(n int) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		var got int
		err := e.pool.QueryRow(e.t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND state = 'idle' AND query LIKE 'LISTEN %'`).Scan(&got)
		return err == nil && got == n
	}, waitFor, 5*time.Millisecond, "%d listen connections", n)
}
