-- Where an endpoint's topics come from, and its body-hash dedup as its own
-- choice (issue 16).
--
-- topic_header / topic_pointer override the scheme's event type (the
-- event's topic and its todo's kind): a request header, or an RFC 6901 JSON
-- pointer into the body ("/event/type"). At most one is set; NULL both
-- means the scheme's own (docs/ingest.md has the table).
--
-- body_dedup_window_seconds: a delivery whose body's SHA-256 equals one
-- stored from the same endpoint within this many seconds is a duplicate; 0
-- is off (two distinct deliveries with identical bytes are both stored).
-- Before this, every endpoint whose delivery id was missing or unsigned had
-- it, with the deployment-wide ingest.dedup window: existing endpoints keep
-- exactly that (all but standard_webhooks, whose webhook-id is signed), the
-- window frozen at today's setting (capped at the new 7-day maximum). New
-- endpoints get their scheme's default at creation (services/ingest/sources).

-- +goose Up

ALTER TABLE endpoints
    ADD COLUMN topic_header text,
    ADD COLUMN topic_pointer text,
    ADD COLUMN body_dedup_window_seconds integer NOT NULL DEFAULT 0,
    ADD CONSTRAINT endpoints_topic_source_check CHECK (topic_header IS NULL OR topic_pointer IS NULL),
    ADD CONSTRAINT endpoints_topic_header_check CHECK (char_length(topic_header) BETWEEN 1 AND 128),
    ADD CONSTRAINT endpoints_topic_pointer_check CHECK (
        char_length(topic_pointer) BETWEEN 1 AND 255 AND left(topic_pointer, 1) = '/'
    ),
    ADD CONSTRAINT endpoints_body_dedup_window_check CHECK (body_dedup_window_seconds BETWEEN 0 AND 604800);

UPDATE endpoints
SET body_dedup_window_seconds = least(604800, greatest(1, coalesce(
        (SELECT (s.value ->> 'window_seconds')::integer FROM settings AS s WHERE s.key = 'ingest.dedup'), 259200)))
WHERE verification <> 'standard_webhooks';

-- +goose Down

ALTER TABLE endpoints
    DROP COLUMN topic_header,
    DROP COLUMN topic_pointer,
    DROP COLUMN body_dedup_window_seconds;
