// Package ingest stores inbound events durably and deduped (published events,
// verified webhooks, pull adapters) and turns them into todos.
//
// The webhook edge (HookHandler, POST /hooks/{slug}) verifies each request
// against its endpoint's secrets, then stores the event and its todo in one
// transaction and answers 2xx only after the commit; providers' handshakes
// (GET or POST) are answered there and never stored. PublishEvent does the
// same for producers over gRPC; GetEvent and ListEvents read the history.
// Every read and write is scoped to the caller's tenant in SQL.
package ingest

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	"github.com/switchboard/switchboard/pkg/metrics"
	"github.com/switchboard/switchboard/pkg/ratelimit"
	"github.com/switchboard/switchboard/pkg/secretbox"
	"github.com/switchboard/switchboard/services/ingest/internal/store"
	"github.com/switchboard/switchboard/services/ingest/sources"
	"github.com/switchboard/switchboard/services/queue"
)

// Name is the service's name in `switchboard serve` and in logs.
const Name = "ingest"

// Options wires the service to the rest of the node.
type Options struct {
	// SealingKeys opens the endpoint secrets (config.Ingest.SealingKeys).
	SealingKeys *secretbox.Keyring
	// Todos is the node's writer of todos (queue.NewTodos): an event's todo
	// is inserted through it in the event's transaction, and announced
	// through it after the commit like any other. Default: a writer of the
	// service's own without a notifier (it wakes this process's claims only;
	// for tests).
	Todos *queue.Todos
	// Sources reads the endpoints and adapters (the node's one store of
	// them, given the node's notifier, so a change made on any node reaches
	// this one's endpoint cache at once); pull adapters connect through its
	// allow list. Default: one of the service's own over the pool, which
	// hears only of its own changes and whose allow list allows nothing.
	Sources *sources.Store
	// NodeID, when set, makes the node run its consumer of every enabled
	// pull adapter (named after the node), reconciled with the adapters
	// table every AdapterInterval (default 10 s) and whenever Sources
	// announces an adapter change. Empty: no adapters run.
	NodeID          string
	AdapterInterval time.Duration
	// HotPool, when set, runs the event write statement (see store.New).
	HotPool *pgxpool.Pool
	// Received, when set, is told of every newly stored event after its
	// commit (the node publishes it as a realtime lifecycle event). It must
	// not block.
	Received func(Received)
	// Metrics, when set, is the node's registry: deliveries, the group
	// commit's batch sizes and the adapters' lag. Nil records nothing.
	Metrics *metrics.Registry
}

// Received is a newly stored event, as Options.Received reports it.
type Received struct {
	HumanID uuid.UUID
	// AgentID is the agent the event is for (nil: the tenant's shared
	// work): only it, among the tenant's agents, hears of the event.
	AgentID         *uuid.UUID
	EventID, TodoID int64
	Source, Topic   string
}

// Server implements ingestv1.IngestServiceServer and the webhook edge.
type Server struct {
	ingestv1.UnimplementedIngestServiceServer

	log       *zap.Logger
	store     *store.Store
	todos     *queue.Todos
	sources   *sources.Store
	opts      Options
	endpoints *endpoints
	limits    *ratelimit.Buckets[uuid.UUID] // per endpoint and per tenant (their ids never meet)
	batcher   *batcher
	adapters  *adapterRunner // nil without Options.NodeID
	// deliveries is the webhook endpoints' delivery log writer.
	deliveries *deliveryLog
	// onRouteFilters, when set (tests), is told what each delivery's route
	// filters spent of their budget and where it ran out.
	onRouteFilters func(spent uint64, stop *sources.FilterStop)
}

// New returns the ingest service over pool.
func New(log *zap.Logger, pool *pgxpool.Pool, opts Options) *Server {
	todos := opts.Todos
	if todos == nil {
		todos = queue.NewTodos(pool, nil, queue.TodosOptions{HotPool: opts.HotPool})
	}
	st := store.New(pool, opts.HotPool, todos)
	src := opts.Sources
	if src == nil {
		src = sources.New(pool, opts.SealingKeys, nil)
	}
	s := &Server{
		log: log, store: st, todos: todos, sources: src, opts: opts, endpoints: newEndpoints(src), limits: ratelimit.New[uuid.UUID](),
		batcher:    newBatcher(st, opts.Metrics.GroupCommitObserver(Name+"-group-commit")),
		deliveries: newDeliveryLog(log, st),
	}
	if err := src.OnEndpointChange(s.endpoints.forget); err != nil {
		// Only a wiring bug gets here (the node builds its services before
		// it starts the notifier), and New has no error to return.
		panic(fmt.Sprintf("ingest: %v", err))
	}
	if opts.NodeID != "" {
		interval := opts.AdapterInterval
		if interval <= 0 {
			interval = defaultAdapterInterval
		}
		s.adapters = newAdapterRunner(s, opts.NodeID, interval)
		// An adapter created, changed or deleted on any node reconciles
		// now; the interval catches what a lost notification missed.
		if err := src.OnAdapterChange(func(string) { s.adapters.loop.Wake() }); err != nil {
			panic(fmt.Sprintf("ingest: %v", err)) // a wiring bug, as above
		}
	}
	return s
}

// Desc is the gRPC service descriptor Server implements.
func (s *Server) Desc() *grpc.ServiceDesc { return &ingestv1.IngestService_ServiceDesc }

// received reports a stored event to Options.Received and announces its
// todos, each in its queue (after their commit).
func (s *Server) received(e store.Event, st store.Stored) {
	if st.Duplicate {
		return
	}
	for _, td := range st.Todos {
		s.todos.Committed(e.HumanID, td.Queue, []queue.EventTodo{td.Todo})
	}
	if s.opts.Received != nil {
		s.opts.Received(Received{HumanID: e.HumanID, AgentID: e.AgentID, EventID: st.EventID, TodoID: st.TodoID(), Source: e.Source, Topic: e.Topic})
	}
}
