package worker_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

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
	// completeErr, when set, may fail the n-th CompleteBatch call.
	completeErr func(n int) error
	// noBatch makes CompleteBatch and HeartbeatBatch UNIMPLEMENTED.
	noBatch bool

	claims     []*queuev1.ClaimRequest
	claimTimes []time.Time
	heartbeats map[int64]int
	hbReqs     []*queuev1.HeartbeatRequest
	completed  []int64
	// completeBatches holds the ids of every CompleteBatch call that was
	// answered, hbBatches the size of every HeartbeatBatch call.
	completeBatches [][]int64
	completeCalls   int
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
}

func newFakeQueue() *fakeQueue {
	return &fakeQueue{todos: map[int64]*fakeTodo{}, heartbeats: map[int64]int{}, stale: map[string]int{}, wake: make(chan struct{})}
}

// serve starts f on 127.0.0.1:0 and returns a client connection to it.
func (f *fakeQueue) serve(t *testing.T) *grpc.ClientConn {
	t.Helper()
	var lc net.ListenConfig
	lis, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	queuev1.RegisterQueueServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///"+lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
	})
	return conn
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
	completeBatches    [][]int64
	hbBatches          []int
	singleCompletes    int
	fails              []*queuev1.FailRequest
	released           []int64
	running, remaining int
	stale              map[string]int
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
		resp.Todos = append(resp.Todos, proto.CloneOf(td.todo))
	}
	f.pending = f.pending[n:]
	return resp, nil
}

// leased returns the running todo id with token, or a stale-token error.
// The caller holds f.mu.
func (f *fakeQueue) leased(method string, id int64, token int32) (*fakeTodo, error) {
	td, ok := f.todos[id]
	if !ok {
		return nil, status.Error(codes.NotFound, "no such todo")
	}
	if td.state != queuev1.TodoState_TODO_STATE_RUNNING || td.todo.GetAttempt() != token {
		f.stale[method]++
		return nil, status.Error(codes.FailedPrecondition, "stale lease token")
	}
	return td, nil
}

func (f *fakeQueue) Heartbeat(_ context.Context, req *queuev1.HeartbeatRequest) (*queuev1.HeartbeatResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hbReqs = append(f.hbReqs, proto.CloneOf(req))
	td, err := f.leased("Heartbeat", req.GetId(), req.GetLeaseToken())
	if err != nil {
		return nil, err
	}
	f.heartbeats[req.GetId()]++
	td.leaseEnd = time.Now().Add(time.Duration(req.GetLeaseSeconds()) * time.Second)
	return &queuev1.HeartbeatResponse{}, nil
}

func (f *fakeQueue) Complete(_ context.Context, req *queuev1.CompleteRequest) (*queuev1.CompleteResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	td, err := f.leased("Complete", req.GetId(), req.GetLeaseToken())
	if err != nil {
		return nil, err
	}
	td.state = queuev1.TodoState_TODO_STATE_COMPLETED
	f.completed = append(f.completed, req.GetId())
	f.singleCompletes++
	return &queuev1.CompleteResponse{}, nil
}

// outcome maps a leased() error to a batch outcome.
func outcome(err error) queuev1.BatchOutcome {
	switch status.Code(err) {
	case codes.OK:
		return queuev1.BatchOutcome_BATCH_OUTCOME_OK
	case codes.NotFound:
		return queuev1.BatchOutcome_BATCH_OUTCOME_NOT_FOUND
	default:
		return queuev1.BatchOutcome_BATCH_OUTCOME_STALE_LEASE
	}
}

func (f *fakeQueue) CompleteBatch(_ context.Context, req *queuev1.CompleteBatchRequest) (*queuev1.CompleteBatchResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noBatch {
		return nil, status.Error(codes.Unimplemented, "no CompleteBatch")
	}
	if n := len(req.GetItems()); n == 0 || n > 1000 {
		return nil, status.Error(codes.InvalidArgument, "items must hold 1 to 1000 items")
	}
	f.completeCalls++
	if f.completeErr != nil {
		if err := f.completeErr(f.completeCalls); err != nil {
			return nil, err
		}
	}
	resp := &queuev1.CompleteBatchResponse{}
	ids := make([]int64, 0, len(req.GetItems()))
	for _, it := range req.GetItems() {
		ids = append(ids, it.GetId())
		td, err := f.leased("CompleteBatch", it.GetId(), it.GetLeaseToken())
		if err == nil {
			td.state = queuev1.TodoState_TODO_STATE_COMPLETED
			f.completed = append(f.completed, it.GetId())
		}
		resp.Results = append(resp.Results, &queuev1.CompleteBatchResult{Id: it.GetId(), Outcome: outcome(err)})
	}
	f.completeBatches = append(f.completeBatches, ids)
	return resp, nil
}

func (f *fakeQueue) HeartbeatBatch(_ context.Context, req *queuev1.HeartbeatBatchRequest) (*queuev1.HeartbeatBatchResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noBatch {
		return nil, status.Error(codes.Unimplemented, "no HeartbeatBatch")
	}
	if n := len(req.GetItems()); n == 0 || n > 1000 {
		return nil, status.Error(codes.InvalidArgument, "items must hold 1 to 1000 items")
	}
	resp := &queuev1.HeartbeatBatchResponse{}
	for _, it := range req.GetItems() {
		f.hbReqs = append(f.hbReqs, proto.CloneOf(it))
		td, err := f.leased("HeartbeatBatch", it.GetId(), it.GetLeaseToken())
		if err == nil {
			f.heartbeats[it.GetId()]++
			td.leaseEnd = time.Now().Add(time.Duration(it.GetLeaseSeconds()) * time.Second)
		}
		resp.Results = append(resp.Results, &queuev1.HeartbeatBatchResult{Id: it.GetId(), Outcome: outcome(err)})
	}
	f.hbBatches = append(f.hbBatches, len(req.GetItems()))
	return resp, nil
}

func (f *fakeQueue) set(fn func(f *fakeQueue)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeQueue) Fail(_ context.Context, req *queuev1.FailRequest) (*queuev1.FailResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	td, err := f.leased("Fail", req.GetId(), req.GetLeaseToken())
	if err != nil {
		return nil, err
	}
	td.state = queuev1.TodoState_TODO_STATE_DEAD // retries are not modelled
	f.fails = append(f.fails, proto.CloneOf(req))
	return &queuev1.FailResponse{}, nil
}

func (f *fakeQueue) Release(_ context.Context, req *queuev1.ReleaseRequest) (*queuev1.ReleaseResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	td, err := f.leased("Release", req.GetId(), req.GetLeaseToken())
	if err != nil {
		return nil, err
	}
	// Back to pending but not re-offered: the tests count releases.
	td.state = queuev1.TodoState_TODO_STATE_PENDING
	f.released = append(f.released, req.GetId())
	return &queuev1.ReleaseResponse{}, nil
}
