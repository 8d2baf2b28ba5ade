package redisstream

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
)

// Adapter reads one Redis stream through a consumer group. It implements
// adapter.Source.
type Adapter struct {
	cfg Config
	log *zap.Logger
}

var _ adapter.Source = (*Adapter)(nil)

// New validates cfg, applies defaults and returns an adapter. It does not
// connect; Run does.
func New(cfg Config) (*Adapter, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	log := c.Logger.With(zap.String("adapter", c.ID), zap.String("stream", c.Stream),
		zap.String("group", c.Group), zap.String("consumer", c.Consumer))
	return &Adapter{cfg: c, log: log}, nil
}

// ID is the adapter id passed to the sink.
func (a *Adapter) ID() string { return a.cfg.ID }

// Run reads and stores entries until ctx ends, then returns nil. Redis and sink
// errors are logged and retried with backoff; Run never gives up on them.
func (a *Adapter) Run(ctx context.Context, sink adapter.Sink) error {
	var dialed dialedAddr
	rdb := redis.NewClient(&redis.Options{
		Addr:   a.cfg.Addr,
		Dialer: dialed.wrap(a.cfg.Dialer),
		// Every new connection is checked before it serves a command:
		// which server it reached, and whether this adapter may read the
		// stream there (Config.OnServer). Run issues one command at a
		// time, so a new connection's check follows its own dial.
		OnConnect: func(ctx context.Context, c *redis.Conn) error { return a.checkServer(ctx, c, &dialed) },
		Username:  a.cfg.Username,
		Password:  a.cfg.Password,
		DB:        a.cfg.DB,
		// Named, so an operator's CLIENT LIST tells which adapter and
		// consumer a connection belongs to.
		ClientName: clientName(a.cfg),
		// Plain Redis has no maintenance notifications; asking for them only
		// logs a handshake warning on every connection.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	defer func() { _ = rdb.Close() }()
	// go-redis does not abort a read that is already waiting on the socket
	// when ctx is cancelled, so a blocked XREADGROUP would delay shutdown by up
	// to Config.Block. Closing the client unblocks it at once.
	stop := context.AfterFunc(ctx, func() { _ = rdb.Close() })
	defer stop()

	r := &runner{Adapter: a, rdb: rdb, sink: sink, drainPending: true}
	a.log.Info("redis stream adapter started")
	defer a.log.Info("redis stream adapter stopped")
	for ctx.Err() == nil {
		err := r.step(ctx)
		if ctx.Err() != nil {
			break
		}
		a.report(err)
		if err == nil {
			r.failures = 0
			continue
		}
		// Whatever failed, the affected entries are still in our PEL: read it
		// again before anything new.
		r.drainPending = true
		if isNoGroup(err) {
			r.groupReady = false
		}
		delay := a.cfg.Backoff.Delay(r.failures)
		r.failures++
		a.log.Warn("redis stream adapter step failed, backing off",
			zap.Error(err), zap.Duration("delay", delay), zap.Int("failures", r.failures))
		if adapter.Sleep(ctx, delay) != nil {
			break
		}
	}
	return nil
}

// report tells Config.OnStatus how a step went.
func (a *Adapter) report(err error) {
	if a.cfg.OnStatus == nil {
		return
	}
	reason := ""
	if err != nil {
		reason = Reason(err)
	}
	a.cfg.OnStatus(reason)
}

// runner is the state of one Run call.
type runner struct {
	*Adapter
	rdb  *redis.Client
	sink adapter.Sink

	groupReady   bool
	drainPending bool // our own PEL may hold entries to (re)process
	nextClaim    time.Time
	failures     int // consecutive failed steps, drives the backoff
}

// step does one unit of work: create the group, or process one batch of our
// own pending entries, or reclaim abandoned entries, or read new ones.
func (r *runner) step(ctx context.Context) error {
	if !r.groupReady {
		if err := r.ensureGroup(ctx); err != nil {
			return err
		}
		r.groupReady = true
	}
	if r.drainPending {
		// Id "0" returns this consumer's own pending entries: those stored
		// but not acked before a crash, and those whose store failed.
		entries, err := r.read(ctx, "0")
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			r.drainPending = false
			return nil
		}
		return r.process(ctx, entries)
	}
	if now := time.Now(); !now.Before(r.nextClaim) {
		r.nextClaim = now.Add(r.cfg.ClaimInterval)
		if err := r.claim(ctx); err != nil {
			return err
		}
	}
	entries, err := r.read(ctx, ">")
	if err != nil {
		return err
	}
	return r.process(ctx, entries)
}

func (r *runner) ensureGroup(ctx context.Context) error {
	err := r.rdb.XGroupCreateMkStream(ctx, r.cfg.Stream, r.cfg.Group, r.cfg.StartID).Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return stepFailed("create consumer group", err)
	}
	return nil
}

// read runs XREADGROUP from id: ">" blocks for new entries, anything else
// returns pending history immediately.
func (r *runner) read(ctx context.Context, id string) ([]redis.XMessage, error) {
	block := time.Duration(-1) // no BLOCK argument: history reads never block
	if id == ">" {
		block = r.cfg.Block
	}
	streams, err := r.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group:    r.cfg.Group,
		Consumer: r.cfg.Consumer,
		Streams:  []string{r.cfg.Stream, id},
		Count:    r.cfg.BatchSize,
		Block:    block,
	}).Result()
	if errors.Is(err, redis.Nil) { // BLOCK timed out with nothing new
		return nil, nil
	}
	if err != nil {
		return nil, stepFailed("read (XREADGROUP "+id+")", err)
	}
	var entries []redis.XMessage
	for _, s := range streams {
		entries = append(entries, s.Messages...)
	}
	return entries, nil
}

// claim takes over entries that other (presumably dead) consumers left
// pending longer than ClaimIdle, and processes them as ours.
func (r *runner) claim(ctx context.Context) error {
	start := "0-0"
	for {
		entries, next, err := r.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream:   r.cfg.Stream,
			Group:    r.cfg.Group,
			Consumer: r.cfg.Consumer,
			MinIdle:  r.cfg.ClaimIdle,
			Start:    start,
			Count:    r.cfg.BatchSize,
		}).Result()
		if err != nil {
			return stepFailed("claim abandoned entries", err)
		}
		if len(entries) > 0 {
			r.log.Info("claimed abandoned entries", zap.Int("count", len(entries)))
			if err := r.process(ctx, entries); err != nil {
				return err
			}
		}
		if next == "" || next == "0-0" {
			return nil
		}
		start = next
	}
}

func isNoGroup(err error) bool {
	return strings.Contains(err.Error(), "NOGROUP")
}

// clientName is the connection name the adapter gives Redis (CLIENT
// SETNAME): "switchboard:<stream>:<group>:<consumer>", with characters
// Redis refuses in a name (spaces, newlines) replaced.
func clientName(cfg Config) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, "switchboard:"+cfg.Stream+":"+cfg.Group+":"+cfg.Consumer)
}
