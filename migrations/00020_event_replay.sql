-- Replay of stored events (IngestService.ReplayEvent / ReplayEvents): each
-- replay creates new todos for an event that is already stored, and is
-- recorded on the event.
--
-- replay_count counts the replays that created at least one todo (a retry
-- answered from its replay_key creates none and counts nothing);
-- last_replayed_at is the last of them (NULL: never replayed). Both are
-- updated in the transaction that inserts the replay's todos.
--
-- payload_pruned_at marks an event whose payload was removed while its row
-- (the history: source, topic, delivery id, times) was kept; such an event
-- cannot be replayed (FAILED_PRECONDITION), since its todo's worker would
-- read an empty body. NULL: the payload is the one received.
--
-- Adding a column with a constant default rewrites nothing (PostgreSQL
-- >= 11), and the CHECK is NOT VALID: every existing row holds 0.

-- +goose Up

ALTER TABLE events
    ADD COLUMN replay_count integer NOT NULL DEFAULT 0,
    ADD COLUMN last_replayed_at timestamptz,
    ADD COLUMN payload_pruned_at timestamptz,
    ADD CONSTRAINT events_replay_count_check CHECK (replay_count >= 0) NOT VALID;

-- +goose Down

ALTER TABLE events
    DROP CONSTRAINT events_replay_count_check,
    DROP COLUMN payload_pruned_at,
    DROP COLUMN last_replayed_at,
    DROP COLUMN replay_count;
