-- One definition of a queue name, checked when a value is written into the
-- column, not on every update of the row.
--
-- A CHECK constraint is evaluated on every new row version, even when its
-- column did not change. todos.queue's regular expression therefore ran on
-- every claim and every completion: 4% of the database's CPU under
-- `switchboard bench queue`. A domain's check runs only when a value is
-- coerced to it (INSERT, or an UPDATE that sets queue), which is the write
-- that can actually be wrong. endpoints and adapters take the same domain so
-- the rule exists once.
--
-- Changing a column's type rewrites its table and indexes under an ACCESS
-- EXCLUSIVE lock. Done while the project has no released version, so no
-- production table of any size goes through it.

-- +goose Up

CREATE DOMAIN queue_name AS text
    CONSTRAINT queue_name_check CHECK (VALUE ~ '^[a-z0-9][a-z0-9._-]{0,62}$');

ALTER TABLE todos
    DROP CONSTRAINT todos_queue_check,
    ALTER COLUMN queue TYPE queue_name;
ALTER TABLE endpoints
    DROP CONSTRAINT endpoints_queue_check,
    ALTER COLUMN queue TYPE queue_name;
ALTER TABLE adapters
    DROP CONSTRAINT adapters_queue_check,
    ALTER COLUMN queue TYPE queue_name;

-- +goose Down

ALTER TABLE adapters
    ALTER COLUMN queue TYPE text,
    ADD CONSTRAINT adapters_queue_check CHECK (queue ~ '^[a-z0-9][a-z0-9._-]{0,62}$');
ALTER TABLE endpoints
    ALTER COLUMN queue TYPE text,
    ADD CONSTRAINT endpoints_queue_check CHECK (queue ~ '^[a-z0-9][a-z0-9._-]{0,62}$');
ALTER TABLE todos
    ALTER COLUMN queue TYPE text,
    ADD CONSTRAINT todos_queue_check CHECK (queue ~ '^[a-z0-9][a-z0-9._-]{0,62}$');

DROP DOMAIN queue_name;
