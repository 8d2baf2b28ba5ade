package pgnotify

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// closeTimeout bounds the goodbye on a listen connection being dropped: a
// dead server must not hold Stop.
const closeTimeout = time.Second

// listen keeps the listen connection up until ctx ends, reconnecting with
// exponential backoff. With nothing subscribed it holds no connection.
func (n *Notifier) listen(ctx context.Context) {
	n.mu.Lock()
	subs := n.subs // frozen: Subscribe refuses once started
	n.mu.Unlock()
	if len(subs) == 0 {
		return
	}
	delay := n.opts.ReconnectMin
	for {
		connected, err := n.session(ctx, subs)
		if ctx.Err() != nil {
			return
		}
		if connected {
			delay = n.opts.ReconnectMin
		}
		n.log.Warn("listen connection lost; reconnecting", zap.Error(err),
			zap.Bool("was_connected", connected), zap.Duration("retry_in", delay))
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(delay*2, n.opts.ReconnectMax)
	}
}

// session runs one listen connection: it takes a pool connection and
// hijacks it (a session with LISTENs must never go back to the pool), listens
// to every subscribed channel, tells the subscribers it is connected, then
// dispatches notifications until ctx ends or the connection fails.
// connected reports whether it got as far as the subscribers' OnConnect.
func (n *Notifier) session(ctx context.Context, subs map[string][]Subscriber) (connected bool, err error) {
	conn, err := n.pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("acquire listen connection: %w", err)
	}
	raw := conn.Hijack()
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		_ = raw.Close(cctx) // the session ends either way
	}()

	// One round trip for every channel. LISTEN takes an identifier, not a
	// parameter: quoted, so the name is exactly the one pg_notify uses.
	channels := slices.Sorted(maps.Keys(subs))
	stmts := make([]string, len(channels))
	for i, c := range channels {
		stmts[i] = "LISTEN " + pgx.Identifier{c}.Sanitize()
	}
	if _, err := raw.Exec(ctx, strings.Join(stmts, "; ")); err != nil {
		return false, fmt.Errorf("listen to %s: %w", strings.Join(channels, ", "), err)
	}
	n.pid.Store(raw.PgConn().PID())
	defer n.pid.Store(0)
	for _, c := range channels {
		for _, s := range subs[c] {
			if s.OnConnect != nil {
				s.OnConnect()
			}
		}
	}
	for {
		msg, err := raw.WaitForNotification(ctx)
		if err != nil {
			return true, fmt.Errorf("wait for notification: %w", err)
		}
		for _, s := range subs[msg.Channel] {
			s.OnNotify(msg.Payload)
		}
	}
}
