package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/types/known/structpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/worker"
)

// A stored context as a node would hand it out: trace 0af7…, span b7ad….
const (
	storedTraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	storedTraceID     = "0af7651916cd43dd8448eb211c80319c"
	storedSpanID      = "b7ad6b7169203331"
)

// addTraced enqueues one todo per trace parent, carrying it.
func (f *fakeQueue) addTraced(traceParents ...string) []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []int64
	for _, tp := range traceParents {
		f.nextID++
		p, _ := structpb.NewStruct(map[string]any{})
		f.todos[f.nextID] = &fakeTodo{
			todo: &queuev1.Todo{
				Id: f.nextID, Queue: "q", Kind: "k", Payload: p, State: queuev1.TodoState_TODO_STATE_PENDING, TraceParent: tp,
			},
			state: queuev1.TodoState_TODO_STATE_PENDING,
		}
		f.pending = append(f.pending, f.nextID)
		ids = append(ids, f.nextID)
	}
	close(f.wake)
	f.wake = make(chan struct{})
	return ids
}

// tracedWorker runs a worker over f whose spans (its own and its
// connection's) go to the returned in-memory exporter.
func tracedWorker(t *testing.T, f *fakeQueue, h worker.Handler, o worker.Options) (*worker.Worker, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.WithoutCancel(t.Context())) })
	conn, err := worker.Dial([]string{f.node(t).addr}, worker.DialOptions{TracerProvider: tp})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	o.TracerProvider, o.Wait = tp, time.Second
	w := worker.New(conn, "q", h, o)
	start(t, w)
	return w, exp
}

// spanOf returns the exported span named name whose attribute key is v.
func spanOf(exp *tracetest.InMemoryExporter, name string, key attribute.Key, v int64) (tracetest.SpanStub, bool) {
	for _, s := range exp.GetSpans() {
		if s.Name != name {
			continue
		}
		for _, a := range s.Attributes {
			if a.Key == key && a.Value.AsInt64() == v {
				return s, true
			}
		}
	}
	return tracetest.SpanStub{}, false
}

// childOf returns the exported span named name whose parent is parent.
func childOf(exp *tracetest.InMemoryExporter, name string, parent trace.SpanContext) (tracetest.SpanStub, bool) {
	for _, s := range exp.GetSpans() {
		if s.Name == name && s.Parent.SpanID() == parent.SpanID() && s.Parent.TraceID() == parent.TraceID() {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

func TestHandlerSpanJoinsTheTodosTrace(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	seen := make(chan trace.SpanContext, 1)
	w, exp := tracedWorker(t, f, func(ctx context.Context, _ *queuev1.Todo) error {
		seen <- trace.SpanContextFromContext(ctx)
		return nil
	}, worker.Options{Concurrency: 1, AckDelay: worker.NoAckDelay})
	ids := f.addTraced(storedTraceParent)
	handlerTrace := <-seen
	require.Eventually(t, func() bool { return w.Stats().Completed == 1 }, waitFor, tick)

	span, ok := spanOf(exp, "process q", "switchboard.todo.id", ids[0])
	require.True(t, ok, "the handler's span is exported")
	require.Equal(t, handlerTrace.SpanID(), span.SpanContext.SpanID(), "the handler runs in its span")
	require.Equal(t, trace.SpanKindConsumer, span.SpanKind)
	require.Equal(t, storedTraceID, span.SpanContext.TraceID().String(), "in the todo's trace")
	require.Equal(t, storedSpanID, span.Parent.SpanID().String(), "the child of the stored context")
	require.True(t, span.Parent.IsRemote())
	require.Len(t, span.Links, 1)
	require.Equal(t, storedSpanID, span.Links[0].SpanContext.SpanID().String(), "and linked to it")
	attrs := attribute.NewSet(span.Attributes...)
	for k, want := range map[attribute.Key]attribute.Value{
		"switchboard.queue": attribute.StringValue("q"), "switchboard.todo.attempt": attribute.IntValue(1),
		"switchboard.todo.kind": attribute.StringValue("k"), "switchboard.todo.result": attribute.StringValue("success"),
	} {
		got, ok := attrs.Value(k)
		require.True(t, ok, k)
		require.Equal(t, want, got, k)
	}
	require.Equal(t, otelcodes.Unset, span.Status.Code)

	rpc, ok := childOf(exp, "switchboard.queue.v1.QueueService/CompleteBatch", span.SpanContext)
	require.True(t, ok, "the CompleteBatch call is the child of the handler's span: %v", spanNames(exp))
	require.Equal(t, trace.SpanKindClient, rpc.SpanKind)
}

func TestFailedHandlerSpanHasErrorStatusAndParentsTheFail(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	w, exp := tracedWorker(t, f, func(context.Context, *queuev1.Todo) error {
		return worker.Permanent(errors.New("no such customer"))
	}, worker.Options{Concurrency: 1})
	ids := f.addTraced(storedTraceParent)
	require.Eventually(t, func() bool { return w.Stats().DeadLettered == 1 }, waitFor, tick)

	span, ok := spanOf(exp, "process q", "switchboard.todo.id", ids[0])
	require.True(t, ok)
	require.Equal(t, otelcodes.Error, span.Status.Code)
	require.Contains(t, span.Status.Description, "no such customer")
	attrs := attribute.NewSet(span.Attributes...)
	result, _ := attrs.Value("switchboard.todo.result")
	require.Equal(t, "permanent_error", result.AsString())
	_, ok = childOf(exp, "switchboard.queue.v1.QueueService/Fail", span.SpanContext)
	require.True(t, ok, "the Fail call is the child of the handler's span: %v", spanNames(exp))
}

func TestMalformedOrMissingTraceParentStartsANewTrace(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	w, exp := tracedWorker(t, f, func(context.Context, *queuev1.Todo) error { return nil }, worker.Options{Concurrency: 1})
	ids := f.addTraced("00-not-a-trace-01", "")
	require.Eventually(t, func() bool { return w.Stats().Completed == 2 }, waitFor, tick)
	for _, id := range ids {
		span, ok := spanOf(exp, "process q", "switchboard.todo.id", id)
		require.True(t, ok)
		require.False(t, span.Parent.IsValid(), "a root span")
		require.Empty(t, span.Links)
		require.True(t, span.SpanContext.IsValid())
	}
}

func TestBatchedCompleteLinksEveryHandlerSpan(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	w, exp := tracedWorker(t, f, func(context.Context, *queuev1.Todo) error { return nil },
		worker.Options{Concurrency: 2, AckBatch: 2, AckDelay: time.Second})
	ids := f.addTraced(storedTraceParent, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	require.Eventually(t, func() bool { return w.Stats().Completed == 2 }, waitFor, tick)
	require.Len(t, f.record().completeBatches, 1, "both completions went in one CompleteBatch")

	a, okA := spanOf(exp, "process q", "switchboard.todo.id", ids[0])
	b, okB := spanOf(exp, "process q", "switchboard.todo.id", ids[1])
	require.True(t, okA && okB)
	var batch tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "complete" {
			batch = s
		}
	}
	require.True(t, batch.SpanContext.IsValid(), "a span stands for the batch: %v", spanNames(exp))
	handlers := map[trace.SpanID]bool{a.SpanContext.SpanID(): true, b.SpanContext.SpanID(): true}
	require.True(t, handlers[batch.Parent.SpanID()], "the batch is the child of one handler's span")
	require.Len(t, batch.Links, 1)
	require.True(t, handlers[batch.Links[0].SpanContext.SpanID()], "and linked to the other's")
	require.NotEqual(t, batch.Parent.SpanID(), batch.Links[0].SpanContext.SpanID())
	_, ok := childOf(exp, "switchboard.queue.v1.QueueService/CompleteBatch", batch.SpanContext)
	require.True(t, ok, "the call is the child of the batch's span")
}

// spanNames lists the exported spans' names, for failure messages.
func spanNames(exp *tracetest.InMemoryExporter) []string {
	var out []string
	for _, s := range exp.GetSpans() {
		out = append(out, s.Name)
	}
	return out
}
