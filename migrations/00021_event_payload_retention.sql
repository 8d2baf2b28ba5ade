-- Payload retention: keep an event's row (the history: source, topic,
-- delivery id, headers, times, size, its todos) and drop only its body after
-- retention.event_payloads' max_age_seconds (0, the seeded value: payloads
-- live as long as their event, so nothing changes for an existing install).
-- The ingest node's retention loop (services/ingest/internal/store/
-- payload_retention.go) sets payload to '' and payload_pruned_at (00020) to
-- now(); replay refuses such an event.
--
-- size_bytes stays the size of the payload as received: it stops being a
-- generated column (DROP EXPRESSION keeps the stored values and rewrites
-- nothing) and the one writer, EventInsertBatch, sets it. The CHECK keeps it
-- honest: the payload's length while the payload is there, a pruned payload
-- is empty. NOT VALID: every existing row was generated to fit it, and
-- validating would scan the table; new and updated rows are checked.
--
-- idx_events_payload_unpruned holds only the events whose payload is still
-- there, so each pass walks from the oldest of those and never rescans the
-- pruned ones. CONCURRENTLY (outside a transaction), so upgrading does not
-- block the webhook edge while it builds.

-- +goose NO TRANSACTION
-- +goose Up

ALTER TABLE events ALTER COLUMN size_bytes DROP EXPRESSION IF EXISTS;

ALTER TABLE events
    ADD CONSTRAINT events_size_bytes_check CHECK (
        size_bytes IS NOT NULL
        AND CASE WHEN payload_pruned_at IS NULL THEN size_bytes = octet_length(payload)
                 ELSE payload = ''::bytea AND size_bytes >= 0 END
    ) NOT VALID;

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_events_payload_unpruned ON events (received_at)
    WHERE payload_pruned_at IS NULL;

INSERT INTO settings (key, value, description) VALUES
    ('retention.event_payloads',
     '{"max_age_seconds": 0}',
     'Inbound event payloads: empty the body of events received more than max_age_seconds ago, keeping the event (its metadata, size_bytes and todos) for the history; such an event can no longer be replayed. Never while the event''s todo is pending or running. 0 keeps payloads as long as their event (retention.events).')
ON CONFLICT (key) DO NOTHING;

-- +goose Down

DELETE FROM settings WHERE key = 'retention.event_payloads';
DROP INDEX CONCURRENTLY IF EXISTS idx_events_payload_unpruned;
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_size_bytes_check;
-- A generated column cannot be restored in place: re-adding it rewrites the
-- table, and a pruned event's size reads 0 again.
ALTER TABLE events DROP COLUMN size_bytes;
ALTER TABLE events ADD COLUMN size_bytes integer GENERATED ALWAYS AS (octet_length(payload)) STORED;
