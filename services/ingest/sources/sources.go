// Package sources owns where events come from: webhook endpoints with their
// secrets (tables endpoints, endpoint_secrets) and adapters (adapters). It
// alone writes those tables.
//
// The admin API manages them through it: the rules of a valid endpoint or
// adapter, the defaults, secret generation and sealing all live here, so the
// admin service only translates its contract. The ingest service reads them
// through it: an endpoint by slug with the secrets that verify now
// (Hook), and the pull adapters a node runs; and it reports their state.
//
// Tenancy is enforced in SQL (queries.sql): every admin method takes the
// caller's auth.Tenant, and a row of another tenant looks exactly like a
// missing one (NOT_FOUND).
package sources

import (
	"net"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/secretbox"
	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
	"github.com/switchboard/switchboard/services/ingest/sources/internal/dbsqlc"
)

// Store runs the sources' statements over a pool.
type Store struct {
	pool *pgxpool.Pool
	// keys seals the endpoint secrets that verification needs back, and
	// opens them for the webhook edge; every node must hold the key ids
	// secrets were sealed under.
	keys *secretbox.Keyring
	// allow is where pull adapters may connect: checked when one is
	// created or its config changes, and by the runner's dialer.
	allow *Allowlist
	q     *dbsqlc.Queries
	// changes announces committed endpoint changes to the webhook edges'
	// caches, on every node (UseNotifier, OnEndpointChange);
	// adapterChanges adapter changes to the runners (OnAdapterChange).
	changes        changes
	adapterChanges changes
}

// New returns a store over pool; keys is the node's sealing keyring
// (SWITCHBOARD_SEALING_KEYS), allow the operator's allow list
// (SWITCHBOARD_ADAPTER_ALLOW; nil allows nothing).
func New(pool *pgxpool.Pool, keys *secretbox.Keyring, allow *Allowlist) *Store {
	if allow == nil {
		allow = NewAllowlist(nil, nil)
	}
	return &Store{pool: pool, keys: keys, allow: allow, q: dbsqlc.New(),
		changes: changes{channel: changesChannel}, adapterChanges: changes{channel: adapterChangesChannel}}
}

// AllowRule is one entry of SWITCHBOARD_ADAPTER_ALLOW (config.AdapterAllowEntry
// converts to it).
type AllowRule = adapter.AllowRule

// Allowlist is where pull adapters may connect (see adapter.Allowlist).
type Allowlist = adapter.Allowlist

// NewAllowlist returns the allow list of rules; resolver resolves names for
// checks and dials (nil: net.DefaultResolver).
func NewAllowlist(rules []AllowRule, resolver *net.Resolver) *Allowlist {
	return adapter.NewAllowlist(rules, resolver)
}

// Allowlist is the allow list the store checks adapters against; the
// adapter runner dials through it.
func (s *Store) Allowlist() *Allowlist { return s.allow }

// constraints maps the sources' constraints (named <table>_<what>_check/_key
// by the migrations) to what a client is told.
var constraints = &apierr.Constraints{
	Checks: map[string]apierr.FieldViolation{
		"endpoints_queue_check":            {Field: "endpoint.queue", Description: "must match ^[a-z0-9][a-z0-9._-]{0,62}$"},
		"endpoints_verification_check":     {Field: "endpoint.verification", Description: "must be a defined scheme"},
		"endpoints_max_body_bytes_check":   {Field: "endpoint.max_body_bytes", Description: "must be between 1 and 26214400"},
		"endpoints_hmac_algorithm_check":   {Field: "endpoint.hmac_algorithm", Description: "must be sha256 or sha512"},
		"endpoints_hmac_encoding_check":    {Field: "endpoint.hmac_encoding", Description: "must be hex or base64"},
		"endpoints_signature_prefix_check": {Field: "endpoint.signature_prefix", Description: "must be at most 32 characters"},
		"endpoints_tolerance_check":        {Field: "endpoint.tolerance_seconds", Description: "must be between 1 and 86400"},
		"endpoints_rate_limit_check":       {Field: "endpoint.rate_limit_per_second", Description: "must be between 0 and 1000000"},
		"endpoints_verify_token_check":     {Field: "endpoint.meta_verify_token", Description: "is required for VERIFICATION_SCHEME_META and accepted only with it"},
		"endpoints_public_url_check":       {Field: "endpoint.public_url", Description: "must be an http(s) URL of at most 2048 characters"},
		"adapters_kind_check":              {Field: "adapter.kind", Description: "must be a defined kind"},
		"adapters_config_check":            {Field: "adapter.config", Description: "must be a JSON object"},
		"adapters_queue_check":             {Field: "adapter.queue", Description: "must match ^[a-z0-9][a-z0-9._-]{0,62}$"},
	},
	Uniques: map[string]string{
		"adapters_human_id_name_key": "the human already has an adapter with this name",
		// Names neither the other owner nor its adapter, and says the same
		// whichever spelling of the server matched (adapter.ErrSourceTaken).
		"adapters_source_owner_excl":      sourceTaken,
		"adapter_source_addrs_owner_excl": sourceTaken,
		"adapters_source_group_key":       "adapter.config: the human already has an adapter reading this Redis stream in this group",
	},
}

// sourceTaken is ALREADY_EXISTS for a stream another owner's adapter reads.
var sourceTaken = "adapter.config: " + adapter.ErrSourceTaken.Error()

// dbErr maps a statement's error for a client; what names the row.
func dbErr(err error, op, what string) error { return apierr.FromPostgres(err, op, what, constraints) }

func invalid(field, description string) error {
	return apierr.Invalid(apierr.FieldViolation{Field: field, Description: description})
}
