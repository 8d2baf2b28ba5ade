-- AdminService queries. Tenancy lives here, not in Go: every query over a
-- tenant-owned table takes the caller's human id (caller_id) and whether the
-- caller is an administrator, and filters with
--   (administrator OR human_id = caller_id)
-- so a row of another tenant is simply not matched: it looks exactly like a
-- missing row (pgx.ErrNoRows / 0 rows), and a write that does not match
-- changes nothing. Lists use keyset pagination on (created_at, id); the
-- coalesce() bounds stand for "from the start" on the first page.

-- name: HumanInsert :one
-- Creates a human; the handler admits administrators only, and humans_email_lower_key rejects a taken email.
INSERT INTO humans (email, display_name, is_admin)
VALUES (sqlc.arg(email)::text, sqlc.arg(display_name)::text, sqlc.arg(is_admin)::boolean)
RETURNING *;

-- name: HumanGet :one
-- One human, visible to an administrator or to the human itself.
SELECT *
FROM humans
WHERE id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR id = sqlc.arg(caller_id)::uuid);

-- name: HumanList :many
-- A page of humans, oldest first, strictly after the keyset position; a non-administrator sees only itself.
SELECT *
FROM humans
WHERE (sqlc.arg(administrator)::boolean OR id = sqlc.arg(caller_id)::uuid)
  AND (created_at, id) > (coalesce(sqlc.narg(after_created_at)::timestamptz, '-infinity'),
                          coalesce(sqlc.narg(after_id)::uuid, '00000000-0000-0000-0000-000000000000'))
ORDER BY created_at, id
LIMIT sqlc.arg(max_rows)::integer;

-- name: HumanUpdate :one
-- Changes the fields whose set_* flag is true. disabled_at is the database's now() when disabling (the client's
-- value is ignored) and NULL when re-enabling. The last condition repeats the handler's rule that only an
-- administrator may change is_admin or disabled_at, so a self-promotion can never match a row.
UPDATE humans
SET email        = CASE WHEN sqlc.arg(set_email)::boolean THEN sqlc.arg(email)::text ELSE email END,
    display_name = CASE WHEN sqlc.arg(set_display_name)::boolean THEN sqlc.arg(display_name)::text ELSE display_name END,
    is_admin     = CASE WHEN sqlc.arg(set_is_admin)::boolean THEN sqlc.arg(is_admin)::boolean ELSE is_admin END,
    disabled_at  = CASE
                       WHEN NOT sqlc.arg(set_disabled)::boolean THEN disabled_at
                       WHEN sqlc.arg(disabled)::boolean THEN now()
                   END,
    updated_at   = now()
WHERE id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR id = sqlc.arg(caller_id)::uuid)
  AND (sqlc.arg(administrator)::boolean OR NOT (sqlc.arg(set_is_admin)::boolean OR sqlc.arg(set_disabled)::boolean))
RETURNING *;

-- name: HumanDelete :execrows
-- Deletes a human; ON DELETE CASCADE removes everything it owns in this one statement. Administrators only.
DELETE FROM humans
WHERE id = sqlc.arg(id)
  AND sqlc.arg(administrator)::boolean;

-- name: AgentInsert :one
-- Creates an agent for a human the caller may act for; no row when that human is unknown or another tenant.
INSERT INTO agents (human_id, name, description, metadata)
SELECT h.id, sqlc.arg(name)::text, sqlc.arg(description)::text, sqlc.arg(metadata)::jsonb
FROM humans AS h
WHERE h.id = sqlc.arg(human_id)::uuid
  AND (sqlc.arg(administrator)::boolean OR h.id = sqlc.arg(caller_id)::uuid)
RETURNING *;

-- name: AgentGet :one
-- One agent of a human the caller may act for.
SELECT *
FROM agents
WHERE id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid);

-- name: AgentList :many
-- A page of agents, oldest first, optionally of one human; the tenancy filter applies whatever the filter says.
SELECT *
FROM agents
WHERE (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid)
  AND (sqlc.narg(human_id)::uuid IS NULL OR human_id = sqlc.narg(human_id)::uuid)
  AND (created_at, id) > (coalesce(sqlc.narg(after_created_at)::timestamptz, '-infinity'),
                          coalesce(sqlc.narg(after_id)::uuid, '00000000-0000-0000-0000-000000000000'))
ORDER BY created_at, id
LIMIT sqlc.arg(max_rows)::integer;

-- name: AgentUpdate :one
-- Changes the fields whose set_* flag is true; disabled_at as in HumanUpdate.
UPDATE agents
SET name        = CASE WHEN sqlc.arg(set_name)::boolean THEN sqlc.arg(name)::text ELSE name END,
    description = CASE WHEN sqlc.arg(set_description)::boolean THEN sqlc.arg(description)::text ELSE description END,
    metadata    = CASE WHEN sqlc.arg(set_metadata)::boolean THEN sqlc.arg(metadata)::jsonb ELSE metadata END,
    disabled_at = CASE
                      WHEN NOT sqlc.arg(set_disabled)::boolean THEN disabled_at
                      WHEN sqlc.arg(disabled)::boolean THEN now()
                  END,
    updated_at  = now()
WHERE id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid)
RETURNING *;

-- name: AgentDelete :execrows
-- Deletes an agent; its credentials cascade, and todos, endpoints, adapters and events keep a NULL agent.
DELETE FROM agents
WHERE id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid);

-- name: CredentialInsert :one
-- Mints a credential for a human the caller may act for and, when agent_id is set, an agent of that same human;
-- no row when either is unknown or out of reach. created_at defaults to now(), so credentials_expires_at_check
-- (expires_at > created_at) is the "expires_at must be in the future" rule on the database clock.
INSERT INTO credentials (human_id, agent_id, name, token_prefix, token_hash, scopes, expires_at)
SELECT h.id,
       a.id,
       sqlc.arg(name)::text,
       sqlc.arg(token_prefix)::text,
       sqlc.arg(token_hash)::bytea,
       sqlc.arg(scopes)::text[],
       sqlc.narg(expires_at)::timestamptz
FROM humans AS h
LEFT JOIN agents AS a ON a.id = sqlc.narg(agent_id)::uuid AND a.human_id = h.id
WHERE h.id = sqlc.arg(human_id)::uuid
  AND (sqlc.arg(administrator)::boolean OR h.id = sqlc.arg(caller_id)::uuid)
  AND (sqlc.narg(agent_id)::uuid IS NULL OR a.id IS NOT NULL)
RETURNING id, human_id, agent_id, name, token_prefix, scopes, created_at, expires_at, last_used_at, revoked_at;

-- name: CredentialList :many
-- A page of credentials, newest first, strictly before the keyset position; never the token hash. Without
-- include_inactive only usable ones (not revoked, not expired by the database clock).
SELECT id, human_id, agent_id, name, token_prefix, scopes, created_at, expires_at, last_used_at, revoked_at
FROM credentials
WHERE (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid)
  AND (sqlc.narg(human_id)::uuid IS NULL OR human_id = sqlc.narg(human_id)::uuid)
  AND (sqlc.narg(agent_id)::uuid IS NULL OR agent_id = sqlc.narg(agent_id)::uuid)
  AND (sqlc.arg(include_inactive)::boolean OR (revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())))
  AND (created_at, id) < (coalesce(sqlc.narg(before_created_at)::timestamptz, 'infinity'),
                          coalesce(sqlc.narg(before_id)::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
ORDER BY created_at DESC, id DESC
LIMIT sqlc.arg(max_rows)::integer;

-- name: CredentialRevoke :one
-- Revokes a credential. Idempotent: coalesce keeps the first revoked_at, also when two revokes race (the second
-- re-reads the row after the first commits).
UPDATE credentials
SET revoked_at = coalesce(revoked_at, now())
WHERE id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid)
RETURNING id, human_id, agent_id, name, token_prefix, scopes, created_at, expires_at, last_used_at, revoked_at;

-- name: SettingGet :one
-- One setting. Settings are deployment-wide (no human_id): every admin-scoped caller may read them.
SELECT key, value, description, updated_at
FROM settings
WHERE key = sqlc.arg(key);

-- name: SettingList :many
-- Every setting by key; the set is small and fixed by migrations, so it is not paginated.
SELECT key, value, description, updated_at
FROM settings
ORDER BY key;

-- name: SettingUpdate :one
-- Changes an existing setting (never creates one) for administrators only. updated_at is "when the value last
-- changed", so it moves only when the value really differs.
UPDATE settings
SET value       = CASE WHEN sqlc.arg(set_value)::boolean THEN sqlc.arg(value)::jsonb ELSE value END,
    description = CASE WHEN sqlc.arg(set_description)::boolean THEN sqlc.arg(description)::text ELSE description END,
    updated_at  = CASE
                      WHEN sqlc.arg(set_value)::boolean AND sqlc.arg(value)::jsonb IS DISTINCT FROM value THEN now()
                      ELSE updated_at
                  END
WHERE key = sqlc.arg(key)
  AND sqlc.arg(administrator)::boolean
RETURNING key, value, description, updated_at;

-- name: EndpointInsert :one
-- Creates an endpoint for a human the caller may act for and, when agent_id is set, with an agent of that same
-- human; no row when either is unknown or out of reach. endpoints_slug_key rejects a slug already taken (the
-- caller retries with a fresh one).
INSERT INTO endpoints (human_id, slug, name, agent_id, queue, verification, signature_header, delivery_id_header,
                       max_body_bytes, enabled, hmac_algorithm, hmac_encoding, signature_prefix, tolerance_seconds,
                       rate_limit_per_second)
SELECT h.id,
       sqlc.arg(slug)::text,
       sqlc.arg(name)::text,
       a.id,
       sqlc.arg(queue)::text,
       sqlc.arg(verification)::text,
       sqlc.narg(signature_header)::text,
       sqlc.narg(delivery_id_header)::text,
       sqlc.arg(max_body_bytes)::integer,
       sqlc.arg(enabled)::boolean,
       sqlc.arg(hmac_algorithm)::text,
       sqlc.arg(hmac_encoding)::text,
       sqlc.arg(signature_prefix)::text,
       sqlc.arg(tolerance_seconds)::integer,
       sqlc.arg(rate_limit_per_second)::integer
FROM humans AS h
LEFT JOIN agents AS a ON a.id = sqlc.narg(agent_id)::uuid AND a.human_id = h.id
WHERE h.id = sqlc.arg(human_id)::uuid
  AND (sqlc.arg(administrator)::boolean OR h.id = sqlc.arg(caller_id)::uuid)
  AND (sqlc.narg(agent_id)::uuid IS NULL OR a.id IS NOT NULL)
RETURNING *;

-- name: EndpointGet :one
-- One endpoint of a human the caller may act for.
SELECT *
FROM endpoints
WHERE id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid);

-- name: EndpointLock :one
-- One endpoint of a human the caller may act for, locked until the transaction ends, so changes to it and its
-- secrets (the "last secret" rule) are serialized.
SELECT *
FROM endpoints
WHERE id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid)
FOR UPDATE;

-- name: EndpointList :many
-- A page of endpoints, oldest first, optionally of one human; the tenancy filter applies whatever the filter says.
SELECT *
FROM endpoints
WHERE (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid)
  AND (sqlc.narg(human_id)::uuid IS NULL OR human_id = sqlc.narg(human_id)::uuid)
  AND (created_at, id) > (coalesce(sqlc.narg(after_created_at)::timestamptz, '-infinity'),
                          coalesce(sqlc.narg(after_id)::uuid, '00000000-0000-0000-0000-000000000000'))
ORDER BY created_at, id
LIMIT sqlc.arg(max_rows)::integer;

-- name: EndpointUpdate :one
-- Writes every mutable column of an endpoint the caller may reach (the handler merged the patch into the row it
-- locked with EndpointLock). A non-NULL agent_id must be an agent of the endpoint's own human; no row otherwise.
UPDATE endpoints AS e
SET name                  = sqlc.arg(name)::text,
    agent_id              = sqlc.narg(agent_id)::uuid,
    queue                 = sqlc.arg(queue)::text,
    verification          = sqlc.arg(verification)::text,
    signature_header      = sqlc.narg(signature_header)::text,
    delivery_id_header    = sqlc.narg(delivery_id_header)::text,
    max_body_bytes        = sqlc.arg(max_body_bytes)::integer,
    enabled               = sqlc.arg(enabled)::boolean,
    hmac_algorithm        = sqlc.arg(hmac_algorithm)::text,
    hmac_encoding         = sqlc.arg(hmac_encoding)::text,
    signature_prefix      = sqlc.arg(signature_prefix)::text,
    tolerance_seconds     = sqlc.arg(tolerance_seconds)::integer,
    rate_limit_per_second = sqlc.arg(rate_limit_per_second)::integer,
    updated_at            = now()
WHERE e.id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR e.human_id = sqlc.arg(caller_id)::uuid)
  AND (sqlc.narg(agent_id)::uuid IS NULL
       OR EXISTS (SELECT 1 FROM agents AS a WHERE a.id = sqlc.narg(agent_id)::uuid AND a.human_id = e.human_id))
RETURNING *;

-- name: EndpointTouch :exec
-- Moves updated_at of an endpoint whose secrets changed.
UPDATE endpoints
SET updated_at = now()
WHERE id = sqlc.arg(id);

-- name: EndpointDelete :execrows
-- Deletes an endpoint; its secrets and WEBHOOK adapters cascade, its events keep a NULL endpoint.
DELETE FROM endpoints
WHERE id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid);

-- name: EndpointSecretInsert :exec
-- Stores one secret of an endpoint the caller already reached (EndpointInsert or EndpointLock in the same
-- transaction). The id is chosen by the caller: it is the associated data the sealed material is bound to.
INSERT INTO endpoint_secrets (id, endpoint_id, kind, key_id, sealed, hash, hint)
VALUES (sqlc.arg(id)::uuid, sqlc.arg(endpoint_id)::uuid, sqlc.arg(kind)::text, sqlc.narg(key_id)::text,
        sqlc.narg(sealed)::bytea, sqlc.narg(hash)::bytea, sqlc.arg(hint)::text);

-- name: EndpointSecretList :many
-- The secrets of some endpoints (already reached by the caller), without their material, oldest first; active
-- is whether the secret still verifies by the database clock.
SELECT id, endpoint_id, key_id, hint, created_at, expires_at,
       (expires_at IS NULL OR expires_at > now())::boolean AS active
FROM endpoint_secrets
WHERE endpoint_id = ANY (sqlc.arg(endpoint_ids)::uuid[])
ORDER BY endpoint_id, created_at, id;

-- name: EndpointSecretExpireOthers :exec
-- Rotation: every other unexpired secret of the endpoint keeps verifying for valid_for_micros from now, and never longer
-- than it already would.
UPDATE endpoint_secrets
SET expires_at = least(coalesce(expires_at, 'infinity'), now() + sqlc.arg(valid_for_micros)::bigint * interval '1 microsecond')
WHERE endpoint_id = sqlc.arg(endpoint_id)::uuid
  AND id <> sqlc.arg(keep_id)::uuid
  AND (expires_at IS NULL OR expires_at > now());

-- name: EndpointSecretDelete :execrows
-- Removes one secret of an endpoint the caller already reached.
DELETE FROM endpoint_secrets
WHERE id = sqlc.arg(id)
  AND endpoint_id = sqlc.arg(endpoint_id)::uuid;

-- name: EndpointSecretDeleteAll :exec
-- Removes every secret of an endpoint the caller already reached (a verification change replaced them).
DELETE FROM endpoint_secrets
WHERE endpoint_id = sqlc.arg(endpoint_id)::uuid;

-- name: AdapterInsert :one
-- Creates an adapter for a human the caller may act for; a non-NULL agent_id or endpoint_id must belong to that
-- same human. No row when any of them is unknown or out of reach. cursor, last_polled_at and last_error start
-- NULL: the node's adapter runner writes them.
INSERT INTO adapters (human_id, name, kind, config, endpoint_id, agent_id, queue, enabled)
SELECT h.id,
       sqlc.arg(name)::text,
       sqlc.arg(kind)::text,
       sqlc.arg(config)::jsonb,
       ep.id,
       a.id,
       sqlc.arg(queue)::text,
       sqlc.arg(enabled)::boolean
FROM humans AS h
LEFT JOIN agents AS a ON a.id = sqlc.narg(agent_id)::uuid AND a.human_id = h.id
LEFT JOIN endpoints AS ep ON ep.id = sqlc.narg(endpoint_id)::uuid AND ep.human_id = h.id
WHERE h.id = sqlc.arg(human_id)::uuid
  AND (sqlc.arg(administrator)::boolean OR h.id = sqlc.arg(caller_id)::uuid)
  AND (sqlc.narg(agent_id)::uuid IS NULL OR a.id IS NOT NULL)
  AND (sqlc.narg(endpoint_id)::uuid IS NULL OR ep.id IS NOT NULL)
RETURNING *;

-- name: AdapterGet :one
-- One adapter of a human the caller may act for.
SELECT *
FROM adapters
WHERE id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid);

-- name: AdapterLock :one
-- One adapter of a human the caller may act for, locked until the transaction ends, so an update merges its patch
-- into the row it will overwrite.
SELECT *
FROM adapters
WHERE id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid)
FOR UPDATE;

-- name: AdapterList :many
-- A page of adapters, oldest first, optionally of one human; the tenancy filter applies whatever the filter says.
SELECT *
FROM adapters
WHERE (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid)
  AND (sqlc.narg(human_id)::uuid IS NULL OR human_id = sqlc.narg(human_id)::uuid)
  AND (created_at, id) > (coalesce(sqlc.narg(after_created_at)::timestamptz, '-infinity'),
                          coalesce(sqlc.narg(after_id)::uuid, '00000000-0000-0000-0000-000000000000'))
ORDER BY created_at, id
LIMIT sqlc.arg(max_rows)::integer;

-- name: AdapterUpdate :one
-- Writes every mutable column of an adapter the caller may reach (the handler merged the patch into the row it
-- locked with AdapterLock). A non-NULL agent_id or endpoint_id must belong to the adapter's own human; no row
-- otherwise. kind, human_id, last_polled_at and last_error never change here.
UPDATE adapters AS ad
SET name        = sqlc.arg(name)::text,
    config      = sqlc.arg(config)::jsonb,
    endpoint_id = sqlc.narg(endpoint_id)::uuid,
    agent_id    = sqlc.narg(agent_id)::uuid,
    queue       = sqlc.arg(queue)::text,
    enabled     = sqlc.arg(enabled)::boolean,
    cursor      = sqlc.narg(cursor)::text,
    updated_at  = now()
WHERE ad.id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR ad.human_id = sqlc.arg(caller_id)::uuid)
  AND (sqlc.narg(agent_id)::uuid IS NULL
       OR EXISTS (SELECT 1 FROM agents AS a WHERE a.id = sqlc.narg(agent_id)::uuid AND a.human_id = ad.human_id))
  AND (sqlc.narg(endpoint_id)::uuid IS NULL
       OR EXISTS (SELECT 1 FROM endpoints AS ep
                  WHERE ep.id = sqlc.narg(endpoint_id)::uuid AND ep.human_id = ad.human_id))
RETURNING *;

-- name: AdapterDelete :execrows
-- Deletes an adapter; its events keep a NULL adapter.
DELETE FROM adapters
WHERE id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid);
