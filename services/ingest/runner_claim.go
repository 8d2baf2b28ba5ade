package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
	"github.com/switchboard/switchboard/services/ingest/internal/adapter/redisstream"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// probeParallel bounds the probes of one claim running at once.
const probeParallel = 8

// serverCheck is a running adapter's redisstream Config.OnServer: before a
// new connection reads anything, the server it reached is claimed for the
// adapter (sources.ClaimServer), so an adapter whose addr reaches a stream
// another owner's adapter reads, however it is addressed and whatever DNS
// says now, reads nothing and says so in its last_error.
type serverCheck struct {
	r   *adapterRunner
	id  uuid.UUID
	cfg redisstream.StoredConfig
	// claimed is when the last claim succeeded (unix nanoseconds; 0:
	// never), for reconcile to tell a record taken since from one not yet
	// written.
	claimed atomic.Int64
}

func (c *serverCheck) check(ctx context.Context, srv redisstream.Server) error {
	if !srv.Addr.IsValid() {
		// The allow list's dialer always says; anything else is a bug, and
		// the adapter does not read what it cannot place.
		return errors.New("the address dialed is unknown")
	}
	src := c.r.s.sources
	serverKey, addrKey := c.cfg.ServerKey(srv.RunID), c.cfg.AddrKey(srv.Addr)
	rivals, err := src.ServerRivals(ctx, c.id, serverKey, addrKey)
	if err != nil {
		return dbFault(err)
	}
	err = src.ClaimServer(ctx, sources.ServerClaim{
		AdapterID: c.id, ServerKey: serverKey, AddrKey: addrKey, Probed: c.r.probe(ctx, rivals, srv.RunID, c.cfg),
	})
	switch {
	case err == nil:
		c.claimed.Store(time.Now().UnixNano())
		return nil
	case errors.Is(err, adapter.ErrSourceTaken):
		return err
	}
	return dbFault(err)
}

// claimedBefore reports whether the adapter's last successful claim was
// before t.
func (c *serverCheck) claimedBefore(t time.Time) bool {
	n := c.claimed.Load()
	return n != 0 && n < t.UnixNano()
}

// dbFault marks a failed claim as the database's fault when it is one, so
// the adapter's last_error says so and it retries.
func dbFault(err error) error {
	if apierr.IsTransient(err) || apierr.IsConflict(err) {
		return fmt.Errorf("%w: %w", adapter.ErrSinkUnavailable, err)
	}
	return err
}

// probe asks each rival's addr, as that adapter would connect, which server
// it reaches, and returns the rivals on the server named runID, each with
// the address key its probe dialed (cfg has the rivals' db and stream). A
// rival that cannot be reached now is left out: its own adapter cannot
// read there either, and when it can it claims, outranking this one if it
// is older.
func (r *adapterRunner) probe(ctx context.Context, rivals []sources.Rival, runID string, cfg redisstream.StoredConfig) map[uuid.UUID]string {
	same := make(map[uuid.UUID]string)
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(probeParallel)
	dial := r.s.sources.Allowlist().DialContext
	for _, rv := range rivals {
		g.Go(func() error {
			srv, err := redisstream.Probe(ctx, rv.Addr, rv.Username, dial)
			if err != nil {
				r.s.log.Debug("adapters: cannot probe a rival adapter's server", zap.String("rival_id", rv.ID.String()), zap.Error(err))
				return nil
			}
			if srv.RunID == runID && srv.Addr.IsValid() {
				mu.Lock()
				same[rv.ID] = cfg.AddrKey(srv.Addr)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait() // every probe answers nil: one that fails leaves its rival out
	return same
}
