-- A todo that is deleted by its completion instead of kept as COMPLETED
-- until retention (issue 17, docs/design/queue-flow-control.md §3j): the
-- producer's choice per todo, as BullMQ's removeOnComplete, for work whose
-- result nobody reads back. A completion then costs a DELETE (the row
-- version is only marked dead, no index entry is written) instead of an
-- UPDATE that writes a new version into every index of todos.
--
-- Immutable after insert and in no index. A constant default: adding the
-- column rewrites nothing (the default lives in the catalog).

-- +goose Up

ALTER TABLE todos
    ADD COLUMN remove_on_complete boolean NOT NULL DEFAULT false;

-- +goose Down

ALTER TABLE todos
    DROP COLUMN remove_on_complete;
