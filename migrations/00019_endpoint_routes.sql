-- Routes: an endpoint's events fan out to several queues (or agents), each
-- route with an optional filter; the event and the todo of every route that
-- matches it commit in one transaction (services/ingest, docs/ingest.md
-- "Routes"). An endpoint without routes sends every event to its own queue
-- and agent_id, as before.
--
-- Written only by services/ingest/sources (the admin API's endpoint
-- writes), always as the whole list of one endpoint under that endpoint's
-- row lock: the list is replaced, never edited in place, so position is
-- just the order the caller gave (and the order todos are inserted in).
--
-- agent_id must be an agent of the endpoint's human: the insert statement
-- joins the agent on the endpoint's human_id (a foreign key cannot say
-- "same tenant"). ON DELETE SET NULL, like endpoints.agent_id: a deleted
-- agent's route keeps feeding its queue, unaddressed.
--
-- topic_glob matches the event's topic (see docs/ingest.md); filter is a
-- CEL expression over topic, headers and body, checked to compile to a bool
-- before it is stored. Both bounded here as well as in the API.

-- +goose Up

CREATE TABLE endpoint_routes (
    endpoint_id uuid       NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
    position    smallint   NOT NULL,
    queue       queue_name NOT NULL,
    agent_id    uuid       REFERENCES agents (id) ON DELETE SET NULL,
    topic_glob  text,
    filter      text,

    PRIMARY KEY (endpoint_id, position),
    -- At most 20 routes per endpoint (positions 0–19; the API refuses more).
    CONSTRAINT endpoint_routes_position_check CHECK (position >= 0 AND position < 20),
    CONSTRAINT endpoint_routes_topic_glob_check CHECK (topic_glob IS NULL OR length(topic_glob) BETWEEN 1 AND 255),
    CONSTRAINT endpoint_routes_filter_check CHECK (filter IS NULL OR octet_length(filter) BETWEEN 1 AND 2048)
);

-- The agent cascade (ON DELETE SET NULL) finds an agent's routes.
CREATE INDEX idx_endpoint_routes_agent_id ON endpoint_routes (agent_id) WHERE agent_id IS NOT NULL;

-- +goose Down

DROP TABLE endpoint_routes;
