-- Queue v2: a cap on consecutive lease expiries, and Complete's result.
--
-- lease_expiries counts the leases of a todo that ran out in a row (the
-- reaper increments it; Complete, Fail and Release reset it). A todo that
-- keeps killing its workers would otherwise burn through max_attempts (25 by
-- default) at one lease length each; a small separate cap dead-letters it
-- early, with the reason in last_error. It is never indexed, so the reaper's
-- and the workers' updates stay HOT.
--
-- result holds the optional JSON result a worker hands to Complete. NULL
-- until then (and for todos completed without one).

-- +goose Up

ALTER TABLE todos
    ADD COLUMN lease_expiries integer NOT NULL DEFAULT 0,
    ADD COLUMN result         jsonb,
    ADD CONSTRAINT todos_lease_expiries_check CHECK (lease_expiries >= 0),
    ADD CONSTRAINT todos_result_check CHECK (result IS NULL OR jsonb_typeof(result) = 'object');

-- +goose Down

ALTER TABLE todos
    DROP CONSTRAINT todos_result_check,
    DROP CONSTRAINT todos_lease_expiries_check,
    DROP COLUMN result,
    DROP COLUMN lease_expiries;
