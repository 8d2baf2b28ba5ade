-- Credential lineage and the per-tenant caps on identities (issue 31).
--
-- minted_by is the credential whose call minted this one (MintCredential
-- records its caller). NULL: nothing minted it through the API — the
-- bootstrap token, `switchboard token create`, and every credential stored
-- before this migration, whose minter was never recorded and cannot be
-- recovered (they stay outside every tree; docs/access.md). Revoking a
-- credential revokes what it minted, transitively (pkg/auth's
-- CredentialRevokeTree), so a stolen token cannot outlive its revocation by
-- minting itself a successor.
--
-- ON DELETE SET NULL: a credential row goes only with its human or agent
-- (ON DELETE CASCADE), and the human's deletion revokes the trees its
-- credentials minted first (HumanDelete); the revoked rows then keep their
-- revoked_at without a parent to point to.
--
-- idx_credentials_minted_by walks a tree down; idx_credentials_live counts a
-- tenant's live credentials for tenant.limits' max_credentials without
-- reading the revoked ones, which are never deleted and only pile up.

-- +goose Up

ALTER TABLE credentials
    ADD COLUMN minted_by uuid REFERENCES credentials (id) ON DELETE SET NULL;

CREATE INDEX idx_credentials_minted_by ON credentials (minted_by) WHERE minted_by IS NOT NULL;
CREATE INDEX idx_credentials_live ON credentials (human_id, expires_at) WHERE revoked_at IS NULL;

-- +goose Down

DROP INDEX idx_credentials_live;
DROP INDEX idx_credentials_minted_by;
ALTER TABLE credentials DROP COLUMN minted_by;
