package worker_test

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// The fake's lease-holder calls: Heartbeat, Complete, Fail, Release and the
// batch ones, with lease tokens, lease expiry, idempotent acks (a retried
// ack of a lease that already ended that way is answered already) and
// injected faults (fakeQueue.fault).

// leased returns the running todo id with token for a call of method, or a
// stale-token error; already is true when that lease already ended through
// method (a retried ack). A lease past its end is stale too. The caller
// holds f.mu.
func (f *fakeQueue) leased(method string, id, token int64) (td *fakeTodo, already bool, err error) {
	td, ok := f.todos[id]
	if !ok {
		return nil, false, status.Error(codes.NotFound, "no such todo")
	}
	end := strings.TrimSuffix(method, "Batch")
	if token != 0 && token == td.endedToken && td.ended == end && end != "Heartbeat" {
		return td, true, nil
	}
	if td.state != queuev1.TodoState_TODO_STATE_RUNNING || td.token != token || time.Now().After(td.leaseEnd) {
		f.stale[method]++
		return nil, false, status.Error(codes.FailedPrecondition, "stale lease token")
	}
	return td, false, nil
}

// end records that td's lease ended through method.
func (td *fakeTodo) end(method string, state queuev1.TodoState) {
	td.state = state
	td.endedToken, td.ended = td.token, strings.TrimSuffix(method, "Batch")
}

func (f *fakeQueue) Heartbeat(_ context.Context, req *queuev1.HeartbeatRequest) (*queuev1.HeartbeatResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hbReqs = append(f.hbReqs, proto.CloneOf(req))
	after, ferr := f.inject("Heartbeat")
	if ferr != nil && !after {
		return nil, ferr
	}
	td, _, err := f.leased("Heartbeat", req.GetId(), req.GetLeaseToken())
	if err != nil {
		return nil, err
	}
	f.heartbeats[req.GetId()]++
	td.leaseEnd = time.Now().Add(time.Duration(req.GetLeaseSeconds()) * time.Second)
	if ferr != nil {
		return nil, ferr
	}
	return &queuev1.HeartbeatResponse{LeaseExpiresAt: timestamppb.New(td.leaseEnd)}, nil
}

func (f *fakeQueue) Complete(_ context.Context, req *queuev1.CompleteRequest) (*queuev1.CompleteResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	after, ferr := f.inject("Complete")
	if ferr != nil && !after {
		return nil, ferr
	}
	td, already, err := f.leased("Complete", req.GetId(), req.GetLeaseToken())
	if err != nil {
		return nil, err
	}
	if !already {
		td.end("Complete", queuev1.TodoState_TODO_STATE_COMPLETED)
		f.completed = append(f.completed, req.GetId())
		f.results[req.GetId()] = req.GetResult()
		f.singleCompletes++
	}
	if ferr != nil {
		return nil, ferr
	}
	return &queuev1.CompleteResponse{Already: already}, nil
}

// outcome maps a leased() answer to a batch outcome.
func outcome(already bool, err error) queuev1.BatchOutcome {
	switch status.Code(err) {
	case codes.OK:
		if already {
			return queuev1.BatchOutcome_BATCH_OUTCOME_ALREADY
		}
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
	after, ferr := f.inject("CompleteBatch")
	if ferr != nil && !after {
		return nil, ferr
	}
	resp := &queuev1.CompleteBatchResponse{}
	ids := make([]int64, 0, len(req.GetItems()))
	for _, it := range req.GetItems() {
		ids = append(ids, it.GetId())
		td, already, err := f.leased("CompleteBatch", it.GetId(), it.GetLeaseToken())
		if err == nil && !already {
			td.end("CompleteBatch", queuev1.TodoState_TODO_STATE_COMPLETED)
			f.completed = append(f.completed, it.GetId())
			f.results[it.GetId()] = it.GetResult()
		}
		resp.Results = append(resp.Results, &queuev1.CompleteBatchResult{Id: it.GetId(), Outcome: outcome(already, err)})
	}
	f.completeBatches = append(f.completeBatches, ids)
	if ferr != nil {
		return nil, ferr
	}
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
	after, ferr := f.inject("HeartbeatBatch")
	if ferr != nil && !after {
		return nil, ferr
	}
	resp := &queuev1.HeartbeatBatchResponse{}
	for _, it := range req.GetItems() {
		f.hbReqs = append(f.hbReqs, proto.CloneOf(it))
		td, _, err := f.leased("HeartbeatBatch", it.GetId(), it.GetLeaseToken())
		res := &queuev1.HeartbeatBatchResult{Id: it.GetId(), Outcome: outcome(false, err)}
		if err == nil {
			f.heartbeats[it.GetId()]++
			td.leaseEnd = time.Now().Add(time.Duration(it.GetLeaseSeconds()) * time.Second)
			res.LeaseExpiresAt = timestamppb.New(td.leaseEnd)
		}
		resp.Results = append(resp.Results, res)
	}
	f.hbBatches = append(f.hbBatches, len(req.GetItems()))
	if ferr != nil {
		return nil, ferr
	}
	return resp, nil
}

func (f *fakeQueue) Fail(_ context.Context, req *queuev1.FailRequest) (*queuev1.FailResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	after, ferr := f.inject("Fail")
	if ferr != nil && !after {
		return nil, ferr
	}
	td, already, err := f.leased("Fail", req.GetId(), req.GetLeaseToken())
	if err != nil {
		return nil, err
	}
	if !already {
		td.end("Fail", queuev1.TodoState_TODO_STATE_DEAD) // retries are not modelled
		f.fails = append(f.fails, proto.CloneOf(req))
	}
	if ferr != nil {
		return nil, ferr
	}
	return &queuev1.FailResponse{Already: already}, nil
}

func (f *fakeQueue) Release(_ context.Context, req *queuev1.ReleaseRequest) (*queuev1.ReleaseResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	after, ferr := f.inject("Release")
	if ferr != nil && !after {
		return nil, ferr
	}
	td, already, err := f.leased("Release", req.GetId(), req.GetLeaseToken())
	if err != nil {
		return nil, err
	}
	if !already {
		// Back to pending but not re-offered: the tests count releases.
		td.end("Release", queuev1.TodoState_TODO_STATE_PENDING)
		f.released = append(f.released, req.GetId())
	}
	if ferr != nil {
		return nil, ferr
	}
	return &queuev1.ReleaseResponse{Already: already}, nil
}
