-- Where events come from: webhook endpoints, their secrets, and adapters (sqlc: services/ingest/sources/internal/dbsqlc).
-- This package alone writes endpoints, endpoint_secrets and adapters.
--
-- Tenancy lives here, not in Go: every statement of the admin API takes the caller's human id (caller_id) and
-- whether the caller is an administrator, and filters with
--   (administrator OR human_id = caller_id)
-- so a row of another tenant is simply not matched: it looks exactly like a missing row (pgx.ErrNoRows / 0 rows),
-- and a write that does not match changes nothing. Lists use keyset pagination on (created_at, id); the
-- coalesce() bounds stand for "from the start" on the first page. The webhook edge and the adapter runner read
-- across tenants: a slug is the endpoint's unguessable address, and a node runs every tenant's pull adapters.

-- name: EndpointInsert :one
-- Creates an endpoint for a human the caller may act for and, when agent_id is set, with an agent of that same
-- human; no row when either is unknown or out of reach. endpoints_slug_key rejects a slug already taken (the
-- caller retries with a fresh one).
INSERT INTO endpoints (human_id, slug, name, agent_id, queue, verification, signature_header, delivery_id_header,
                       max_body_bytes, enabled, hmac_algorithm, hmac_encoding, signature_prefix, tolerance_seconds,
                       rate_limit_per_second, public_url, verify_token_sha256, topic_header, topic_pointer,
                       body_dedup_window_seconds)
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
       sqlc.arg(rate_limit_per_second)::integer,
       sqlc.narg(public_url)::text,
       sqlc.narg(verify_token_sha256)::bytea,
       sqlc.narg(topic_header)::text,
       sqlc.narg(topic_pointer)::text,
       sqlc.arg(body_dedup_window_seconds)::integer
FROM humans AS h
LEFT JOIN agents AS a ON a.id = sqlc.narg(agent_id)::uuid AND a.human_id = h.id
WHERE h.id = sqlc.arg(human_id)::uuid
  AND (sqlc.arg(administrator)::boolean OR h.id = sqlc.arg(caller_id)::uuid)
  AND (sqlc.narg(agent_id)::uuid IS NULL OR a.id IS NOT NULL)
RETURNING *;

-- name: EndpointLockTenant :exec
-- Serializes a human's endpoint creations (a transaction-level advisory lock), so the count below and the insert
-- after it see every earlier creation: tenant.limits' max_endpoints holds under concurrent calls. Taken only for a human
-- the caller may act for, so nobody can hold up another tenant's creations.
SELECT pg_advisory_xact_lock(hashtextextended('endpoints:' || sqlc.arg(human_id)::uuid::text, 0))
WHERE sqlc.arg(administrator)::boolean OR sqlc.arg(human_id)::uuid = sqlc.arg(caller_id)::uuid;

-- name: EndpointCount :one
-- The endpoints a human holds, for max_endpoints. Zero for a human out of the caller's reach, whose insert then matches
-- nothing (NOT_FOUND): a full tenant is never told apart from a missing one.
SELECT count(*)
FROM endpoints
WHERE human_id = sqlc.arg(human_id)::uuid
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid);

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
    public_url            = sqlc.narg(public_url)::text,
    verify_token_sha256   = sqlc.narg(verify_token_sha256)::bytea,
    topic_header          = sqlc.narg(topic_header)::text,
    topic_pointer         = sqlc.narg(topic_pointer)::text,
    body_dedup_window_seconds = sqlc.arg(body_dedup_window_seconds)::integer,
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

-- name: EndpointDelete :one
-- Deletes an endpoint; its secrets and WEBHOOK adapters cascade, its events keep a NULL endpoint. The slug is
-- for the nodes' caches of it (no row: unknown or out of reach).
DELETE FROM endpoints
WHERE id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid)
RETURNING slug;

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
-- NULL: the node's adapter runner writes them. source_key is the config's (NULL for a push adapter); another
-- human's adapter with the key breaks adapters_source_owner_excl.
INSERT INTO adapters (human_id, name, kind, config, source_key, endpoint_id, agent_id, queue, enabled)
SELECT h.id,
       sqlc.arg(name)::text,
       sqlc.arg(kind)::text,
       sqlc.arg(config)::jsonb,
       sqlc.narg(source_key)::text,
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
-- otherwise. kind, human_id, last_polled_at and last_error never change here; source_key is the config's (the
-- addresses it reaches are replaced by AdapterSourceAddrsDelete and AdapterSourceAddrsInsert).
UPDATE adapters AS ad
SET name        = sqlc.arg(name)::text,
    config      = sqlc.arg(config)::jsonb,
    source_key  = sqlc.narg(source_key)::text,
    endpoint_id = sqlc.narg(endpoint_id)::uuid,
    agent_id    = sqlc.narg(agent_id)::uuid,
    queue       = sqlc.arg(queue)::text,
    enabled     = sqlc.arg(enabled)::boolean,
    cursor      = sqlc.narg(cursor)::text,
    updated_at  = now(),
    -- A config naming another source starts its claim to it anew; the record of the server it was allowed to
    -- read stays while db and stream do (the addr may name that server another way: the next claim keeps the
    -- record when the server is the same, and replaces it otherwise).
    source_since    = CASE WHEN ad.source_key IS NOT DISTINCT FROM sqlc.narg(source_key)::text THEN ad.source_since ELSE now() END,
    server_key      = CASE WHEN ad.config -> 'db' = sqlc.arg(config)::jsonb -> 'db'
                            AND ad.config -> 'stream' = sqlc.arg(config)::jsonb -> 'stream' THEN ad.server_key END,
    server_addr_key = CASE WHEN ad.config -> 'db' = sqlc.arg(config)::jsonb -> 'db'
                            AND ad.config -> 'stream' = sqlc.arg(config)::jsonb -> 'stream' THEN ad.server_addr_key END,
    server_since    = CASE WHEN ad.config -> 'db' = sqlc.arg(config)::jsonb -> 'db'
                            AND ad.config -> 'stream' = sqlc.arg(config)::jsonb -> 'stream' THEN ad.server_since END
WHERE ad.id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR ad.human_id = sqlc.arg(caller_id)::uuid)
  AND (sqlc.narg(agent_id)::uuid IS NULL
       OR EXISTS (SELECT 1 FROM agents AS a WHERE a.id = sqlc.narg(agent_id)::uuid AND a.human_id = ad.human_id))
  AND (sqlc.narg(endpoint_id)::uuid IS NULL
       OR EXISTS (SELECT 1 FROM endpoints AS ep
                  WHERE ep.id = sqlc.narg(endpoint_id)::uuid AND ep.human_id = ad.human_id))
RETURNING *;

-- name: AdapterLockTenant :exec
-- Serializes a human's adapter creations (a transaction-level advisory lock), so the count below and the insert
-- after it see every earlier creation: tenant.limits' max_adapters holds under concurrent calls. Taken only for a human
-- the caller may act for, so nobody can hold up another tenant's creations.
SELECT pg_advisory_xact_lock(hashtextextended('adapters:' || sqlc.arg(human_id)::uuid::text, 0))
WHERE sqlc.arg(administrator)::boolean OR sqlc.arg(human_id)::uuid = sqlc.arg(caller_id)::uuid;

-- name: AdapterCount :one
-- The adapters a human holds, for max_adapters. Zero for a human out of the caller's reach, whose insert then matches
-- nothing (NOT_FOUND): a full tenant is never told apart from a missing one.
SELECT count(*)
FROM adapters
WHERE human_id = sqlc.arg(human_id)::uuid
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid);

-- name: AdapterSourceAddrsInsert :exec
-- Records addresses an adapter's addr reaches (redisstream.StoredConfig.AddrKey), for an adapter the caller
-- reached in this transaction. Another human's key breaks adapter_source_addrs_owner_excl.
INSERT INTO adapter_source_addrs (adapter_id, human_id, addr_key)
SELECT a.id, a.human_id, k.addr_key
FROM adapters AS a
CROSS JOIN unnest(sqlc.arg(addr_keys)::text[]) AS k(addr_key)
WHERE a.id = sqlc.arg(adapter_id)::uuid
ON CONFLICT (adapter_id, addr_key) DO NOTHING;

-- name: AdapterSourceAddrsDelete :exec
-- Forgets the addresses of an adapter whose config the caller is replacing (AdapterLock in this transaction).
DELETE FROM adapter_source_addrs
WHERE adapter_id = sqlc.arg(adapter_id)::uuid;

-- name: AdapterDelete :execrows
-- Deletes an adapter; its events keep a NULL adapter.
DELETE FROM adapters
WHERE id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid);
-- name: EndpointBySlug :one
-- The endpoint a POST (or handshake GET) /hooks/{slug} is for, enabled or not (a disabled one answers 404 like an unknown one), with
-- its tenant's request limit (ingest.limits; default_tenant_rate, pkg/settings' default, when missing).
SELECT sqlc.embed(e),
       coalesce((SELECT (s.value ->> 'tenant_requests_per_second')::integer FROM settings AS s WHERE s.key = 'ingest.limits'),
                sqlc.arg(default_tenant_rate)::integer)::integer AS tenant_requests_per_second
FROM endpoints AS e
WHERE e.slug = sqlc.arg(slug);

-- name: EndpointActiveSecrets :many
-- The secrets that verify right now: those not yet expired (a replaced secret keeps verifying until its
-- expires_at, so senders can switch over).
SELECT s.id, s.kind, s.key_id, s.sealed, s.hash
FROM endpoint_secrets AS s
WHERE s.endpoint_id = sqlc.arg(endpoint_id)
  AND (s.expires_at IS NULL OR s.expires_at > now())
ORDER BY s.created_at;

-- name: AdaptersToRun :many
-- The pull adapters a node runs: enabled Redis Streams adapters that own their stream (a row without source_key
-- lost its stream to another owner's older adapter in migration 00013), with what their events need, and the
-- server they were last allowed to read (NULL: none, or they lost it to an older adapter: AdapterServerRevoke).
SELECT a.id, a.human_id, a.queue, a.agent_id, a.config, a.server_key
FROM adapters AS a
WHERE a.enabled
  AND a.kind = 'redis_stream'
  AND a.source_key IS NOT NULL
ORDER BY a.id;

-- name: AdapterReport :exec
-- Records an adapter's last run state for its admin RPCs ('' clears last_error).
UPDATE adapters
SET last_polled_at = now(),
    last_error     = nullif(sqlc.arg(last_error)::text, '')
WHERE id = sqlc.arg(id);

-- name: AdapterServerRivals :many
-- The claims' statements (servers.go) reach across tenants like the runner: a node's adapter, connected to a
-- server, asks whether it may read its stream there; the answer names no other adapter to the client.
-- Other humans' adapters of the same db and stream that might be on the server the adapter reached and could
-- keep it from reading: the node probes their addrs (redisstream.Probe) before the claim. None when the adapter
-- already holds a record of this server (server_key, or server_addr_key after a restart of the server), or when
-- the rival already records this server (AdapterClaimRivals finds it). A rival that never read its stream only
-- matters when its config named the stream first.
SELECT r.id, (r.config ->> 'addr')::text AS addr, coalesce(r.config ->> 'username', '')::text AS username
FROM adapters AS me
JOIN adapters AS r ON r.kind = 'redis_stream'
    AND r.human_id <> me.human_id
    AND r.config ->> 'stream' = me.config ->> 'stream'
    AND coalesce(r.config ->> 'db', '0') = coalesce(me.config ->> 'db', '0')
WHERE me.id = sqlc.arg(id)::uuid
  AND me.server_key IS DISTINCT FROM sqlc.arg(server_key)::text
  AND me.server_addr_key IS DISTINCT FROM sqlc.arg(addr_key)::text
  AND r.server_key IS DISTINCT FROM sqlc.arg(server_key)::text
  AND (r.server_key IS NOT NULL OR (r.source_since, r.id) < (me.source_since, me.id))
ORDER BY r.server_key IS NULL, coalesce(r.server_since, r.source_since), r.id
LIMIT sqlc.arg(max_rows)::integer;

-- name: AdapterClaimLock :exec
-- Serializes the claims of one db and stream (every adapter that could contend for it), to the end of the
-- transaction.
SELECT pg_advisory_xact_lock(hashtextextended('adapter_stream:' || coalesce(config ->> 'db', '0') || '/' || (config ->> 'stream'), 0))
FROM adapters
WHERE id = sqlc.arg(id)::uuid;

-- name: AdapterClaimSelf :one
-- The claiming adapter's standing, read after AdapterClaimLock; addr_taken: another human's adapter reaches the
-- address it dialed (adapter_source_addrs).
SELECT a.human_id, a.source_since, a.server_key, a.server_addr_key, a.server_since,
       EXISTS (SELECT 1 FROM adapter_source_addrs AS s
               WHERE s.addr_key = sqlc.arg(addr_key)::text AND s.human_id <> a.human_id) AS addr_taken
FROM adapters AS a
WHERE a.id = sqlc.arg(id)::uuid
  AND a.kind = 'redis_stream';

-- name: AdapterClaimRivals :many
-- Other humans' adapters known to be on the claimed server: recording it, or found there by a probe.
SELECT id, human_id, source_since, server_key, server_addr_key, server_since
FROM adapters
WHERE kind = 'redis_stream'
  AND human_id <> sqlc.arg(human_id)::uuid
  AND (server_key = sqlc.arg(server_key)::text OR id = ANY (sqlc.arg(probed)::uuid[]))
ORDER BY id;

-- name: AdapterSourceAddrOwners :many
-- Who reaches some addresses: a rival a probe found at an address another human's adapter reaches is refused there
-- itself, so it outranks no one.
SELECT addr_key, human_id
FROM adapter_source_addrs
WHERE addr_key = ANY (sqlc.arg(addr_keys)::text[]);

-- name: AdapterServerRevoke :exec
-- Takes the server record from adapters an older adapter of another human outranks: their nodes stop them at the
-- next reconcile (AdaptersToRun), and their next claim is refused.
UPDATE adapters
SET server_key = NULL, server_addr_key = NULL, server_since = NULL
WHERE id = ANY (sqlc.arg(ids)::uuid[]);

-- name: AdapterServerSet :exec
-- Records the server an adapter was allowed to read: since now, unless it kept reading the server it recorded
-- (carried: the same run_id, or the same address after the server restarted).
UPDATE adapters
SET server_key = sqlc.arg(server_key)::text, server_addr_key = sqlc.arg(addr_key)::text,
    server_since = CASE WHEN sqlc.arg(carried)::boolean AND server_since IS NOT NULL THEN server_since ELSE now() END
WHERE id = sqlc.arg(id)::uuid;

-- name: AdapterSourceAddrAdd :exec
-- Records an address a node dialed for an adapter, unless another human's adapter already reaches it.
INSERT INTO adapter_source_addrs (adapter_id, human_id, addr_key)
SELECT a.id, a.human_id, sqlc.arg(addr_key)::text
FROM adapters AS a
WHERE a.id = sqlc.arg(id)::uuid
ON CONFLICT DO NOTHING;

-- name: EndpointRouteList :many
-- The routes of some endpoints (already reached by the caller), in each endpoint's order.
SELECT endpoint_id, position, queue::text AS queue, agent_id, topic_glob, filter
FROM endpoint_routes
WHERE endpoint_id = ANY (sqlc.arg(endpoint_ids)::uuid[])
ORDER BY endpoint_id, position;

-- name: EndpointRouteDeleteAll :exec
-- Removes every route of an endpoint the caller holds locked (EndpointLock), before its new list is inserted.
DELETE FROM endpoint_routes
WHERE endpoint_id = sqlc.arg(endpoint_id)::uuid;

-- name: EndpointRouteInsert :many
-- Stores the routes of an endpoint the caller reached in this transaction (EndpointInsert or EndpointLock), from
-- parallel arrays (an empty string is NULL). A route whose agent is not an agent of the endpoint's human is left
-- out; the caller compares the returned positions with what it sent and answers NOT_FOUND for the missing one.
INSERT INTO endpoint_routes (endpoint_id, position, queue, agent_id, topic_glob, filter)
SELECT e.id, r.position, r.queue, a.id, nullif(r.topic_glob, ''), nullif(r.filter, '')
FROM endpoints AS e
CROSS JOIN (
    SELECT unnest(sqlc.arg(positions)::smallint[]) AS position,
           unnest(sqlc.arg(queues)::text[])        AS queue,
           unnest(sqlc.arg(agent_ids)::text[])     AS agent_id,
           unnest(sqlc.arg(topic_globs)::text[])   AS topic_glob,
           unnest(sqlc.arg(filters)::text[])       AS filter
) AS r
LEFT JOIN agents AS a ON a.id = nullif(r.agent_id, '')::uuid AND a.human_id = e.human_id
WHERE e.id = sqlc.arg(endpoint_id)::uuid
  AND (r.agent_id = '' OR a.id IS NOT NULL)
ORDER BY r.position
RETURNING position;
