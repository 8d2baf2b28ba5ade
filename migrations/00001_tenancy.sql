-- Tenancy: humans (the tenants), the agent personas they own, and the bearer
-- credentials minted for either. See docs/data-model.md.
--
-- Conventions used by every migration in this folder:
--   * Metadata tables use uuid keys from gen_random_uuid(), which is built into
--     PostgreSQL 13+, so no pgcrypto extension is needed.
--   * Constraints are named <table>_<what>_check / _key so that Go code can map
--     pgconn.PgError.ConstraintName to a precise InvalidArgument message.
--   * updated_at is set explicitly by the UPDATE statements in each service's
--     queries.sql (there are no triggers): every write stays visible in the SQL
--     a reviewer reads.

-- +goose Up

CREATE TABLE humans (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    email        text        NOT NULL,
    display_name text        NOT NULL DEFAULT '',
    is_admin     boolean     NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    disabled_at  timestamptz,

    -- Deliberately loose ("something@something", no whitespace): real address
    -- validation belongs to the mail round trip, not to a regex. 320 is the
    -- RFC 5321 maximum (64 local part + @ + 255 domain).
    CONSTRAINT humans_email_check CHECK (email ~ '^[^@[:space:]]+@[^@[:space:]]+$'),
    CONSTRAINT humans_email_length_check CHECK (char_length(email) <= 320)
);

-- Unique on lower(email) rather than on email: "Ann@x.io" and "ann@x.io" are
-- the same person. Lookups must use lower(email) = lower($1) to hit it.
CREATE UNIQUE INDEX humans_email_lower_key ON humans (lower(email));

CREATE TABLE agents (
    id          uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    human_id    uuid        NOT NULL REFERENCES humans (id) ON DELETE CASCADE,
    name        text        NOT NULL,
    description text        NOT NULL DEFAULT '',
    metadata    jsonb       NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    disabled_at timestamptz,

    -- Same shape as a queue name: safe in URLs, logs and metric labels.
    CONSTRAINT agents_name_check CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    CONSTRAINT agents_metadata_check CHECK (jsonb_typeof(metadata) = 'object'),
    -- Leading human_id also serves the human -> agents FK cascade and
    -- "list my agents"; no separate index on human_id is needed.
    CONSTRAINT agents_human_id_name_key UNIQUE (human_id, name)
);

CREATE TABLE credentials (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    human_id     uuid        NOT NULL REFERENCES humans (id) ON DELETE CASCADE,
    -- NULL: the token acts as the human; set: it acts as that agent. CASCADE
    -- because a token for a deleted persona must stop working, not silently
    -- widen to the human's own authority (which SET NULL would do).
    agent_id     uuid        REFERENCES agents (id) ON DELETE CASCADE,
    name         text        NOT NULL DEFAULT '',
    -- First 12 characters of the token, so listings can identify a token
    -- without storing anything that authenticates.
    token_prefix text        NOT NULL,
    -- SHA-256 of the whole token. A fast hash is enough because tokens are
    -- long random strings (not passwords), and it permits an indexed lookup.
    token_hash   bytea       NOT NULL,
    scopes       text[]      NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    last_used_at timestamptz,
    revoked_at   timestamptz,

    CONSTRAINT credentials_token_hash_key UNIQUE (token_hash),
    CONSTRAINT credentials_token_hash_check CHECK (octet_length(token_hash) = 32),
    CONSTRAINT credentials_expires_at_check CHECK (expires_at > created_at)
);

-- Foreign-key indexes: listing a human's credentials, and the cascades run
-- when a human or an agent is deleted, would otherwise scan the table.
CREATE INDEX idx_credentials_human_id ON credentials (human_id);
CREATE INDEX idx_credentials_agent_id ON credentials (agent_id) WHERE agent_id IS NOT NULL;

-- +goose Down

DROP TABLE credentials;
DROP TABLE agents;
DROP TABLE humans;
