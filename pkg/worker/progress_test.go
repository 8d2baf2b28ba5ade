package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/worker"
)

// TestProgressRidesTheNextHeartbeat: Progress records the latest value and
// the next heartbeat carries it once (HeartbeatBatch, and Heartbeat against
// a server without the batch RPC); values that are no JSON object or over
// 1 KiB are refused at once, as is a context that is not a handler's.
func TestProgressRidesTheNextHeartbeat(t *testing.T) {
	t.Parallel()
	for _, noBatch := range []bool{false, true} {
		t.Run(map[bool]string{false: "batch", true: "single"}[noBatch], func(t *testing.T) {
			t.Parallel()
			f := newFakeQueue()
			f.set(func(f *fakeQueue) { f.noBatch = noBatch })
			conn := f.serve(t)
			ids := f.add(1)

			gate, errs := make(chan struct{}), make(chan error, 1)
			w := worker.New(conn, "q", func(ctx context.Context, _ *queuev1.Todo) error {
				errs <- handlerProgress(ctx)
				select {
				case <-gate:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}, worker.Options{HeartbeatInterval: 5 * time.Millisecond, Wait: time.Second})
			stop := start(t, w)
			require.NoError(t, <-errs)

			// The latest value goes out once; later heartbeats carry none.
			var sentAt int
			require.Eventually(t, func() bool {
				reqs := f.record().hbReqs
				sentAt = lastProgress(reqs, ids[0])
				return sentAt >= 0 && reqs[sentAt].GetProgress().GetFields()["step"].GetNumberValue() == 2
			}, waitFor, tick)
			require.Eventually(t, func() bool { return len(f.record().hbReqs) > sentAt+3 }, waitFor, tick)
			reqs := f.record().hbReqs
			var carried []float64
			for _, r := range reqs {
				if r.GetProgress() != nil {
					carried = append(carried, r.GetProgress().GetFields()["step"].GetNumberValue())
				}
			}
			require.NotEmpty(t, carried)
			require.InDelta(t, 2.0, carried[len(carried)-1], 0, "the latest value")
			require.LessOrEqual(t, len(carried), 2, "each value at most once, only the recorded ones")
			require.Equal(t, map[string]any{"step": 2.0, "of": "upload"}, reqs[sentAt].GetProgress().AsMap())

			close(gate)
			require.Eventually(t, func() bool { return w.Stats().Completed == 1 }, waitFor, tick)
			require.NoError(t, stop())
			require.ErrorIs(t, worker.Progress(t.Context(), map[string]any{"a": 1}), worker.ErrNotHandling)
		})
	}
}

// handlerProgress is what the test's handler reports: two values (only the
// second must reach the server, unless a heartbeat fell between them) and
// the refused ones.
func handlerProgress(ctx context.Context) error {
	if err := worker.Progress(ctx, map[string]any{"step": 1}); err != nil {
		return err
	}
	if err := worker.Progress(ctx, struct {
		Step int    `json:"step"`
		Of   string `json:"of"`
	}{2, "upload"}); err != nil {
		return err
	}
	for _, bad := range []any{"text", []int{1}, nil, map[string]any{"s": strings.Repeat("x", worker.MaxProgressBytes)}} {
		if err := worker.Progress(ctx, bad); err == nil {
			return fmt.Errorf("progress %.20v was accepted", bad)
		}
	}
	return nil
}

// lastProgress is the index of the last heartbeat of id that carried
// progress, or -1.
func lastProgress(reqs []*queuev1.HeartbeatRequest, id int64) int {
	at := -1
	for i, r := range reqs {
		if r.GetId() == id && r.GetProgress() != nil {
			at = i
		}
	}
	return at
}

// TestSetResultRidesTheCompletion: the result a handler recorded (the last
// of its calls) is sent with its completion, batched or single; a value
// that is no JSON object is refused at once, as is a context that is not a
// handler's.
func TestSetResultRidesTheCompletion(t *testing.T) {
	t.Parallel()
	for _, noBatch := range []bool{false, true} {
		t.Run(map[bool]string{false: "batch", true: "single"}[noBatch], func(t *testing.T) {
			t.Parallel()
			f := newFakeQueue()
			f.set(func(f *fakeQueue) { f.noBatch = noBatch })
			conn := f.serve(t)
			ids := f.add(2)

			w := worker.New(conn, "q", func(ctx context.Context, todo *queuev1.Todo) error {
				if err := worker.SetResult(ctx, map[string]any{"draft": true}); err != nil {
					return err
				}
				if err := worker.SetResult(ctx, []int{1}); err == nil {
					return fmt.Errorf("a list was taken as a result")
				}
				return worker.SetResult(ctx, map[string]any{"id": todo.GetId()})
			}, worker.Options{Wait: time.Second})
			stop := start(t, w)
			require.Eventually(t, func() bool { return w.Stats().Completed == 2 }, waitFor, tick)
			require.NoError(t, stop())
			got := f.record().results
			for _, id := range ids {
				require.Equal(t, map[string]any{"id": float64(id)}, got[id].AsMap(), "todo %d", id)
			}
			require.ErrorIs(t, worker.SetResult(t.Context(), map[string]any{"a": 1}), worker.ErrNotHandling)
		})
	}
}
