//go:build integration

package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc/metadata"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/pkg/worker"
	"github.com/switchboard/switchboard/services/node"
)

// The caller's trace, as a client or a webhook provider sends it.
const (
	callerTraceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpanID      = "00f067aa0ba902b7"
	callerTraceParent = "00-" + callerTraceID + "-" + callerSpanID + "-01"
)

// tracer is a TracerProvider exporting into exp, its spans marked with
// service.instance.id = who (a node or the worker).
func tracer(t *testing.T, exp *tracetest.InMemoryExporter, who string) trace.TracerProvider {
	t.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.instance.id", who))))
	t.Cleanup(func() { _ = tp.Shutdown(context.WithoutCancel(t.Context())) })
	return tp
}

// named returns a tweak that names the node.
func named(id string) func(*config.Config) { return func(c *config.Config) { c.Cluster.NodeID = id } }

// spanWhere waits for the span exported by who named name that match
// accepts.
func spanWhere(t *testing.T, exp *tracetest.InMemoryExporter, who, name string, match func(tracetest.SpanStub) bool) tracetest.SpanStub {
	t.Helper()
	var found tracetest.SpanStub
	require.Eventually(t, func() bool {
		for _, s := range exp.GetSpans() {
			inst, _ := s.Resource.Set().Value("service.instance.id")
			if inst.AsString() == who && s.Name == name && match(s) {
				found = s
				return true
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond, "no span %q from %s among %d", name, who, len(exp.GetSpans()))
	return found
}

func childOfSpan(parent trace.SpanContext) func(tracetest.SpanStub) bool {
	return func(s tracetest.SpanStub) bool {
		return s.Parent.TraceID() == parent.TraceID() && s.Parent.SpanID() == parent.SpanID()
	}
}

// TestTraceFollowsAWebhookToItsWorkerAcrossTwoNodes: a webhook posted to
// node A with a traceparent, its todo claimed and completed by an SDK
// worker through node B, is one trace: A's webhook span is the child of
// the provider's span, the todo stores the webhook span's context, the
// worker's handler span is that context's child (and linked to it), and
// B's CompleteBatch span is the child of the worker's call, the child of
// the handler span.
func TestTraceFollowsAWebhookToItsWorkerAcrossTwoNodes(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	exp := tracetest.NewInMemoryExporter()
	a := setupFull(t, "admin,ingest", db, named("trace-a"), node.WithTracerProvider(tracer(t, exp, "A")))
	b := setupFull(t, "queue", db, named("trace-b"), node.WithTracerProvider(tracer(t, exp, "B")))

	admin := adminv1.NewAdminServiceClient(a.conn)
	ep, err := admin.CreateEndpoint(t.Context(), &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Name: "traced", Queue: "traced", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE,
	}})
	require.NoError(t, err)
	agent, err := admin.CreateAgent(t.Context(), &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{Name: "worker"}})
	require.NoError(t, err)
	cred, err := admin.MintCredential(t.Context(), &adminv1.MintCredentialRequest{
		AgentId: agent.GetAgent().GetId(), Scopes: []string{"agent"}, Name: "worker",
	})
	require.NoError(t, err)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
		"http://"+a.node.HTTPAddr()+"/hooks/"+ep.GetEndpoint().GetSlug(), strings.NewReader(`{"type":"invoice.paid"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", callerTraceParent)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// The worker claims from B only, and traces into the same exporter.
	tpW := tracer(t, exp, "worker")
	conn, err := worker.Dial([]string{b.node.GRPCAddr()}, worker.DialOptions{Token: cred.GetToken(), AllowInsecure: true, TracerProvider: tpW})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	claimed := make(chan *queuev1.Todo, 1)
	logs, observed := observer.New(zap.WarnLevel)
	w := worker.New(conn, "traced", func(_ context.Context, td *queuev1.Todo) error {
		claimed <- td
		return nil
	}, worker.Options{TracerProvider: tpW, AckDelay: worker.NoAckDelay, Wait: time.Second, Logger: zap.New(logs)})
	stop := start(t, w)
	var todo *queuev1.Todo
	select { // a bound, so that a worker that never reaches B fails here, with its state, rather than hanging the binary
	case todo = <-claimed:
	case <-time.After(2 * time.Minute):
		bEnded, bErr := b.ran()
		var warned []string
		for _, e := range observed.TakeAll() {
			warned = append(warned, fmt.Sprintf("%s %v", e.Message, e.ContextMap()))
		}
		t.Fatalf("no todo claimed from B: worker %+v, connection %v; B's Run ended: %t (%v); the worker's warnings: %q",
			w.Stats(), conn.GetState(), bEnded, bErr, warned[max(0, len(warned)-5):])
	}
	require.Eventually(t, func() bool { return w.Stats().Completed == 1 }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, stop())

	hook := spanWhere(t, exp, "A", "POST /hooks/{slug}", func(s tracetest.SpanStub) bool { return true })
	require.Equal(t, callerTraceID, hook.SpanContext.TraceID().String(), "the webhook continues the provider's trace")
	require.Equal(t, callerSpanID, hook.Parent.SpanID().String(), "as the child of the provider's span")
	require.Equal(t, "00-"+callerTraceID+"-"+hook.SpanContext.SpanID().String()+"-01", todo.GetTraceParent(),
		"the todo carries the webhook span's context")

	handler := spanWhere(t, exp, "worker", "process traced", childOfSpan(hook.SpanContext))
	require.Equal(t, trace.SpanKindConsumer, handler.SpanKind)
	require.Len(t, handler.Links, 1)
	require.Equal(t, hook.SpanContext.SpanID(), handler.Links[0].SpanContext.SpanID(), "linked to the stored context")

	call := spanWhere(t, exp, "worker", "switchboard.queue.v1.QueueService/CompleteBatch", childOfSpan(handler.SpanContext))
	require.Equal(t, trace.SpanKindClient, call.SpanKind)
	served := spanWhere(t, exp, "B", "switchboard.queue.v1.QueueService/CompleteBatch", childOfSpan(call.SpanContext))
	require.Equal(t, trace.SpanKindServer, served.SpanKind)
	require.Equal(t, callerTraceID, served.SpanContext.TraceID().String(), "one trace from the provider to B's Complete")
}

// start runs w until the returned stop is called; stop returns Run's error.
func start(t *testing.T, w *worker.Worker) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cancel()
			require.NoError(t, <-errc)
		}
	})
	return func() error { stopped = true; cancel(); return <-errc }
}

// TestEnqueueAndPublishStoreTheCallersTrace: an Enqueue or a PublishEvent
// that sends a traceparent in its metadata creates a todo carrying the
// node's server span in that trace; a malformed one is ignored (a new
// trace, the call succeeds).
func TestEnqueueAndPublishStoreTheCallersTrace(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	b := setupFull(t, "ingest,queue", pgtest.NewDatabase(t), func(*config.Config) {}, node.WithTracerProvider(tracer(t, exp, "A")))
	q, in := queuev1.NewQueueServiceClient(b.conn), ingestv1.NewIngestServiceClient(b.conn)
	with := func(tp string) context.Context {
		return metadata.AppendToOutgoingContext(t.Context(), "traceparent", tp)
	}

	enq, err := q.Enqueue(with(callerTraceParent), &queuev1.EnqueueRequest{Queue: "q", Kind: "k"})
	require.NoError(t, err)
	rpc := spanWhere(t, exp, "A", "switchboard.queue.v1.QueueService/Enqueue", func(tracetest.SpanStub) bool { return true })
	require.Equal(t, callerSpanID, rpc.Parent.SpanID().String(), "the server span continues the caller's trace")
	require.Equal(t, "00-"+callerTraceID+"-"+rpc.SpanContext.SpanID().String()+"-01", enq.GetTodo().GetTraceParent())
	got, err := q.GetTodo(t.Context(), &queuev1.GetTodoRequest{Id: enq.GetTodo().GetId()})
	require.NoError(t, err)
	require.Equal(t, enq.GetTodo().GetTraceParent(), got.GetTodo().GetTraceParent(), "stored, not only answered")

	pub, err := in.PublishEvent(with(callerTraceParent), &ingestv1.PublishEventRequest{Topic: "t", Queue: "q"})
	require.NoError(t, err)
	pubSpan := spanWhere(t, exp, "A", "switchboard.ingest.v1.IngestService/PublishEvent", func(tracetest.SpanStub) bool { return true })
	got, err = q.GetTodo(t.Context(), &queuev1.GetTodoRequest{Id: pub.GetTodoId()})
	require.NoError(t, err)
	require.Equal(t, "00-"+callerTraceID+"-"+pubSpan.SpanContext.SpanID().String()+"-01", got.GetTodo().GetTraceParent(),
		"a published event's todo carries the PublishEvent's span")

	bad, err := q.Enqueue(with("00-"+callerTraceID+"-nothex-01"), &queuev1.EnqueueRequest{Queue: "q", Kind: "k"})
	require.NoError(t, err, "a malformed traceparent is no error")
	require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, bad.GetTodo().GetTraceParent())
	require.NotContains(t, bad.GetTodo().GetTraceParent(), callerTraceID, "a malformed traceparent is dropped: a trace of its own")
	for _, s := range exp.GetSpans() {
		require.NotContains(t, s.Name, "grpc.health.v1", "health checks (setup waited for SERVING with them) are not traced")
	}
}

// TestTracingOffKeepsTheCallersTrace: a node without OTEL_* variables
// (tests set none) makes no spans, but a todo still stores the caller's
// valid traceparent, over gRPC and through the REST edge (the gateway's
// upstream call carries it), so a worker can continue the caller's trace
// whatever the node's settings. A malformed one is dropped.
func TestTracingOffKeepsTheCallersTrace(t *testing.T) {
	t.Parallel()
	b := setup(t, "gateway,queue")
	q := queuev1.NewQueueServiceClient(b.conn)
	for tp, want := range map[string]string{callerTraceParent: callerTraceParent, "00-" + callerTraceID + "-nothex-01": ""} {
		enq, err := q.Enqueue(metadata.AppendToOutgoingContext(t.Context(), "traceparent", tp), &queuev1.EnqueueRequest{Queue: "q", Kind: "k"})
		require.NoError(t, err)
		require.Equal(t, want, enq.GetTodo().GetTraceParent(), "gRPC, traceparent %s", tp)
	}

	stored := restEnqueue(t, b, callerTraceParent)
	require.Equal(t, callerTraceParent, stored, "REST")
}

// TestRESTEdgeContinuesTheCallersTrace: a REST call with a traceparent is
// the child of the caller's span at the HTTP edge, the gateway's upstream
// call is the child of that, and the todo it enqueues carries the trace.
func TestRESTEdgeContinuesTheCallersTrace(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	b := setupFull(t, "gateway,queue", pgtest.NewDatabase(t), func(*config.Config) {}, node.WithTracerProvider(tracer(t, exp, "A")))
	stored := restEnqueue(t, b, callerTraceParent)

	edge := spanWhere(t, exp, "A", "POST /", func(s tracetest.SpanStub) bool { return s.Parent.SpanID().String() == callerSpanID })
	call := spanWhere(t, exp, "A", "switchboard.queue.v1.QueueService/Enqueue", func(s tracetest.SpanStub) bool {
		return s.SpanKind == trace.SpanKindClient && childOfSpan(edge.SpanContext)(s)
	})
	served := spanWhere(t, exp, "A", "switchboard.queue.v1.QueueService/Enqueue", func(s tracetest.SpanStub) bool {
		return s.SpanKind == trace.SpanKindServer && childOfSpan(call.SpanContext)(s)
	})
	require.Equal(t, "00-"+callerTraceID+"-"+served.SpanContext.SpanID().String()+"-01", stored)
}

// restEnqueue enqueues a todo through b's REST edge with traceparent and
// returns the trace_parent the answer says the todo stored.
func restEnqueue(t *testing.T, b *testBundle, traceparent string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+b.node.HTTPAddr()+"/api/queues/q/todos",
		strings.NewReader(`{"kind":"k"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", traceparent)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close() //nolint:errcheck // read to the end below
	var body struct {
		Todo struct {
			TraceParent string `json:"trace_parent"`
		} `json:"todo"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return body.Todo.TraceParent
}
