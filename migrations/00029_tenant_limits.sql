-- Limits per tenant (issue 31): what one tenant may hold and how fast it may
-- publish, so that a hostile tenant can only ever crowd out itself.
--
-- retention.* gain max_rows_per_tenant: each tenant keeps its newest rows up
-- to it, and max_rows becomes the whole table's safety net (docs/
-- data-model.md says which rows it takes). A value the operator never
-- changed takes the new defaults: a tenant keeps what the whole table kept
-- before, and the table ten tenants' worth. A changed value keeps its
-- max_rows, and each tenant may hold all of it.
--
-- tenant.limits caps what each tenant creates; realtime.limits its publishes
-- per second on each node; queue.schedules the shortest interval a schedule
-- may tick at.

-- +goose Up

UPDATE settings
SET value = CASE
        WHEN key = 'retention.realtime_events' AND value = '{"max_age_seconds": 86400, "max_rows": 100000}'::jsonb
            THEN '{"max_age_seconds": 86400, "max_rows": 1000000, "max_rows_per_tenant": 100000}'::jsonb
        WHEN key = 'retention.events' AND value = '{"max_age_seconds": 2592000, "max_rows": 1000000}'::jsonb
            THEN '{"max_age_seconds": 2592000, "max_rows": 10000000, "max_rows_per_tenant": 1000000}'::jsonb
        WHEN key = 'retention.todos' AND value = '{"max_age_seconds": 604800, "max_rows": 1000000}'::jsonb
            THEN '{"max_age_seconds": 604800, "max_rows": 10000000, "max_rows_per_tenant": 1000000}'::jsonb
        ELSE value || jsonb_build_object('max_rows_per_tenant', value -> 'max_rows')
    END,
    description = description || ' Each tenant keeps at most its newest max_rows_per_tenant; max_rows is the whole table''s safety net (the tenants holding the most rows lose theirs first).',
    updated_at = now()
WHERE key IN ('retention.events', 'retention.todos', 'retention.realtime_events')
  AND NOT value ? 'max_rows_per_tenant';

INSERT INTO settings (key, value, description) VALUES
    ('tenant.limits',
     '{"max_agents": 1000, "max_credentials": 10000, "max_endpoints": 1000, "max_adapters": 10, "max_schedules": 1000}',
     'What one tenant may hold: agents, live credentials (neither revoked nor expired), webhook endpoints, pull adapters (each a Redis connection on every ingest node) and schedules. One more is refused with RESOURCE_EXHAUSTED; lowering a limit removes nothing.'),
    ('realtime.limits',
     '{"tenant_durable_per_second": 1000, "tenant_ephemeral_per_second": 10000}',
     'Realtime publishes per second one node accepts for one tenant, durable and ephemeral (RESOURCE_EXHAUSTED beyond, with the time to retry). Counted per node: a cluster of N nodes accepts up to N times as many.'),
    ('queue.schedules',
     '{"min_interval_seconds": 10}',
     'The shortest interval a schedule may tick at: CreateSchedule and UpdateSchedule refuse a spec that fires more often (an @every below it, or a seconds field that does).')
ON CONFLICT (key) DO NOTHING;

-- +goose Down

DELETE FROM settings WHERE key IN ('tenant.limits', 'realtime.limits', 'queue.schedules');
UPDATE settings
SET value = CASE
        WHEN key = 'retention.realtime_events' AND value = '{"max_age_seconds": 86400, "max_rows": 1000000, "max_rows_per_tenant": 100000}'::jsonb
            THEN '{"max_age_seconds": 86400, "max_rows": 100000}'::jsonb
        WHEN key = 'retention.events' AND value = '{"max_age_seconds": 2592000, "max_rows": 10000000, "max_rows_per_tenant": 1000000}'::jsonb
            THEN '{"max_age_seconds": 2592000, "max_rows": 1000000}'::jsonb
        WHEN key = 'retention.todos' AND value = '{"max_age_seconds": 604800, "max_rows": 10000000, "max_rows_per_tenant": 1000000}'::jsonb
            THEN '{"max_age_seconds": 604800, "max_rows": 1000000}'::jsonb
        ELSE value - 'max_rows_per_tenant'
    END,
    description = replace(description, ' Each tenant keeps at most its newest max_rows_per_tenant; max_rows is the whole table''s safety net (the tenants holding the most rows lose theirs first).', '')
WHERE key IN ('retention.events', 'retention.todos', 'retention.realtime_events');
