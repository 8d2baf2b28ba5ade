-- name: Notify :exec
-- Sends one notification per (channels[i], payloads[i]), in array order, as a
-- statement of its own: never inside a write transaction, since NOTIFY takes a
-- cluster-wide lock at commit. ORDER BY states the order; the planner meets it
-- without a sort (the function scan yields rows in ordinality order) and runs
-- pg_notify as each row comes. Identical (channel, payload) pairs within one
-- statement are delivered once: PostgreSQL folds them per transaction.
SELECT pg_notify(n.channel, n.payload)
FROM ROWS FROM (unnest(sqlc.arg(channels)::text[]), unnest(sqlc.arg(payloads)::text[])) WITH ORDINALITY AS n (channel, payload, ord)
ORDER BY n.ord;
