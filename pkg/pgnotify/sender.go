package pgnotify

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/pgnotify/internal/dbsqlc"
)

// flush is the one goroutine that sends: whenever something is due it sends
// all of it (in statements of at most MaxPerStatement), then looks again at
// once, so payloads queued while a statement ran go out in the next one;
// otherwise it sleeps until the next coalescer is due or a mark or send
// wakes it.
func (n *Notifier) flush(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var b batch
	for ctx.Err() == nil {
		b.reset()
		now := n.out.now()
		next := n.out.collect(now, &b)
		if len(b.channels) > 0 {
			n.send(ctx, &b)
			continue
		}
		var due <-chan time.Time
		if !next.IsZero() {
			timer.Reset(next.Sub(now))
			due = timer.C
		}
		select {
		case <-ctx.Done():
		case <-n.out.kick:
		case <-due:
		}
		timer.Stop() // since Go 1.23 no stale tick survives Stop or Reset
	}
}

// send sends b in order, MaxPerStatement notifications per statement, each
// statement on its own (autocommit, outside any write transaction). A failed
// statement is logged and not retried: the receivers poll, and a retry would
// only delay the notifications behind it.
func (n *Notifier) send(ctx context.Context, b *batch) {
	for start := 0; start < len(b.channels); start += n.opts.MaxPerStatement {
		end := min(start+n.opts.MaxPerStatement, len(b.channels))
		sctx, cancel := context.WithTimeout(ctx, n.opts.SendTimeout)
		err := n.q.Notify(sctx, n.pool, dbsqlc.NotifyParams{Channels: b.channels[start:end], Payloads: b.payloads[start:end]})
		cancel()
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return // stopping: what is left is dropped, as documented
		}
		for _, q := range b.from[start:end] {
			if q != nil {
				q.dropped.Add(1)
			}
		}
		n.log.Warn("notify failed; notifications dropped (receivers fall back to polling)",
			zap.Int("count", end-start), zap.Error(err))
	}
}
