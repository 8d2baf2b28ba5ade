-- The delivery log of a webhook endpoint (issue 18, the console): its most
-- recent deliveries with their outcomes, rejected ones included, as
-- Hookdeck and Svix show them. events holds only what was accepted; a
-- delivery refused for a bad signature, a stale timestamp, a body over the
-- cap or a disabled endpoint left no trace its tenant could see.
--
-- endpoint_deliveries is a ring of at most 100 rows per endpoint: each
-- delivery takes the endpoint's next sequence number (seq, counted in
-- endpoint_delivery_seqs) and upserts the row of slot = seq % 100, so the
-- rows an endpoint can hold stay bounded whatever its traffic, and an
-- overwrite changes no indexed column (the key is (endpoint_id, slot)): a
-- HOT update that page pruning reclaims, with no index entry and little
-- for vacuum to do. Ordered by seq, the ring lists newest first.
--
-- UNLOGGED, like node_registry and realtime_presence: it is a diagnostic
-- view of recent traffic, written on every delivery; losing it to a
-- Postgres crash (it is emptied) or a failover (not replicated) loses no
-- event. The counters go with it and restart at 1, which the ring does not
-- mind. Each node writes it in batches, off the request's path
-- (services/ingest/deliverylog.go), and only through its owner's queries
-- (services/ingest/internal/store). Rows go with their endpoint.
--
-- detail is a short reason the server wrote (never a secret, a signature,
-- a body or SQL). dropped_before counts the rejections this node did not
-- log individually just before the row (rejections are rate limited per
-- endpoint and node, so that unauthenticated senders cannot make the log a
-- write amplifier).

-- +goose Up

CREATE UNLOGGED TABLE endpoint_delivery_seqs (
    endpoint_id uuid   PRIMARY KEY REFERENCES endpoints (id) ON DELETE CASCADE,
    seq         bigint NOT NULL
);

CREATE UNLOGGED TABLE endpoint_deliveries (
    endpoint_id    uuid        NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
    slot           smallint    NOT NULL,
    seq            bigint      NOT NULL,
    human_id       uuid        NOT NULL,
    received_at    timestamptz NOT NULL,
    outcome        text        NOT NULL,
    http_status    integer     NOT NULL,
    event_id       bigint,
    delivery_id    text        NOT NULL DEFAULT '',
    topic          text        NOT NULL DEFAULT '',
    detail         text        NOT NULL DEFAULT '',
    size_bytes     bigint      NOT NULL DEFAULT 0,
    dropped_before integer     NOT NULL DEFAULT 0,

    PRIMARY KEY (endpoint_id, slot),
    CONSTRAINT endpoint_deliveries_slot_check CHECK (slot >= 0 AND slot < 100)
) WITH (fillfactor = 70);

-- +goose Down

DROP TABLE endpoint_deliveries;
DROP TABLE endpoint_delivery_seqs;
