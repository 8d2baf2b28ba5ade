// Package redisstream is a pull adapter that reads a Redis stream through a
// consumer group and stores every entry through an adapter.Sink.
//
// It follows the store-then-ack contract of package adapter: an entry is
// XACKed only after Sink.Store returned nil for it. Until then it stays in the
// group's pending entries list (PEL), which is what makes the adapter
// crash-safe:
//
//   - on start, and after every failed store, the consumer first re-reads its
//     own pending entries (XREADGROUP … 0), so entries stored just before a
//     crash are stored again (the sink dedups) and then acked;
//   - entries left pending by a consumer that died are taken over with
//     XAUTOCLAIM once idle longer than Config.ClaimIdle;
//   - an entry delivered Config.MaxDeliveries times without being stored
//     (a poison entry) is copied to a dead-letter stream with its original id
//     and the reason, then acked, so it stops blocking the consumer.
//
// When a batch fails, its entries are retried one by one, so a single poison
// entry does not hold back (or drag into the dead-letter stream) its
// neighbours.
package redisstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultBatchSize     = 100
	DefaultBlock         = 5 * time.Second
	DefaultMaxDeliveries = 5
	DefaultClaimIdle     = 60 * time.Second
	DefaultBodyField     = "body"
	DefaultContentField  = "content_type"
	DeadLetterSuffix     = ":dead"
)

// Fields added to a dead-lettered entry next to its original fields. The
// prefix keeps them from colliding with the entry's own field names.
const (
	DeadFieldOriginalID = "dlq_original_id"
	DeadFieldStream     = "dlq_stream"
	DeadFieldGroup      = "dlq_group"
	DeadFieldReason     = "dlq_reason"
	DeadFieldDeliveries = "dlq_deliveries"
)

// Config configures one Redis stream adapter.
type Config struct {
	// ID names the adapter towards the sink; (ID, entry id) is the dedup key,
	// so it must stay the same across restarts. Default "redisstream:<Stream>:<Group>".
	ID string

	Addr string // host:port of the Redis server (required)
	// Dialer opens every connection to Addr (required): the allow list's
	// DialContext, so the adapter connects nowhere the operator did not
	// allow, whatever a tenant wrote in Addr.
	Dialer   func(ctx context.Context, network, addr string) (net.Conn, error)
	Username string
	Password string
	DB       int

	Stream   string // stream key (required)
	Group    string // consumer group (required)
	Consumer string // consumer name, stable across restarts of this instance (required)
	// StartID is where a newly created group starts: "$" (only new entries,
	// the default) or "0" (the whole stream).
	StartID string

	BatchSize     int64         // entries per XREADGROUP, default 100
	Block         time.Duration // XREADGROUP BLOCK, default 5 s
	MaxDeliveries int64         // deliveries before dead-lettering, default 5
	// DeadLetterStream receives poison entries, default "<Stream>:dead".
	DeadLetterStream string
	// ClaimIdle is how long an entry must sit unacked in another consumer's
	// PEL before this one takes it over (XAUTOCLAIM), default 60 s. It must
	// exceed the slowest Sink.Store, or live consumers steal each other's work
	// (harmless thanks to dedup, but wasteful).
	ClaimIdle time.Duration
	// ClaimInterval is how often XAUTOCLAIM runs, default ClaimIdle/2.
	ClaimInterval time.Duration

	// BodyField is the entry field used as Message.Body, default "body". An
	// entry without it gets a JSON object of all its fields as body.
	BodyField string
	// ContentTypeField is the entry field used as Message.ContentType,
	// default "content_type".
	ContentTypeField string

	// Backoff paces retries after Redis or sink errors.
	Backoff adapter.Backoff

	// OnServer, when set, is told the server every new connection reached,
	// before the connection serves a command: an error refuses the
	// connection (nothing is read or written on it) and fails the step that
	// wanted it, with the error as its cause. It is how a node refuses to
	// read a stream another owner's adapter reads on the same server,
	// however this adapter's addr reaches it (docs/ingest.md).
	OnServer func(ctx context.Context, s Server) error

	// OnStatus, when set, is told the outcome of every step of Run: "" after
	// one that worked, else a short reason safe to show the adapter's owner
	// (Reason). It is called on Run's goroutine; it must be quick or rate
	// limit itself.
	OnStatus func(reason string)

	Logger *zap.Logger // nil means zap.NewNop()
}

func (c *Config) withDefaults() (Config, error) {
	cfg := *c
	var missing []string
	for name, v := range map[string]string{"Addr": cfg.Addr, "Stream": cfg.Stream, "Group": cfg.Group, "Consumer": cfg.Consumer} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if cfg.Dialer == nil {
		missing = append(missing, "Dialer")
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		return cfg, fmt.Errorf("redisstream: missing config %v", missing)
	}
	if cfg.StartID == "" {
		cfg.StartID = "$"
	}
	if cfg.StartID != "$" && cfg.StartID != "0" {
		return cfg, errors.New(`redisstream: StartID must be "$" or "0"`)
	}
	if cfg.ID == "" {
		cfg.ID = "redisstream:" + cfg.Stream + ":" + cfg.Group
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.Block <= 0 {
		cfg.Block = DefaultBlock
	}
	if cfg.MaxDeliveries <= 0 {
		cfg.MaxDeliveries = DefaultMaxDeliveries
	}
	if cfg.DeadLetterStream == "" {
		cfg.DeadLetterStream = cfg.Stream + DeadLetterSuffix
	}
	if cfg.DeadLetterStream == cfg.Stream {
		return cfg, errors.New("redisstream: DeadLetterStream must differ from Stream")
	}
	if cfg.ClaimIdle <= 0 {
		cfg.ClaimIdle = DefaultClaimIdle
	}
	if cfg.ClaimInterval <= 0 {
		cfg.ClaimInterval = cfg.ClaimIdle / 2
	}
	if cfg.BodyField == "" {
		cfg.BodyField = DefaultBodyField
	}
	if cfg.ContentTypeField == "" {
		cfg.ContentTypeField = DefaultContentField
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return cfg, nil
}
