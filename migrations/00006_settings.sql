-- Deployment-wide settings (retention and queue defaults) as jsonb values, so
-- a new setting needs a seed row, not a schema change.

-- +goose Up

CREATE TABLE settings (
    key         text        PRIMARY KEY,
    value       jsonb       NOT NULL,
    description text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),

    -- Dotted lower-case keys ("retention.events"): stable, greppable names.
    CONSTRAINT settings_key_check CHECK (key ~ '^[a-z0-9_.]+$')
);

-- Retention is age and row cap together (either alone leaves the other
-- dimension unbounded); the pruner applies both in one transaction.
-- ON CONFLICT DO NOTHING: never overwrite a value an operator has changed.
INSERT INTO settings (key, value, description) VALUES
    ('retention.events',
     '{"max_age_seconds": 2592000, "max_rows": 1000000}',
     'Inbound event history: delete events older than max_age_seconds (30 days), and the oldest beyond max_rows.'),
    ('retention.todos',
     '{"max_age_seconds": 604800, "max_rows": 1000000}',
     'Finished todos (completed, dead, cancelled): delete those finished more than max_age_seconds ago (7 days), and the oldest beyond max_rows. Live todos are never pruned.'),
    ('retention.realtime_events',
     '{"max_age_seconds": 86400, "max_rows": 100000}',
     'Durable realtime events kept for resume: delete those older than max_age_seconds (1 day), and the oldest beyond max_rows.'),
    ('queue.defaults',
     '{"max_attempts": 25, "lease_seconds": 30}',
     'Defaults for todos that do not set their own: attempts before dead-lettering, and the lease length granted by a claim.')
ON CONFLICT (key) DO NOTHING;

-- +goose Down

DROP TABLE settings;
