-- A Redis stream belongs to one human however its server is addressed
-- (issue 31).
--
-- 00013 keyed a stream by its addr as written, so "localhost:6379",
-- "[::1]:6379" or another name of a server another tenant reads made a new
-- key, and two tenants' adapters shared one stream (in one consumer group
-- the newcomer took half the owner's entries). Ownership now holds for the
-- server as dialed, in two layers (docs/ingest.md, "Who owns a stream"):
--
--   * adapter_source_addrs: every address an adapter's addr reaches, keyed
--     "<host>:<port>/<db>/<stream>" (redisstream.AddrKey: any loopback
--     address is "loopback", an IPv4-mapped or NAT64 address its IPv4
--     address). services/ingest/sources writes an adapter's keys when its
--     config is set (the name resolved then) and when a node dials it (what
--     DNS says then). adapter_source_addrs_owner_excl: one human per key, so
--     two tenants cannot both pass a check, as in 00013.
--   * adapters.server_key: the server as it names itself (INFO server's
--     run_id) with the db and stream, recorded when a node's adapter is
--     allowed to read it. It catches the aliases no address comparison can
--     (a host's LAN address and its loopback, a proxy). server_since is when
--     the adapter began reading that stream, kept across restarts of the
--     server (a new run_id dialed at the same address) so the older adapter
--     keeps its stream; source_since is when its config last named another
--     source, for adapters that never read. adapters_server_owner_excl: one
--     human per server key, a backstop under the claim's own lock.
--
-- Existing rows: adapters whose addr is an IP address get its key here (the
-- oldest adapter keeps a key two humans' rows share; the younger one is
-- refused when a node dials for it). A named addr gets its keys when a node
-- dials it or its config changes.

-- +goose Up

ALTER TABLE adapters
    ADD CONSTRAINT adapters_id_human_key UNIQUE (id, human_id),
    ADD COLUMN source_since timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN server_key text,
    ADD COLUMN server_addr_key text,
    ADD COLUMN server_since timestamptz,
    ADD CONSTRAINT adapters_server_check CHECK (
        (server_key IS NULL) = (server_addr_key IS NULL) AND (server_key IS NULL) = (server_since IS NULL)),
    ADD CONSTRAINT adapters_server_owner_excl EXCLUDE USING gist (server_key WITH =, human_id WITH <>)
        WHERE (server_key IS NOT NULL);

UPDATE adapters SET source_since = created_at;

-- The claim looks for other tenants' adapters of one stream name.
CREATE INDEX adapters_stream_idx ON adapters ((config ->> 'stream')) WHERE kind = 'redis_stream';

CREATE TABLE adapter_source_addrs (
    adapter_id uuid        NOT NULL,
    human_id   uuid        NOT NULL,
    addr_key   text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (adapter_id, addr_key),
    FOREIGN KEY (adapter_id, human_id) REFERENCES adapters (id, human_id) ON DELETE CASCADE,
    CONSTRAINT adapter_source_addrs_owner_excl EXCLUDE USING gist (addr_key WITH =, human_id WITH <>)
);

-- +goose StatementBegin
DO $$
DECLARE
    r    record;
    host inet;
    hkey text;
BEGIN
    FOR r IN
        SELECT id, human_id, config ->> 'addr' AS addr, coalesce(config ->> 'db', '0') AS db, config ->> 'stream' AS stream
        FROM adapters
        WHERE kind = 'redis_stream' AND source_key IS NOT NULL
        ORDER BY created_at, id
    LOOP
        BEGIN
            -- The API stored the addr normalized: an IPv4 address, or an
            -- IPv6 one in brackets, then the port. Anything else is a name
            -- (or a row written around the API): the cast fails, no key.
            host := trim(both '[]' from regexp_replace(r.addr, ':[0-9]+$', ''))::inet;
        EXCEPTION WHEN others THEN
            CONTINUE;
        END;
        hkey := CASE
            WHEN host <<= '127.0.0.0/8' OR host <<= '0.0.0.0/8' OR host = '::1' OR host = '::' THEN 'loopback'
            WHEN family(host) = 6 THEN '[' || host(host) || ']'
            ELSE host(host)
        END;
        INSERT INTO adapter_source_addrs (adapter_id, human_id, addr_key)
        VALUES (r.id, r.human_id, hkey || ':' || substring(r.addr from ':([0-9]+)$') || '/' || r.db || '/' || r.stream)
        ON CONFLICT DO NOTHING;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down

DROP TABLE adapter_source_addrs;
DROP INDEX adapters_stream_idx;
ALTER TABLE adapters
    DROP CONSTRAINT adapters_server_owner_excl,
    DROP CONSTRAINT adapters_server_check,
    DROP COLUMN server_since,
    DROP COLUMN server_addr_key,
    DROP COLUMN server_key,
    DROP COLUMN source_since,
    DROP CONSTRAINT adapters_id_human_key;
