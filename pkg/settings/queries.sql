-- The settings table's statements (sqlc: pkg/settings/internal/dbsqlc). Settings are deployment-wide (no
-- human_id): every admin-scoped caller may read them, only an administrator may change one, and nobody creates
-- or deletes one (the set is fixed by migrations).

-- name: SettingGet :one
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
