-- Ingest v2: several secrets per endpoint (rotation), the full list of
-- verification schemes with the generic HMAC's options, and what an event
-- needs for replay detection and audit.
--
-- endpoint_secrets replaces endpoints.secret_ciphertext/secret_key_id:
-- rotating a provider's secret without downtime means accepting the old and
-- the new one for a while. Two kinds:
--   sealed  HMAC keys, Standard Webhooks secrets and ed25519 public keys:
--           verifying needs the material itself, so it is AES-256-GCM sealed
--           under the master key key_id (pkg/secretbox), with the secret's
--           own id as associated data (a ciphertext copied to another row
--           does not open).
--   hashed  bearer tokens and basic credentials: only ever compared, so only
--           their SHA-256 is kept.
-- No RPC returns the material; hint ("whsec_…Q2xw") tells secrets apart.
--
-- events.body_sha256: where a provider's delivery id is not covered by its
-- signature (GitHub, Shopify, generic HMAC), a captured body replayed under
-- a fresh id must still be a duplicate within the dedup window; the hash,
-- looked up by (human_id, source, body_sha256, received_at), finds it.

-- +goose Up

CREATE TABLE endpoint_secrets (
    id          uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    endpoint_id uuid        NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
    kind        text        NOT NULL,
    key_id      text,
    sealed      bytea,
    hash        bytea,
    hint        text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- Set when a newer secret replaces this one: it keeps verifying until
    -- then, so senders can switch over. NULL = until deleted.
    expires_at  timestamptz,

    CONSTRAINT endpoint_secrets_kind_check CHECK (kind IN ('sealed', 'hashed')),
    CONSTRAINT endpoint_secrets_material_check CHECK (
        (kind = 'sealed' AND sealed IS NOT NULL AND key_id IS NOT NULL AND hash IS NULL)
        OR (kind = 'hashed' AND hash IS NOT NULL AND octet_length(hash) = 32 AND sealed IS NULL AND key_id IS NULL)
    ),
    CONSTRAINT endpoint_secrets_hint_check CHECK (char_length(hint) <= 64)
);

-- The secrets of one endpoint (every verification reads them).
CREATE INDEX idx_endpoint_secrets_endpoint_id ON endpoint_secrets (endpoint_id);
-- Re-sealing after a master-key rotation walks one key id at a time.
CREATE INDEX idx_endpoint_secrets_key_id ON endpoint_secrets (key_id) WHERE key_id IS NOT NULL;

-- Carry over the single secret of v1 endpoints (sealed under its key).
INSERT INTO endpoint_secrets (endpoint_id, kind, key_id, sealed)
SELECT id, 'sealed', secret_key_id, secret_ciphertext
FROM endpoints
WHERE secret_ciphertext IS NOT NULL AND secret_key_id IS NOT NULL;

ALTER TABLE endpoints DROP CONSTRAINT endpoints_verification_check;
UPDATE endpoints SET verification = 'hmac' WHERE verification = 'hmac_sha256';

ALTER TABLE endpoints
    DROP CONSTRAINT endpoints_secret_check,
    DROP COLUMN secret_ciphertext,
    DROP COLUMN secret_key_id,
    -- Generic HMAC ('hmac'): digest, signature encoding, and a prefix the
    -- sender puts before it (e.g. "sha256="). Ignored by the other schemes.
    ADD COLUMN hmac_algorithm text NOT NULL DEFAULT 'sha256',
    ADD COLUMN hmac_encoding text NOT NULL DEFAULT 'hex',
    ADD COLUMN signature_prefix text NOT NULL DEFAULT '',
    -- Accepted clock skew of signed timestamps, both directions.
    ADD COLUMN tolerance_seconds integer NOT NULL DEFAULT 300,
    -- Requests per second this endpoint accepts (429 beyond); 0 = only the
    -- tenant's limit applies.
    ADD COLUMN rate_limit_per_second integer NOT NULL DEFAULT 0,
    ADD CONSTRAINT endpoints_verification_check CHECK (verification IN (
        'none', 'standard_webhooks', 'github', 'stripe', 'slack', 'shopify', 'hmac', 'bearer', 'basic'
    )),
    ADD CONSTRAINT endpoints_hmac_algorithm_check CHECK (hmac_algorithm IN ('sha256', 'sha512')),
    ADD CONSTRAINT endpoints_hmac_encoding_check CHECK (hmac_encoding IN ('hex', 'base64')),
    ADD CONSTRAINT endpoints_signature_prefix_check CHECK (char_length(signature_prefix) <= 32),
    ADD CONSTRAINT endpoints_tolerance_check CHECK (tolerance_seconds BETWEEN 1 AND 86400),
    ADD CONSTRAINT endpoints_rate_limit_check CHECK (rate_limit_per_second BETWEEN 0 AND 1000000);

ALTER TABLE events
    ADD COLUMN body_sha256 bytea,
    -- The scheme that verified it ('' for PublishEvent and pull adapters).
    ADD COLUMN verified_scheme text NOT NULL DEFAULT '',
    ADD COLUMN source_ip inet,
    ADD CONSTRAINT events_body_sha256_check CHECK (body_sha256 IS NULL OR octet_length(body_sha256) = 32);

CREATE INDEX idx_events_body_sha256 ON events (human_id, source, body_sha256, received_at)
    WHERE body_sha256 IS NOT NULL;

INSERT INTO settings (key, value, description) VALUES
    ('ingest.dedup',
     '{"window_seconds": 259200}',
     'How long a delivery is recognised as a duplicate when its id is not signed (by the SHA-256 of its body): at least the providers'' retry windows (Stripe and GitHub 3 days, Shopify 48 hours). Signed delivery ids stay deduplicated for as long as the event is kept.'),
    ('ingest.limits',
     '{"tenant_requests_per_second": 1000}',
     'Webhook requests per second accepted per tenant across its endpoints (HTTP 429 with Retry-After beyond).')
ON CONFLICT (key) DO NOTHING;

-- +goose Down

DELETE FROM settings WHERE key IN ('ingest.dedup', 'ingest.limits');

DROP INDEX idx_events_body_sha256;
ALTER TABLE events
    DROP CONSTRAINT events_body_sha256_check,
    DROP COLUMN source_ip,
    DROP COLUMN verified_scheme,
    DROP COLUMN body_sha256;

ALTER TABLE endpoints
    DROP CONSTRAINT endpoints_rate_limit_check,
    DROP CONSTRAINT endpoints_tolerance_check,
    DROP CONSTRAINT endpoints_signature_prefix_check,
    DROP CONSTRAINT endpoints_hmac_encoding_check,
    DROP CONSTRAINT endpoints_hmac_algorithm_check,
    DROP CONSTRAINT endpoints_verification_check,
    DROP COLUMN rate_limit_per_second,
    DROP COLUMN tolerance_seconds,
    DROP COLUMN signature_prefix,
    DROP COLUMN hmac_encoding,
    DROP COLUMN hmac_algorithm,
    ADD COLUMN secret_ciphertext bytea,
    ADD COLUMN secret_key_id text;

-- Only v1's schemes and one sealed secret fit the old shape: the oldest
-- sealed secret is kept, and an endpoint v1 cannot express (shopify, basic,
-- a hashed bearer token) makes the constraints below fail, so the downgrade
-- refuses rather than silently opening an endpoint.
UPDATE endpoints e
SET secret_ciphertext = s.sealed, secret_key_id = s.key_id
FROM (
    SELECT DISTINCT ON (endpoint_id) endpoint_id, sealed, key_id
    FROM endpoint_secrets
    WHERE kind = 'sealed'
    ORDER BY endpoint_id, created_at
) AS s
WHERE s.endpoint_id = e.id;
UPDATE endpoints SET verification = 'hmac_sha256' WHERE verification = 'hmac';

ALTER TABLE endpoints
    ADD CONSTRAINT endpoints_verification_check CHECK (verification IN (
        'none', 'hmac_sha256', 'github', 'stripe', 'slack', 'standard_webhooks', 'bearer'
    )),
    ADD CONSTRAINT endpoints_secret_check CHECK (verification = 'none' OR secret_ciphertext IS NOT NULL);

DROP TABLE endpoint_secrets;
