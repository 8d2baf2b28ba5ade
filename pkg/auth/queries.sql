-- The identity tables' statements: humans, agents and credentials (sqlc: pkg/auth/internal/dbsqlc). This package
-- alone writes them. Tenancy lives here, not in Go: every statement over a tenant-owned row takes the caller's
-- human id (caller_id) and whether the caller is an administrator, and filters with
--   (administrator OR human_id = caller_id)
-- so a row of another tenant is simply not matched: it looks exactly like a missing row (pgx.ErrNoRows / 0 rows),
-- and a write that does not match changes nothing. Lists use keyset pagination on (created_at, id); the
-- coalesce() bounds stand for "from the start" on the first page.

-- name: CredentialAuthenticate :one
-- Resolves a presented token's hash to the principal it stands for and stamps last_used_at, in one round trip.
-- Every validity rule is here, on the database clock: not revoked, not expired, human and agent not disabled.
-- The hash is an equality lookup on a unique index; comparing HMAC outputs this way leaks nothing useful, since a
-- caller cannot steer the hash of a token it does not already hold. expires_in_ms lets the cache stop serving
-- the credential when it expires (-1: never).
UPDATE credentials AS c
SET last_used_at = now()
FROM humans AS h
WHERE c.token_hash = sqlc.arg(token_hash)
  AND h.id = c.human_id
  AND c.revoked_at IS NULL
  AND (c.expires_at IS NULL OR c.expires_at > now())
  AND h.disabled_at IS NULL
  AND (c.agent_id IS NULL
    OR EXISTS (SELECT 1 FROM agents AS a WHERE a.id = c.agent_id AND a.disabled_at IS NULL))
RETURNING c.id,
          c.human_id,
          c.agent_id,
          c.scopes,
          h.is_admin,
          coalesce((extract(epoch FROM c.expires_at - now()) * 1000)::bigint, -1)::bigint AS expires_in_ms;

-- name: HumanEnsureAdministrator :one
-- Bootstrap: the administrator human with this email, created if missing, so minting the first admin credential
-- needs no credential. An existing human is matched only if it already is an administrator, or if the operator
-- asked for its promotion knowingly (promote): a tenant that set its own email to the one an operator later
-- bootstraps must not become the deployment's administrator. No row: the email belongs to a non-administrator.
-- promoted says whether this call made an existing human an administrator (for the operator's log).
WITH prior AS (SELECT is_admin FROM humans WHERE lower(email) = lower(sqlc.arg(email)::text))
INSERT INTO humans (email, display_name, is_admin)
VALUES (sqlc.arg(email)::text, 'Administrator', true)
ON CONFLICT ((lower(email))) DO UPDATE
SET is_admin    = true,
    disabled_at = NULL,
    updated_at  = now()
WHERE humans.is_admin OR sqlc.arg(promote)::boolean
RETURNING id, (NOT coalesce((SELECT is_admin FROM prior), true))::boolean AS promoted;

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

-- name: AgentLockTenant :exec
-- Serializes the creation of one tenant's agents (a transaction-level advisory lock), so that AgentCount and the
-- insert after it see every earlier creation: tenant.limits' max_agents holds under concurrent calls. Taken only
-- for a human the caller may act for, so nobody can hold up another tenant's creations.
SELECT pg_advisory_xact_lock(hashtextextended('agents:' || sqlc.arg(human_id)::uuid::text, 0))
WHERE sqlc.arg(administrator)::boolean OR sqlc.arg(human_id)::uuid = sqlc.arg(caller_id)::uuid;

-- name: AgentCount :one
-- The agents a human holds (disabled ones too: each is a row and a persona), for max_agents. Zero for a human out
-- of the caller's reach, whose insert then matches nothing: a full tenant is never told apart from a missing one.
SELECT count(*)
FROM agents
WHERE human_id = sqlc.arg(human_id)::uuid
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid);

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
-- (expires_at > created_at) is the "expires_at must be in the future" rule on the database clock. ON CONFLICT makes
-- the bootstrap token idempotent: every node of a cluster may insert the same SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN at boot
-- (a minted token's hash is new, so for MintCredential no row means the human or agent is out of reach). minted_by
-- is the credential whose call mints this one (NULL at bootstrap and from the command line).
INSERT INTO credentials (human_id, agent_id, name, token_prefix, token_hash, scopes, expires_at, minted_by)
SELECT h.id,
       a.id,
       sqlc.arg(name)::text,
       sqlc.arg(token_prefix)::text,
       sqlc.arg(token_hash)::bytea,
       sqlc.arg(scopes)::text[],
       sqlc.narg(expires_at)::timestamptz,
       sqlc.narg(minted_by)::uuid
FROM humans AS h
LEFT JOIN agents AS a ON a.id = sqlc.narg(agent_id)::uuid AND a.human_id = h.id
WHERE h.id = sqlc.arg(human_id)::uuid
  AND (sqlc.arg(administrator)::boolean OR h.id = sqlc.arg(caller_id)::uuid)
  AND (sqlc.narg(agent_id)::uuid IS NULL OR a.id IS NOT NULL)
ON CONFLICT (token_hash) DO NOTHING
RETURNING id, human_id, agent_id, name, token_prefix, scopes, created_at, expires_at, last_used_at, revoked_at, minted_by;

-- name: CredentialLockTenant :exec
-- Serializes the minting of one tenant's credentials, as AgentLockTenant does its agents: tenant.limits'
-- max_credentials holds under concurrent calls.
SELECT pg_advisory_xact_lock(hashtextextended('credentials:' || sqlc.arg(human_id)::uuid::text, 0))
WHERE sqlc.arg(administrator)::boolean OR sqlc.arg(human_id)::uuid = sqlc.arg(caller_id)::uuid;

-- name: CredentialCountLive :one
-- A human's live credentials (neither revoked nor expired, on the database clock), for max_credentials; zero out of
-- the caller's reach, as AgentCount. idx_credentials_live skips the revoked ones.
SELECT count(*)
FROM credentials
WHERE human_id = sqlc.arg(human_id)::uuid
  AND revoked_at IS NULL
  AND (expires_at IS NULL OR expires_at > now())
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid);

-- name: CredentialLockMinter :one
-- The minting credential, still live, share-locked until the mint commits. The token cache may still serve a
-- credential revoked seconds ago, so the database has the last word: no row (revoked or expired) refuses the mint.
-- The lock orders a mint against a revocation of its minter's tree (CredentialRevokeTree locks each row FOR
-- UPDATE): a mint that locked first commits before the revocation reads the tree again and finds its row; one that
-- waits re-reads the minter after the revocation commits and finds it revoked.
SELECT id
FROM credentials
WHERE id = sqlc.arg(id)
  AND revoked_at IS NULL
  AND (expires_at IS NULL OR expires_at > now())
FOR SHARE;

-- name: CredentialMintBounds :one
-- What bounds the expiry of a credential minted now, on the database clock: now() (the deployment's maximum
-- lifetime counts from it) and the minting credential's own expiry (NULL: it never expires, or no credential
-- minted it).
SELECT now()::timestamptz AS now,
       (SELECT c.expires_at FROM credentials AS c WHERE c.id = sqlc.narg(minter_id)::uuid) AS minter_expires_at;

-- name: CredentialList :many
-- A page of credentials, newest first, strictly before the keyset position; never the token hash. Without
-- include_inactive only usable ones (not revoked, not expired by the database clock).
SELECT id, human_id, agent_id, name, token_prefix, scopes, created_at, expires_at, last_used_at, revoked_at, minted_by
FROM credentials
WHERE (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid)
  AND (sqlc.narg(human_id)::uuid IS NULL OR human_id = sqlc.narg(human_id)::uuid)
  AND (sqlc.narg(agent_id)::uuid IS NULL OR agent_id = sqlc.narg(agent_id)::uuid)
  AND (sqlc.arg(include_inactive)::boolean OR (revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())))
  AND (created_at, id) < (coalesce(sqlc.narg(before_created_at)::timestamptz, 'infinity'),
                          coalesce(sqlc.narg(before_id)::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
ORDER BY created_at DESC, id DESC
LIMIT sqlc.arg(max_rows)::integer;

-- name: CredentialGet :one
-- One credential the caller may reach, without its token hash.
SELECT id, human_id, agent_id, name, token_prefix, scopes, created_at, expires_at, last_used_at, revoked_at, minted_by
FROM credentials
WHERE id = sqlc.arg(id)
  AND (sqlc.arg(administrator)::boolean OR human_id = sqlc.arg(caller_id)::uuid);

-- name: CredentialRevokeTree :many
-- Revokes a credential the caller may reach and everything it minted, transitively (minted_by), whoever's tenant
-- those are in: a token that minted them could only do so while it was trusted. The credential making the call
-- (spared_id) is left out with its own subtree when it lies in the tree, so a token's successor, minted by it,
-- may revoke it: that is rotation. Every row of the tree is locked FOR UPDATE in id order before any changes (two
-- revocations of overlapping trees wait rather than deadlock); the rows already revoked are locked too, and keep
-- their revoked_at. Returns the ids revoked by this statement. The tree is read from the statement's snapshot, so
-- a mint under it that committed while this waited for a lock is missed: the caller runs it again in the same
-- transaction until it revokes nothing (see CredentialLockMinter).
WITH RECURSIVE tree AS (
    SELECT c.id
    FROM credentials AS c
    WHERE c.id = sqlc.arg(id)
      AND (sqlc.arg(administrator)::boolean OR c.human_id = sqlc.arg(caller_id)::uuid)
    UNION
    SELECT c.id
    FROM credentials AS c
    JOIN tree AS t ON c.minted_by = t.id
    WHERE c.id IS DISTINCT FROM sqlc.narg(spared_id)::uuid
),
locked AS MATERIALIZED (
    SELECT c.id
    FROM credentials AS c
    JOIN tree USING (id)
    ORDER BY c.id
    FOR UPDATE OF c
)
UPDATE credentials AS c
SET revoked_at = now()
FROM locked
WHERE c.id = locked.id
  AND c.revoked_at IS NULL
RETURNING c.id;

-- name: CredentialLockWithMinted :many
-- RevokeCredential with keep_minted: locks a credential and what it minted directly, in id order as
-- CredentialRevokeTree locks (the two wait for each other rather than deadlock). A mint under it waits on this lock
-- (CredentialLockMinter) and then finds it revoked.
SELECT id
FROM credentials
WHERE id = sqlc.arg(id)
   OR minted_by = sqlc.arg(id)
ORDER BY id
FOR UPDATE;

-- name: CredentialHandOnMinted :execrows
-- Hands what a credential minted directly to its own minter (NULL: to none), taking it out of the lineage without
-- breaking it: the credentials below are still reached by a revocation of any credential above. A mint that
-- committed while CredentialLockWithMinted waited is found by running it again until it changes nothing.
UPDATE credentials AS c
SET minted_by = p.minted_by
FROM credentials AS p
WHERE p.id = sqlc.arg(id)
  AND c.minted_by = p.id;

-- name: CredentialRevokeOne :exec
-- Revokes one credential (locked already); a revoked one keeps its revoked_at.
UPDATE credentials
SET revoked_at = now()
WHERE id = sqlc.arg(id)
  AND revoked_at IS NULL;

-- name: CredentialRevokeMintedByHuman :many
-- Before a human is deleted (HumanDelete), revokes the trees its credentials minted in other tenants (an
-- administrator mints tenants' first credentials); its own credentials go with it. Locks and returns as
-- CredentialRevokeTree, and is run again until it revokes nothing for the same reason.
WITH RECURSIVE tree AS (
    SELECT c.id
    FROM credentials AS c
    JOIN credentials AS m ON m.id = c.minted_by
    WHERE m.human_id = sqlc.arg(human_id)::uuid
      AND c.human_id <> sqlc.arg(human_id)::uuid
    UNION
    SELECT c.id
    FROM credentials AS c
    JOIN tree AS t ON c.minted_by = t.id
    WHERE c.human_id <> sqlc.arg(human_id)::uuid
),
locked AS MATERIALIZED (
    SELECT c.id
    FROM credentials AS c
    JOIN tree USING (id)
    ORDER BY c.id
    FOR UPDATE OF c
)
UPDATE credentials AS c
SET revoked_at = now()
FROM locked
WHERE c.id = locked.id
  AND c.revoked_at IS NULL
RETURNING c.id;
