package worker_test

import (
	"context"
	"math"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// fakeQueue is an in-memory QueueService: just enough of the remote API's
// contract (claim order, lease tokens, long-poll, FAILED_PRECONDITION for
// stale tokens) to drive a Worker, plus a record of every call.
type fakeQueue struct {
	queuev1.UnimplementedQueueServiceServer

	mu       sync.Mutex
	nextID   int64
	todos    map[int64]*fakeTodo
	pending  []int64
	wake     chan struct{} // closed and replaced when todos become pending
	claimErr func(n int) error
	// fault, when set, may fail the n-th call of method (Complete,
	// CompleteBatch, Fail, Release, Heartbeat, HeartbeatBatch): before it
	// takes effect, or with after after it did (the answer is lost, as when
	// a node dies after the commit).
	fault func(method string, n int) (after bool, err error)
	// calls counts the ack and heartbeat calls by method.
	calls map[string]int
	// noBatch makes CompleteBatch and HeartbeatBatch UNIMPLEMENTED.
	noBatch bool
	// auth holds the authorization metadata of every call.
	auth []string

	claims     []*queuev1.ClaimRequest
	claimTimes []time.Time
	heartbeats map[int64]int
	hbReqs     []*queuev1.HeartbeatRequest
	completed  []int64
	// results holds the result each completed todo was completed with.
	results map[int64]*structpb.Struct
	// completeBatches holds the ids of every CompleteBatch call that was
	// answered, hbBatches the size of every HeartbeatBatch call.
	completeBatches [][]int64
	hbBatches       []int
	singleCompletes int
	fails           []*queuev1.FailRequest
	released        []int64
	// stale counts, by method, the calls that met a stale lease token.
	stale map[string]int
}

type fakeTodo struct {
	todo     *queuev1.Todo
	state    queuev1.TodoState
	leaseEnd time.Time
	// token is the current lease's token; ended and endedBy record how the
	// lease with token endedToken ended ("Complete", "Fail", "Release"), so
	// that a retried ack is answered already.
	token, endedToken int64
	ended             string
}

func newFakeQueue() *fakeQueue {
	return &fakeQueue{todos: map[int64]*fakeTodo{}, heartbeats: map[int64]int{}, stale: map[string]int{}, calls: map[string]int{}, results: map[int64]*structpb.Struct{}, wake: make(chan struct{})}
}

// fakeNode is one gRPC server in front of a fakeQueue.
type fakeNode struct {
	addr  string
	srv   *grpc.Server
	mu    sync.Mutex
	calls int // RPCs this node received
}

// served returns how many RPCs the node received.
func (n *fakeNode) served() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls
}

// node starts a gRPC server for f on 127.0.0.1:0 (stopped at cleanup).
func (f *fakeQueue) node(t *testing.T) *fakeNode {
	t.Helper()
	var lc net.ListenConfig
	lis, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	n := &fakeNode{addr: lis.Addr().String()}
	n.srv = grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		n.mu.Lock()
		n.calls++
		n.mu.Unlock()
		md, _ := metadata.FromIncomingContext(ctx)
		f.mu.Lock()
		f.auth = append(f.auth, strings.Join(md.Get("authorization"), ","))
		f.mu.Unlock()
		return h(ctx, req)
	}))
	queuev1.RegisterQueueServiceServer(n.srv, f)
	go func() { _ = n.srv.Serve(lis) }()
	t.Cleanup(n.srv.Stop)
	return n
}

// serve starts f on 127.0.0.1:0 and returns a client connection to it.
func (f *fakeQueue) serve(t *testing.T) *grpc.ClientConn {
	t.Helper()
	n := f.node(t)
	conn, err := grpc.NewClient("passthrough:///"+n.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// newToken returns a random lease token ≥ 1 (as the server's 63-bit ones).
func newToken() int64 { return rand.Int64N(math.MaxInt64-1) + 1 } //nolint:gosec // a test's tokens need no secrecy

// inject counts a call of method and asks fault about it. The caller holds
// f.mu.
func (f *fakeQueue) inject(method string) (after bool, err error) {
	f.calls[method]++
	if f.fault == nil {
		return false, nil
	}
	return f.fault(method, f.calls[method])
}

// add enqueues n todos with payload {"n": i} and returns their ids.
func (f *fakeQueue) add(n int) []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]int64, 0, n)
	for i := range n {
		f.nextID++
		p, _ := structpb.NewStruct(map[string]any{"n": i})
		f.todos[f.nextID] = &fakeTodo{
			todo:  &queuev1.Todo{Id: f.nextID, Queue: "q", Payload: p, State: queuev1.TodoState_TODO_STATE_PENDING},
			state: queuev1.TodoState_TODO_STATE_PENDING,
		}
		f.pending = append(f.pending, f.nextID)
		ids = append(ids, f.nextID)
	}
	close(f.wake)
	f.wake = make(chan struct{})
	return ids
}

// expire makes id's lease stale, as if it expired and another worker claimed
// the todo again.
func (f *fakeQueue) expire(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.todos[id].todo.Attempt++
	f.todos[id].token = newToken()
}

// token returns id's current lease token.
func (f *fakeQueue) token(id int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.todos[id].token
}

func (f *fakeQueue) setClaimErr(fn func(n int) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claimErr = fn
}

// snapshot returns copies of the recorded calls.
type record struct {
	claims             []*queuev1.ClaimRequest
	claimTimes         []time.Time
	heartbeats         map[int64]int
	hbReqs             []*queuev1.HeartbeatRequest
	completed          []int64
	results            map[int64]*structpb.Struct
	completeBatches    [][]int64
	hbBatches          []int
	singleCompletes    int
	fails              []*queuev1.FailRequest
	released           []int64
	running, remaining int
	stale              map[string]int
	calls              map[string]int
	auth               []string
}

func (f *fakeQueue) record() record {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := record{
		claims: append([]*queuev1.ClaimRequest(nil), f.claims...), claimTimes: append([]time.Time(nil), f.claimTimes...),
		heartbeats: map[int64]int{}, hbReqs: append([]*queuev1.HeartbeatRequest(nil), f.hbReqs...),
		completed: append([]int64(nil), f.completed...), completeBatches: append([][]int64(nil), f.completeBatches...),
		hbBatches: append([]int(nil), f.hbBatches...), singleCompletes: f.singleCompletes, fails: append([]*queuev1.FailRequest(nil), f.fails...),
		released: append([]int64(nil), f.released...), remaining: len(f.pending), stale: map[string]int{},
		calls: map[string]int{}, auth: append([]string(nil), f.auth...), results: map[int64]*structpb.Struct{},
	}
	for k, v := range f.results {
		r.results[k] = v
	}
	for k, v := range f.calls {
		r.calls[k] = v
	}
	for k, v := range f.heartbeats {
		r.heartbeats[k] = v
	}
	for k, v := range f.stale {
		r.stale[k] = v
	}
	for _, td := range f.todos {
		if td.state == queuev1.TodoState_TODO_STATE_RUNNING {
			r.running++
		}
	}
	return r
}

func (f *fakeQueue) Claim(ctx context.Context, req *queuev1.ClaimRequest) (*queuev1.ClaimResponse, error) {
	deadline := time.Now().Add(req.GetWait().AsDuration())
	f.mu.Lock()
	f.claims = append(f.claims, proto.CloneOf(req))
	f.claimTimes = append(f.claimTimes, time.Now())
	if f.claimErr != nil {
		if err := f.claimErr(len(f.claims)); err != nil {
			f.mu.Unlock()
			return nil, err
		}
	}
	for len(f.pending) == 0 {
		wake := f.wake
		f.mu.Unlock()
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-wake:
			t.Stop()
		case <-t.C:
			return &queuev1.ClaimResponse{}, nil
		case <-ctx.Done():
			t.Stop()
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		f.mu.Lock()
	}
	defer f.mu.Unlock()
	n := int(max(req.GetMaxTodos(), 1))
	n = min(n, len(f.pending))
	resp := &queuev1.ClaimResponse{}
	for _, id := range f.pending[:n] {
		td := f.todos[id]
		td.state = queuev1.TodoState_TODO_STATE_RUNNING
		td.todo.Attempt++
		td.todo.State = td.state
		td.todo.LeaseOwner = req.GetWorkerId()
		td.leaseEnd = time.Now().Add(time.Duration(req.GetLeaseSeconds()) * time.Second)
		td.todo.LeaseExpiresAt = timestamppb.New(td.leaseEnd)
		td.token = newToken()
		c := proto.CloneOf(td.todo)
		c.LeaseToken = td.token // only in the ClaimResponse
		resp.Todos = append(resp.Todos, c)
	}
	f.pending = f.pending[n:]
	return resp, nil
}

func (f *fakeQueue) set(fn func(f *fakeQueue)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}
