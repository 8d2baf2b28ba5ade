-- Schedules: cron without a leader (issue 17, docs/design/queue-flow-control.md
-- §3f). One row per schedule a tenant defines; every node's schedule ticker
-- reads the due rows and fires each tick with one statement that marks
-- next_run_at conditionally (WHERE next_run_at = the value it read: the first
-- node to mark wins) and inserts the todo from the mark's RETURNING, so a tick
-- makes exactly one todo across the cluster. Owner:
-- services/queue/internal/store.
--
-- cron and time_zone are validated by the server's parser (robfig/cron v3)
-- and the IANA database, which SQL cannot check. template is the normalized
-- EnqueueRequest (proto JSON names) the todo is made from; its queue and
-- agent are also columns: the queue for ListSchedules, the agent so that a
-- deleted agent takes its schedules with it (a schedule's work must not
-- silently become the shared pool's). next_run_at is NULL while paused (a
-- resume computes it from now: a pause is no outage to catch up on) and
-- after the expression's last tick. last_todo_id is the id drawn for the
-- last fired tick's todo.

-- +goose Up

CREATE TABLE schedules (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    human_id     uuid        NOT NULL REFERENCES humans (id) ON DELETE CASCADE,
    name         text        NOT NULL,
    queue        queue_name  NOT NULL,
    agent_id     uuid        REFERENCES agents (id) ON DELETE CASCADE,
    cron         text        NOT NULL,
    time_zone    text        NOT NULL DEFAULT 'UTC',
    template     jsonb       NOT NULL,
    misfire      text        NOT NULL DEFAULT 'run_once',
    paused_at    timestamptz,
    next_run_at  timestamptz,
    last_run_at  timestamptz,
    last_todo_id bigint,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT schedules_name_check CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    CONSTRAINT schedules_cron_check CHECK (length(cron) BETWEEN 1 AND 255),
    CONSTRAINT schedules_time_zone_check CHECK (length(time_zone) BETWEEN 1 AND 64),
    CONSTRAINT schedules_template_check CHECK (jsonb_typeof(template) = 'object'),
    CONSTRAINT schedules_misfire_check CHECK (misfire IN ('run_once', 'skip')),
    CONSTRAINT schedules_human_name_key UNIQUE (human_id, name)
);

-- The tickers' one read: the due schedules, oldest tick first.
CREATE INDEX idx_schedules_due ON schedules (next_run_at) WHERE next_run_at IS NOT NULL;
-- The agent's foreign key: deleting an agent finds its schedules.
CREATE INDEX idx_schedules_agent ON schedules (agent_id) WHERE agent_id IS NOT NULL;

-- +goose Down

DROP TABLE schedules;
