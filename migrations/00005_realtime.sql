-- Durable realtime events, kept so that a subscriber can resume from the last
-- id it saw. NOTIFY (sent after commit, coalesced) only says "new rows up to
-- id N": its payload is capped at 8000 bytes and nothing is replayed to a
-- listener that was disconnected, so the table is the source of truth.
-- Ephemeral events (typing, presence) never touch this table.

-- +goose Up

CREATE TABLE realtime_events (
    -- bigint identity: the resume cursor is "id > last seen", so ids must be
    -- ordered and compact.
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    human_id     uuid        NOT NULL REFERENCES humans (id) ON DELETE CASCADE,
    channel      text        NOT NULL,
    kind         text        NOT NULL DEFAULT '',
    payload      jsonb       NOT NULL DEFAULT '{}',
    -- Free text (an agent name, a node id, "system"), not an FK: the
    -- publisher is informational and may not be an agent at all.
    published_by text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT realtime_events_channel_check CHECK (channel ~ '^[A-Za-z0-9][A-Za-z0-9:._/-]{0,127}$')
);

-- Resume: WHERE human_id = $1 AND channel = $2 AND id > $last ORDER BY id.
-- Leading human_id is also the FK index for human deletes.
CREATE INDEX idx_realtime_events_resume ON realtime_events (human_id, channel, id);

-- +goose Down

DROP TABLE realtime_events;
