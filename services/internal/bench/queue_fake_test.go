package bench

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// benchFake is an in-memory QueueService with the calls bench uses.
type benchFake struct {
	queuev1.UnimplementedQueueServiceServer

	mu        sync.Mutex
	next      int64
	pending   []*queuev1.Todo
	running   map[int64]int64 // id → the lease token of its claim
	tokens    int64
	wake      chan struct{}
	completed int
	batches   int
}

func (f *benchFake) add(reqs []*queuev1.EnqueueRequest) *queuev1.Todo {
	var last *queuev1.Todo
	for _, r := range reqs {
		f.next++
		last = &queuev1.Todo{Id: f.next, Queue: "bench", Payload: r.GetPayload()}
		f.pending = append(f.pending, last)
	}
	close(f.wake)
	f.wake = make(chan struct{})
	return last
}

func (f *benchFake) Enqueue(_ context.Context, req *queuev1.EnqueueRequest) (*queuev1.EnqueueResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &queuev1.EnqueueResponse{Todo: proto.CloneOf(f.add([]*queuev1.EnqueueRequest{req}))}, nil
}

func (f *benchFake) EnqueueBatch(_ context.Context, req *queuev1.EnqueueBatchRequest) (*queuev1.EnqueueBatchResponse, error) {
	if n := len(req.GetRequests()); n < 1 || n > 1000 {
		return nil, status.Error(codes.InvalidArgument, "1–1000 requests")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches++
	f.add(req.GetRequests())
	return &queuev1.EnqueueBatchResponse{}, nil
}

func (f *benchFake) QueueStats(context.Context, *queuev1.QueueStatsRequest) (*queuev1.QueueStatsResponse, error) {
	return nil, status.Error(codes.PermissionDenied, "needs read") // as for an agent,publisher token
}

func (f *benchFake) Claim(ctx context.Context, req *queuev1.ClaimRequest) (*queuev1.ClaimResponse, error) {
	if req.GetMaxTodos() > 1000 {
		return nil, status.Error(codes.InvalidArgument, "max_todos")
	}
	timeout := time.NewTimer(req.GetWait().AsDuration())
	defer timeout.Stop()
	f.mu.Lock()
	for len(f.pending) == 0 {
		wake := f.wake
		f.mu.Unlock()
		select {
		case <-wake:
		case <-timeout.C:
			return &queuev1.ClaimResponse{}, nil
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		f.mu.Lock()
	}
	defer f.mu.Unlock()
	n := min(int(max(req.GetMaxTodos(), 1)), len(f.pending))
	resp := &queuev1.ClaimResponse{}
	for _, td := range f.pending[:n] {
		td.Attempt++
		f.tokens++
		f.running[td.GetId()] = f.tokens
		claimed := proto.CloneOf(td)
		claimed.LeaseToken = f.tokens // only in the claim's answer
		resp.Todos = append(resp.Todos, claimed)
	}
	f.pending = f.pending[n:]
	return resp, nil
}

func (f *benchFake) Complete(_ context.Context, req *queuev1.CompleteRequest) (*queuev1.CompleteResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if tok, ok := f.running[req.GetId()]; !ok || tok != req.GetLeaseToken() {
		return nil, status.Error(codes.FailedPrecondition, "stale lease token")
	}
	delete(f.running, req.GetId())
	f.completed++
	return &queuev1.CompleteResponse{}, nil
}
