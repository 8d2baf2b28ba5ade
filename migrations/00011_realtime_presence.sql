-- Realtime presence: who is subscribed to which channel, on which node, so
-- that Presence answers for the whole cluster and a dead node's members can
-- be removed (and their leave events sent) once the registry sweeps it.
--
-- UNLOGGED like node_registry: it describes live connections, which do not
-- survive a restart anyway, and it is written on every subscribe and
-- unsubscribe. A Postgres crash empties it; nodes re-insert their live
-- subscriptions when they find their rows gone (services/realtime/presence.go).

-- +goose Up

CREATE UNLOGGED TABLE realtime_presence (
    -- One row per (subscription, channel): a Subscribe stream of N channels
    -- writes N rows.
    subscription_id uuid        NOT NULL,
    channel         text        NOT NULL,
    node_id         text        NOT NULL,
    human_id        uuid        NOT NULL,
    -- "agent:<uuid>" or "human:<uuid>", from the subscriber's credential.
    member          text        NOT NULL,
    joined_at       timestamptz NOT NULL DEFAULT now(),

    PRIMARY KEY (subscription_id, channel)
);

-- Presence(channel) and the "does anyone listen" check.
CREATE INDEX idx_realtime_presence_channel ON realtime_presence (human_id, channel);
-- The janitor's anti-join against node_registry, and a node's own rows.
CREATE INDEX idx_realtime_presence_node ON realtime_presence (node_id);

-- +goose Down

DROP TABLE realtime_presence;
