package ingest

import (
	"context"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/groupcommit"
	"github.com/switchboard/switchboard/services/ingest/internal/store"
)

// maxBatch bounds one group-commit statement.
const maxBatch = 500

// flushers is how many group-commit statements run at once: one. Two keep
// the database busy while a batch waits for its commit (a quarter more
// deliveries/s at 16 in flight on a machine loaded by other work), but on a
// quiet 2-core machine one flush, with batches twice as large, stored more:
// 6,468 against 4,595 deliveries/s on average, winning 4 of 5 interleaved
// runs of deploy/local/bench-ingest.sh (README). The database's cost per
// event falls with the batch; that is what is scarce when the node and the
// database share the cores.
const flushers = 1

// batcher is the group commit of the webhook edge: concurrent requests for
// one endpoint share one statement (store.Ingest) and so one commit,
// and each request is answered after the commit that carried its event.
// The window is zero: a lone request is flushed at once, and requests
// arriving while the flushes run (flushers at a time) share the next one,
// so batches grow with load and cost nothing when it is light. Two
// statements may carry the same delivery id at once: the unique index makes
// the later one wait for the first's commit and store nothing. A failed batch is retried item by
// item, so one bad event never fails another request; each sent batch, its
// retries included, ends within storeTimeout. Before Start and after Stop
// every call runs on its own. See pkg/groupcommit.
type batcher struct {
	*groupcommit.Batcher[batchKey, store.Event, store.Stored]
	st *store.Store
}

// batchKey is what the events of one statement share.
type batchKey struct {
	human, endpoint uuid.UUID
	queue, kind     string
	kindFromTopic   bool
	agent           uuid.UUID // uuid.Nil: none
	// routed, for an endpoint with routes, is the routes the events
	// matched (queue and agent are then unused; see ingestTo).
	routed routeSet
}

func (k batchKey) target() store.Target {
	t := store.Target{Queue: k.queue, Kind: k.kind, KindFromTopic: k.kindFromTopic}
	if k.agent != uuid.Nil {
		t.AgentID = &k.agent
	}
	return t
}

func newBatcher(st *store.Store, onFlush func(int)) *batcher {
	exec := func(ctx context.Context, k batchKey, events []store.Event) ([]store.Stored, error) {
		if k.routed.of != nil {
			return st.Ingest(ctx, events, k.routed.targets()...)
		}
		return st.Ingest(ctx, events, k.target())
	}
	return &batcher{
		Batcher: groupcommit.New(Name+"-group-commit", exec, groupcommit.Options[store.Event]{MaxItems: maxBatch, Timeout: storeTimeout, OnFlush: onFlush, Flushers: flushers}),
		st:      st,
	}
}

// ingestOne stores e alone (store.Ingest of one event) with a todo in each
// of targets.
func ingestOne(ctx context.Context, st *store.Store, e store.Event, targets ...store.Target) (store.Stored, error) {
	res, err := st.Ingest(ctx, []store.Event{e}, targets...)
	if err != nil {
		return store.Stored{}, err
	}
	return res[0], nil
}

// ingest stores e for target t, sharing a statement with concurrent calls
// for the same endpoint and target when the batcher runs.
func (b *batcher) ingest(ctx context.Context, e store.Event, t store.Target) (store.Stored, error) {
	// Body-hash dedup runs under a lock in its own transaction, and a todo
	// payload is not part of the key: such events go on their own.
	if e.BodySHA256 != nil || e.EndpointID == nil || t.Payload != nil {
		return ingestOne(ctx, b.st, e, t)
	}
	k := batchKey{human: e.HumanID, endpoint: *e.EndpointID, queue: t.Queue, kind: t.Kind, kindFromTopic: t.KindFromTopic}
	if t.AgentID != nil {
		k.agent = *t.AgentID
	}
	return b.Do(ctx, k, e)
}
