package realtime

import (
	"context"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/realtime/internal/store"
)

// notifyBatch is how many ephemeral events one NOTIFY statement carries at
// most (each is its own notification; one round trip for all).
const notifyBatch = 100

// notifyTransport is phase 1: each ephemeral event travels inside a
// pg_notify payload to every node LISTENing (relay.listen receives them).
// Nothing is stored, and a node that is not listening at that moment never
// sees it. send only queues: a sender loop batches queued events into
// one statement, and a full queue drops (ephemeral delivery is best effort;
// the publisher is never held up by Postgres).
type notifyTransport struct {
	log     *zap.Logger
	store   *store.Store
	queue   chan string
	dropped atomic.Int64
}

func newNotifyTransport(log *zap.Logger, st *store.Store, size int) *notifyTransport {
	return &notifyTransport{log: log, store: st, queue: make(chan string, size)}
}

// send queues an encoded event (wire.Ephemeral as JSON, at most
// maxNotifyPayload bytes: publishEphemeral encodes and checks it once).
func (t *notifyTransport) send(payload []byte) {
	select {
	case t.queue <- string(payload):
	default:
		if t.dropped.Add(1)%1000 == 1 {
			t.log.Warn("ephemeral NOTIFY queue full; dropping events", zap.Int64("dropped_total", t.dropped.Load()))
		}
	}
}

func (t *notifyTransport) run(ctx context.Context) {
	batch := make([]string, 0, notifyBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-t.queue:
			batch = append(batch[:0], p)
		}
	fill:
		for len(batch) < notifyBatch {
			select {
			case p := <-t.queue:
				batch = append(batch, p)
			default:
				break fill
			}
		}
		if err := t.store.Notify(ctx, ephemeralChannel, batch); err != nil && ctx.Err() == nil {
			t.dropped.Add(int64(len(batch)))
			t.log.Warn("ephemeral NOTIFY failed; events dropped", zap.Int("count", len(batch)), zap.Error(err))
		}
	}
}
