-- Ingest: the inbound webhook URLs we vend (endpoints), push/pull source
-- configs (adapters), and the durable history of every verified inbound event.

-- +goose Up

CREATE TABLE endpoints (
    id                 uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    human_id           uuid        NOT NULL REFERENCES humans (id) ON DELETE CASCADE,
    -- The public path segment of POST /hooks/{slug}. Globally unique (not per
    -- human) because the URL carries no tenant; at least 16 characters so
    -- slugs are unguessable.
    slug               text        NOT NULL,
    name               text        NOT NULL DEFAULT '',
    agent_id           uuid        REFERENCES agents (id) ON DELETE SET NULL,
    queue              text        NOT NULL,
    verification       text        NOT NULL,
    -- AES-256-GCM nonce||ciphertext. Encrypted rather than hashed because
    -- verifying an HMAC signature needs the secret itself.
    secret_ciphertext  bytea,
    -- Which master key sealed secret_ciphertext, so keys can be rotated by
    -- re-sealing rows one key id at a time.
    secret_key_id      text,
    signature_header   text,
    -- Header carrying the sender's delivery id; its value becomes
    -- events.delivery_id and drives dedup.
    delivery_id_header text,
    max_body_bytes     integer     NOT NULL DEFAULT 1048576,
    enabled            boolean     NOT NULL DEFAULT true,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT endpoints_slug_key UNIQUE (slug),
    CONSTRAINT endpoints_slug_check CHECK (slug ~ '^[A-Za-z0-9_-]{16,64}$'),
    -- Same pattern as todos.queue: the endpoint's events become todos there.
    CONSTRAINT endpoints_queue_check CHECK (queue ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    CONSTRAINT endpoints_verification_check CHECK (verification IN (
        'none', 'hmac_sha256', 'github', 'stripe', 'slack', 'standard_webhooks', 'bearer'
    )),
    -- Every scheme except 'none' verifies against a secret.
    CONSTRAINT endpoints_secret_check CHECK (verification = 'none' OR secret_ciphertext IS NOT NULL),
    -- 25 MiB hard ceiling: the body is buffered in memory to verify it.
    CONSTRAINT endpoints_max_body_bytes_check CHECK (max_body_bytes > 0 AND max_body_bytes <= 26214400)
);

-- Foreign-key indexes for "list my endpoints" and the human/agent cascades.
CREATE INDEX idx_endpoints_human_id ON endpoints (human_id);
CREATE INDEX idx_endpoints_agent_id ON endpoints (agent_id) WHERE agent_id IS NOT NULL;

CREATE TABLE adapters (
    id             uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    human_id       uuid        NOT NULL REFERENCES humans (id) ON DELETE CASCADE,
    name           text        NOT NULL,
    kind           text        NOT NULL,
    config         jsonb       NOT NULL DEFAULT '{}',
    -- Set for kind 'webhook'. CASCADE: a push adapter is meaningless without
    -- the URL that feeds it.
    endpoint_id    uuid        REFERENCES endpoints (id) ON DELETE CASCADE,
    agent_id       uuid        REFERENCES agents (id) ON DELETE SET NULL,
    queue          text        NOT NULL,
    enabled        boolean     NOT NULL DEFAULT true,
    -- Pull position (e.g. the last Redis stream id). Must only advance once
    -- the events it covers are stored, so a crash re-reads and never skips.
    cursor         text,
    last_polled_at timestamptz,
    last_error     text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT adapters_human_id_name_key UNIQUE (human_id, name),
    CONSTRAINT adapters_kind_check CHECK (kind IN ('webhook', 'redis_stream')),
    CONSTRAINT adapters_config_check CHECK (jsonb_typeof(config) = 'object'),
    -- Same pattern as todos.queue: the adapter's events become todos there.
    CONSTRAINT adapters_queue_check CHECK (queue ~ '^[a-z0-9][a-z0-9._-]{0,62}$')
);

-- Foreign-key indexes for the endpoint/agent cascades. (human_id is covered
-- by adapters_human_id_name_key.)
CREATE INDEX idx_adapters_endpoint_id ON adapters (endpoint_id) WHERE endpoint_id IS NOT NULL;
CREATE INDEX idx_adapters_agent_id ON adapters (agent_id) WHERE agent_id IS NOT NULL;

CREATE TABLE events (
    -- bigint identity, not uuid: high-volume, append-mostly, and ordered ids
    -- give cheap keyset pagination and a compact right-growing btree.
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    human_id     uuid        NOT NULL REFERENCES humans (id) ON DELETE CASCADE,
    -- Dedup scope: 'endpoint:<uuid>', 'adapter:<uuid>' or 'publish'. A text
    -- scope rather than the FK columns because those are SET NULL on delete,
    -- and dedup must not reopen when a source is deleted and its id vanishes.
    source       text        NOT NULL,
    -- SET NULL (not CASCADE): the event history outlives its source config.
    endpoint_id  uuid        REFERENCES endpoints (id) ON DELETE SET NULL,
    adapter_id   uuid        REFERENCES adapters (id) ON DELETE SET NULL,
    published_by uuid        REFERENCES agents (id) ON DELETE SET NULL,
    topic        text        NOT NULL DEFAULT '',
    delivery_id  text,
    received_at  timestamptz NOT NULL DEFAULT now(),
    headers      jsonb       NOT NULL DEFAULT '{}',
    content_type text        NOT NULL DEFAULT '',
    -- The raw body exactly as received (bytea, not jsonb): signatures are over
    -- bytes, and jsonb would normalise whitespace and key order.
    payload      bytea       NOT NULL,
    size_bytes   integer     GENERATED ALWAYS AS (octet_length(payload)) STORED,
    created_at   timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT events_delivery_id_check CHECK (char_length(delivery_id) <= 255)
);

-- Idempotent ingest: INSERT ... ON CONFLICT (human_id, source, delivery_id)
-- WHERE delivery_id IS NOT NULL DO NOTHING RETURNING ... returns no row for a
-- redelivery. Partial because senders without delivery ids are never deduped
-- (and NULLs would never conflict anyway); it also keeps the index small.
CREATE UNIQUE INDEX events_dedup ON events (human_id, source, delivery_id)
    WHERE delivery_id IS NOT NULL;

-- ListEvents, newest first, keyset on id; also the FK index for human deletes.
CREATE INDEX idx_events_human_id ON events (human_id, id DESC);
-- ListEvents filtered to one endpoint/adapter/publish source.
CREATE INDEX idx_events_human_source ON events (human_id, source, id DESC);
-- Retention prunes by age.
CREATE INDEX idx_events_received_at ON events (received_at);

-- +goose Down

DROP TABLE events;
DROP TABLE adapters;
DROP TABLE endpoints;
