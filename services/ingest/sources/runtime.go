package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/postgres"
	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/ingest/sources/internal/dbsqlc"
	"github.com/switchboard/switchboard/services/ingest/verify"
)

// The webhook edge's and the adapter runner's reads. They reach across
// tenants: a slug is an endpoint's unguessable address, and a node runs
// every tenant's pull adapters.

var (
	// ErrNoEndpoint means no endpoint has the slug.
	ErrNoEndpoint = errors.New("sources: no such endpoint")
	// ErrMisconfigured means the endpoint's stored secrets cannot be opened
	// on this node (sealed under a key it lacks, say): every request to it
	// must be refused, and the reason logged.
	ErrMisconfigured = errors.New("sources: endpoint cannot verify")
)

// Hook is what the webhook edge needs of an endpoint: where its events go,
// its limits, and its verification with the secrets that verify now, opened.
type Hook struct {
	ID               uuid.UUID
	HumanID          uuid.UUID
	AgentID          *uuid.UUID
	Queue            string
	Enabled          bool
	MaxBodyBytes     int64
	DeliveryIDHeader string
	RatePerSecond    int // 0: no endpoint limit
	// TenantRatePerSecond is the owner's limit across its endpoints
	// (settings.IngestLimits).
	TenantRatePerSecond int
	// PublicURL is the endpoint's public URL ("": derive it from the
	// request), for the schemes that sign the URL.
	PublicURL string
	Verify    verify.Config
	// Topic overrides the scheme's topic (verify.Describe); empty: none.
	Topic verify.TopicSource
	// BodyDedupWindow is the body-hash dedup window; 0 is off.
	BodyDedupWindow time.Duration
	// Routes are the endpoint's fan-out, in order (none: Queue and AgentID).
	Routes []Route
}

// Hook returns the endpoint of slug, enabled or not, or ErrNoEndpoint. An
// error wrapping ErrMisconfigured comes with the Hook filled but for its
// secrets.
func (s *Store) Hook(ctx context.Context, slug string) (Hook, error) {
	row, err := s.q.EndpointBySlug(ctx, s.pool, dbsqlc.EndpointBySlugParams{
		Slug: slug, DefaultTenantRate: settings.DefaultLimits.TenantRequestsPerSecond,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Hook{}, ErrNoEndpoint
	}
	if err != nil {
		return Hook{}, fmt.Errorf("sources: endpoint by slug: %w", err)
	}
	e := row.Endpoint
	secrets, err := s.q.EndpointActiveSecrets(ctx, s.pool, e.ID)
	if err != nil {
		return Hook{}, fmt.Errorf("sources: endpoint secrets: %w", err)
	}
	h := Hook{
		ID: e.ID, HumanID: e.HumanID, AgentID: e.AgentID, Queue: e.Queue, Enabled: e.Enabled,
		MaxBodyBytes: int64(e.MaxBodyBytes), RatePerSecond: int(e.RateLimitPerSecond),
		TenantRatePerSecond: int(row.TenantRequestsPerSecond),
		Verify: verify.Config{
			Scheme:    verify.Scheme(e.Verification),
			Tolerance: time.Duration(e.ToleranceSeconds) * time.Second,
			Algorithm: e.HmacAlgorithm, Encoding: e.HmacEncoding, Prefix: e.SignaturePrefix,
			VerifyTokenHash: e.VerifyTokenSha256,
		},
	}
	h.Topic, h.BodyDedupWindow = hookTopics(e.TopicHeader, e.TopicPointer, e.BodyDedupWindowSeconds)
	if e.DeliveryIDHeader != nil {
		h.DeliveryIDHeader = *e.DeliveryIDHeader
	}
	routes, err := s.routesOf(ctx, s.pool, []uuid.UUID{e.ID})
	if err != nil {
		return Hook{}, fmt.Errorf("sources: endpoint routes: %w", err)
	}
	h.Routes = routes[e.ID]
	if e.SignatureHeader != nil {
		h.Verify.Header = *e.SignatureHeader
	}
	if e.PublicUrl != nil {
		h.PublicURL = *e.PublicUrl
	}
	for _, sec := range secrets {
		switch sec.Kind {
		case "hashed":
			h.Verify.SecretHashes = append(h.Verify.SecretHashes, sec.Hash)
		case "sealed":
			if sec.KeyID == nil {
				return h, fmt.Errorf("%w: secret %s has no key id", ErrMisconfigured, sec.ID)
			}
			plain, err := s.keys.Open(*sec.KeyID, sec.Sealed, SecretAAD(sec.ID))
			if err != nil {
				return h, fmt.Errorf("%w: secret %s: %w", ErrMisconfigured, sec.ID, err)
			}
			h.Verify.Secrets = append(h.Verify.Secrets, plain)
		}
	}
	return h, nil
}

// PullAdapter is an enabled pull adapter a node runs.
type PullAdapter struct {
	ID      uuid.UUID
	HumanID uuid.UUID
	Queue   string
	AgentID *uuid.UUID
	// Config is the stored config (a redisstream.StoredConfig), as stored:
	// a change of it restarts the adapter.
	Config json.RawMessage
	// ServerKey is the server the adapter was last allowed to read
	// (ClaimServer); nil when none, or when an older adapter of another
	// owner took it since: a node stops such an adapter, whose next claim
	// is refused.
	ServerKey *string
}

// PullAdapters lists the enabled Redis Streams adapters of every tenant.
func (s *Store) PullAdapters(ctx context.Context) ([]PullAdapter, error) {
	rows, err := s.q.AdaptersToRun(ctx, s.pool)
	if err != nil {
		return nil, fmt.Errorf("sources: adapters to run: %w", err)
	}
	return postgres.Convert(rows, func(r dbsqlc.AdaptersToRunRow) PullAdapter { return PullAdapter(r) }), nil
}

// ReportAdapter records an adapter's last run for its admin reads:
// lastError "" means healthy.
func (s *Store) ReportAdapter(ctx context.Context, id uuid.UUID, lastError string) error {
	if err := s.q.AdapterReport(ctx, s.pool, dbsqlc.AdapterReportParams{ID: id, LastError: lastError}); err != nil {
		return fmt.Errorf("sources: adapter report: %w", err)
	}
	return nil
}
