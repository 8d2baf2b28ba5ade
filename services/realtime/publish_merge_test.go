//go:build integration

package realtime_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/metrics"
	"github.com/switchboard/switchboard/services/realtime"
)

// statements records the sizes of a node's durable insert statements and
// holds the first one (before it is sent) until let, so that publishes
// arriving meanwhile queue for the next flush.
type statements struct {
	mu      sync.Mutex
	sizes   []int
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func holdFirstStatement(t *testing.T, srv *realtime.Server) *statements {
	t.Helper()
	s := &statements{entered: make(chan struct{}), release: make(chan struct{})}
	realtime.OnPublishStatement(srv, func(n int) {
		s.mu.Lock()
		s.sizes = append(s.sizes, n)
		first := len(s.sizes) == 1
		s.mu.Unlock()
		if first {
			close(s.entered)
			<-s.release
		}
	})
	// Registered after the node's cleanups, so it runs before them: a
	// failed test must not leave the flusher held while Stop waits for it.
	t.Cleanup(s.let)
	return s
}

// held waits until the first statement is held.
func (s *statements) held(t *testing.T) {
	t.Helper()
	select {
	case <-s.entered:
	case <-time.After(waitFor):
		t.Fatalf("no statement within %s", waitFor)
	}
}

func (s *statements) let() { s.once.Do(func() { close(s.release) }) }

func (s *statements) seen() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sizes)
}

// published is one Publish's outcome.
type published struct {
	resp *realtimev1.PublishResponse
	err  error
}

// publishAsync publishes a durable event as human on its own goroutine.
func (e *env) publishAsync(ctx context.Context, human uuid.UUID, channel string, fields map[string]any) <-chan published {
	e.t.Helper()
	p, err := structpb.NewStruct(fields)
	require.NoError(e.t, err)
	out := make(chan published, 1)
	go func() {
		resp, err := e.client.Publish(as(ctx, human), &realtimev1.PublishRequest{Channel: channel, Payload: p, Durable: true, Kind: "message"})
		out <- published{resp, err}
	}()
	return out
}

// outcome waits for one publishAsync.
func outcome(t *testing.T, ch <-chan published) published {
	t.Helper()
	select {
	case p := <-ch:
		return p
	case <-time.After(waitFor):
		t.Fatalf("no Publish answer within %s", waitFor)
		return published{}
	}
}

// queued waits until n durable publishes wait for the next flush.
func (e *env) queued(n int) {
	e.t.Helper()
	require.Eventually(e.t, func() bool { return realtime.PublishesQueued(e.srv) == n }, waitFor, time.Millisecond)
}

// rowOf is the channel and payload field "i" of the row with id.
func (e *env) rowOf(id int64) (string, float64) {
	e.t.Helper()
	var channel string
	var i float64
	require.NoError(e.t, e.pool.QueryRow(e.t.Context(), `SELECT channel, (payload->>'i')::float8 FROM realtime_events WHERE id = $1`, id).Scan(&channel, &i))
	return channel, i
}

// TestConcurrentDurablePublishesShareOneStatement: 50 publishes arriving
// while a flush is in flight go in ONE statement; each caller gets the id of
// its own row, and a subscriber receives all of them in id order with no
// gap or duplicate.
func TestConcurrentDurablePublishesShareOneStatement(t *testing.T) {
	t.Parallel()
	reg := metrics.New(metrics.Options{})
	e := newEnv(t, realtime.Options{Metrics: reg})
	sub := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"burst", "first"}})
	e.subscribed(1)
	st := holdFirstStatement(t, e.srv)
	first := e.publishAsync(t.Context(), e.human, "first", map[string]any{"i": -1.0})
	st.held(t)

	const n = 50
	outs := make([]<-chan published, n)
	for i := range n {
		outs[i] = e.publishAsync(t.Context(), e.human, "burst", map[string]any{"i": float64(i)})
	}
	e.queued(n)
	st.let()
	p := outcome(t, first)
	require.NoError(t, p.err)
	firstID := p.resp.GetId()
	ids := make([]int64, n)
	for i, out := range outs {
		p = outcome(t, out)
		require.NoError(t, p.err)
		ids[i] = p.resp.GetId()
		channel, got := e.rowOf(ids[i])
		require.Equal(t, "burst", channel)
		require.InDelta(t, float64(i), got, 0, "caller %d got the id of its own row", i)
	}
	require.Equal(t, []int{1, n}, st.seen(), "the held publish alone, then all the others in one statement")
	sorted := slices.Sorted(slices.Values(ids))
	require.Len(t, slices.Compact(slices.Clone(sorted)), n, "distinct ids")

	require.Equal(t, firstID, sub.next(t).GetId())
	for _, want := range sorted {
		require.Equal(t, want, sub.next(t).GetId())
	}
	count, sum := histogram(t, reg, "switchboard_groupcommit_batch_size", "realtime-group-commit")
	require.Equal(t, uint64(2), count)
	require.InDelta(t, float64(1+n), sum, 0)
}

// TestMergedPublishesTakeIdsInQueueOrder: publishes queued one after the
// other share one transaction and get ascending ids in the order they
// queued, the newest id the last.
func TestMergedPublishesTakeIdsInQueueOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	st := holdFirstStatement(t, e.srv)
	first := e.publishAsync(t.Context(), e.human, "first", map[string]any{"i": -1.0})
	st.held(t)
	const n = 20
	outs := make([]<-chan published, n)
	for i := range n {
		outs[i] = e.publishAsync(t.Context(), e.human, "ordered", map[string]any{"i": float64(i)})
		e.queued(i + 1) // one at a time: the queue order is known
	}
	st.let()
	p := outcome(t, first)
	require.NoError(t, p.err)
	prev := p.resp.GetId()
	var at time.Time
	for i, out := range outs {
		p = outcome(t, out)
		require.NoError(t, p.err)
		require.Greater(t, p.resp.GetId(), prev, "queue order")
		prev = p.resp.GetId()
		_, got := e.rowOf(prev)
		require.InDelta(t, float64(i), got, 0)
		if i == 0 {
			at = p.resp.GetCreatedAt().AsTime()
		}
		require.Equal(t, at, p.resp.GetCreatedAt().AsTime(), "one transaction: one now()")
	}
	require.Equal(t, []int{1, n}, st.seen())
}

// histogram is the sample count and sum of the series of name whose
// batcher label is batcher.
func histogram(t *testing.T, r *metrics.Registry, name, batcher string) (uint64, float64) {
	t.Helper()
	fams, err := r.Gatherer().Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "batcher" && l.GetValue() == batcher {
					return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	t.Fatalf("no %s{batcher=%q}", name, batcher)
	return 0, 0
}
