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
-- Bootstrap: the administrator human with this email, created if missing (and made an administrator if it
-- exists), so minting the first admin credential needs no credential.
INSERT INTO humans (email, display_name, is_admin)
VALUES (sqlc.arg(email), 'Administrator', true)
ON CONFLICT ((lower(email))) DO UPDATE
SET is_admin    = true,
    disabled_at = NULL,
    updated_at  = now()
RETURNING id;

-- name: CredentialInsert :one
-- Stores a minted credential (its hash, never the token). ON CONFLICT makes the bootstrap token idempotent:
-- every node of a cluster may insert the same SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN at boot.
INSERT INTO credentials (human_id, agent_id, name, token_prefix, token_hash, scopes, expires_at)
VALUES (sqlc.arg(human_id), sqlc.narg(agent_id), sqlc.arg(name), sqlc.arg(token_prefix), sqlc.arg(token_hash),
        sqlc.arg(scopes), sqlc.narg(expires_at))
ON CONFLICT (token_hash) DO NOTHING
RETURNING id;
