-- One owner per pulled stream.
--
-- A Redis Streams adapter reads one (server, database, stream). If two
-- tenants could both have adapters on it, either could read the other's
-- source into its own history. source_key names what an adapter reads
-- (redisstream.StoredConfig.SourceKey: the normalized host:port, the
-- database number and the stream; services/ingest/sources writes it on
-- every insert and update from the config it stores), and:
--
--   * adapters_source_owner_excl: all adapters of one key belong to one
--     human. An exclusion constraint, so two tenants creating adapters on
--     one stream at once cannot both pass a check: the second waits for the
--     first to commit, then fails.
--   * adapters_source_group_key: one human's adapters of one key use
--     different consumer groups. Several groups each get every entry (one
--     stream feeding two queues); two adapters in one group would split the
--     entries between them under one consumer name per node.
--
-- btree_gist provides the equality operator classes an exclusion
-- constraint needs for text and uuid (a trusted extension: the database
-- owner may create it).
--
-- Existing rows get the key SQL can compute (the addr in lower case; the
-- Go normalization also rewrites port digits and IPv6 forms, on the row's
-- next update). Where rows already break the rule, the oldest adapter of a
-- key keeps it and the others are disabled, without a key, and told why in
-- last_error; an update that gives one a key fails while the conflict
-- lasts.

-- +goose Up

CREATE EXTENSION IF NOT EXISTS btree_gist;

ALTER TABLE adapters ADD COLUMN source_key text;

UPDATE adapters
SET source_key = lower(config ->> 'addr') || '/' || coalesce(config ->> 'db', '0') || '/' || (config ->> 'stream')
WHERE kind = 'redis_stream';

WITH ranked AS (
    SELECT id,
           human_id <> first_value(human_id) OVER (PARTITION BY source_key ORDER BY created_at, id) AS other_owner,
           row_number() OVER (PARTITION BY source_key, human_id, config ->> 'group' ORDER BY created_at, id) > 1 AS same_group
    FROM adapters
    WHERE source_key IS NOT NULL
)
UPDATE adapters AS a
SET source_key = NULL,
    enabled    = false,
    last_error = 'disabled: an older adapter already reads this Redis stream (with this group); change the config to use it again'
FROM ranked AS r
WHERE a.id = r.id
  AND (r.other_owner OR r.same_group);

ALTER TABLE adapters
    ADD CONSTRAINT adapters_source_key_check CHECK (source_key IS NULL OR kind = 'redis_stream'),
    ADD CONSTRAINT adapters_source_owner_excl EXCLUDE USING gist (source_key WITH =, human_id WITH <>)
        WHERE (source_key IS NOT NULL);

CREATE UNIQUE INDEX adapters_source_group_key ON adapters (source_key, (config ->> 'group'))
    WHERE source_key IS NOT NULL;

-- +goose Down

DROP INDEX adapters_source_group_key;

ALTER TABLE adapters
    DROP CONSTRAINT adapters_source_owner_excl,
    DROP CONSTRAINT adapters_source_key_check,
    DROP COLUMN source_key;

-- btree_gist stays: it may predate this migration, and unused it costs nothing.
