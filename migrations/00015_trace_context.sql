-- The trace context a todo (and the event that created it) carries.
--
-- trace_parent is the W3C traceparent of the span that created the row
-- ("00-<32 hex trace id>-<16 hex span id>-<2 hex flags>", 55 characters):
-- the webhook's or PublishEvent's request for an event and its todo, the
-- Enqueue RPC for an enqueued todo. Claim returns it, and the worker SDK
-- starts its handler's span in that trace, so one trace shows webhook →
-- event → todo → worker (docs/tracing.md). NULL when the request carried no
-- trace or the node's tracing is off. A malformed header is dropped where it
-- arrives and never reaches the table; the CHECK is the backstop that keeps
-- anything else out (a bounded, fixed shape: version 00 is the only one the
-- writers produce). tracestate is not kept.
--
-- Both columns are in no index, so heartbeats stay HOT. The constraints are
-- NOT VALID: every existing row holds NULL, so there is nothing to check, and
-- no scan of either table happens under this migration's lock; new and
-- updated rows are checked all the same.

-- +goose Up

ALTER TABLE todos
    ADD COLUMN trace_parent text,
    ADD CONSTRAINT todos_trace_parent_check CHECK (
        trace_parent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
    ) NOT VALID;

ALTER TABLE events
    ADD COLUMN trace_parent text,
    ADD CONSTRAINT events_trace_parent_check CHECK (
        trace_parent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
    ) NOT VALID;

-- +goose Down

ALTER TABLE events
    DROP CONSTRAINT events_trace_parent_check,
    DROP COLUMN trace_parent;

ALTER TABLE todos
    DROP CONSTRAINT todos_trace_parent_check,
    DROP COLUMN trace_parent;
