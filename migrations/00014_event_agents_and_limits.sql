-- Whose event it is, and two deployment limits.
--
-- events.agent_id is the agent an event is for, fixed when it is stored: the
-- agent its todo is addressed to (the endpoint's or adapter's agent_id, or
-- PublishEvent's agent_id), or, for an event PublishEvent stores without a
-- todo, the agent that published it. NULL is the tenant's shared work (an
-- endpoint or adapter without an agent, an unaddressed publish into a
-- queue), which every agent of the tenant may work, as it may claim an
-- unaddressed todo. An agent's credential reads only events for it, events
-- it published, and NULL ones (services/ingest/internal/store/queries.sql).
--
-- No foreign key, on purpose: ON DELETE SET NULL would turn a deleted
-- agent's events into shared ones, readable by every other agent of the
-- tenant (and CASCADE would delete history). Agent ids are random uuids,
-- never reused; a deleted agent's credentials are gone with it, so nobody
-- reads as it again.
--
-- Backfill, best effort from what is still known: the agent of the event's
-- first todo (its ingest-time addressee, exact), else the event's endpoint's
-- or adapter's agent now, else its publisher. An event whose todo was pruned
-- and whose endpoint or adapter was deleted stays NULL (shared). Events
-- stored by a node of the previous version while this one rolls out carry
-- NULL too.
--
-- The indexes keep an agent's ListEvents as cheap as a tenant's: it merges
-- three ordered scans by id, one per index, each reading about a page: the
-- events for the agent (agent_id, id), the tenant's shared events
-- (human_id, id WHERE agent_id IS NULL: an "agent_id IS NULL" condition on
-- a wider index would not come out in id order) and the events it
-- published (published_by, id; also the index the existing ON DELETE SET
-- NULL of published_by lacked). Every event enters exactly one of the first
-- two, so the webhook edge pays one index entry per event for this.
--
-- CONCURRENTLY, so upgrading does not block the webhook edge while the
-- indexes build; that cannot run inside a transaction.

-- +goose NO TRANSACTION
-- +goose Up

ALTER TABLE events ADD COLUMN IF NOT EXISTS agent_id uuid;

WITH addressed AS (
    SELECT e.id,
           CASE
               WHEN t.event_id IS NOT NULL THEN t.agent_id
               WHEN e.endpoint_id IS NOT NULL THEN ep.agent_id
               WHEN e.adapter_id IS NOT NULL THEN ad.agent_id
               ELSE e.published_by
           END AS agent_id
    FROM events AS e
    LEFT JOIN LATERAL (
        SELECT t.event_id, t.agent_id FROM todos AS t WHERE t.event_id = e.id ORDER BY t.id LIMIT 1
    ) AS t ON true
    LEFT JOIN endpoints AS ep ON ep.id = e.endpoint_id
    LEFT JOIN adapters AS ad ON ad.id = e.adapter_id
    WHERE e.agent_id IS NULL
)
UPDATE events AS e
SET agent_id = a.agent_id
FROM addressed AS a
WHERE a.id = e.id
  AND a.agent_id IS NOT NULL;

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_events_agent ON events (agent_id, id DESC)
    WHERE agent_id IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_events_shared ON events (human_id, id DESC)
    WHERE agent_id IS NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_events_published_by ON events (published_by, id DESC)
    WHERE published_by IS NOT NULL;

-- streams.limits: open server streams (RealtimeService.Subscribe,
-- RegistryService.WatchNodes) one node accepts per credential and per
-- tenant. auth.credentials: the longest lifetime MintCredential grants a
-- tenant admin (0 = no maximum).
INSERT INTO settings (key, value, description) VALUES
    ('streams.limits',
     '{"max_per_credential": 100, "max_per_tenant": 1000}',
     'Open server streams (Subscribe, WatchNodes) each node accepts per credential and per tenant; one more is refused with RESOURCE_EXHAUSTED. Counted per node: a client that reaches N nodes may hold N times as many.'),
    ('auth.credentials',
     '{"max_ttl_seconds": 31536000}',
     'Longest lifetime of a credential a tenant admin mints (365 days); a mint without expires_at gets it, a later expires_at is refused. 0 means no maximum. Administrators are exempt. Whatever this says, a credential never outlives the credential that minted it.')
ON CONFLICT (key) DO NOTHING;

-- +goose Down

DELETE FROM settings WHERE key IN ('streams.limits', 'auth.credentials');
DROP INDEX CONCURRENTLY IF EXISTS idx_events_published_by;
DROP INDEX CONCURRENTLY IF EXISTS idx_events_shared;
DROP INDEX CONCURRENTLY IF EXISTS idx_events_agent;
ALTER TABLE events DROP COLUMN IF EXISTS agent_id;
