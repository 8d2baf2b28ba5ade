#!/usr/bin/env bash
# bench-ingest.sh runs `switchboard bench ingest` end to end on this machine
# and, in the same run, pgbench doing the node's own database work for the
# same deliveries, twice, and prints both ratios:
#
#  - one:     one delivery per transaction at the bench's concurrency
#             (CONCURRENCY clients, 2 threads): what the node would get with
#             no group commit.
#  - ceiling: CEILING_BATCH deliveries per statement on 2 connections: the
#             database's ceiling for this work here (the goal is a bench
#             result of at least 0.8 of it).
#
# "The node's work" is its write pipeline for a delivery, statement for
# statement: the events insert (ingest's EventInsertBatch, queries.sql) and
# its todos insert (the queue's TodoInsertForEvents) sent together and
# committed as one implicit transaction, in a session with
# plan_cache_mode=force_generic_plan (the node's "hot" pool), into the
# node's own tables (same columns, indexes, constraints and foreign keys),
# with the values of an event the node just stored (its tenant, endpoint,
# headers, body). The node sends no NOTIFY per commit (its wake-ups are
# coalesced to one per queue per 5 ms on another connection), so neither
# does pgbench. Keep the two statements below in step with the generated
# ones (services/ingest/internal/store/dbsqlc/batch.go,
# services/queue/internal/store/dbsqlc/batch.go).
#
#   make build && deploy/local/bench-ingest.sh [REQUESTS] [CONCURRENCY]   (default 40000 32)
#
# The default concurrency, 32, is the ceiling's number of deliveries in
# flight (2 connections × 16): with fewer in flight the database itself
# cannot reach its ceiling (16 in flight: pgbench's best, 8 per statement on
# 2 connections, ran at about half of it here), so the ratio would measure
# the senders, not the node. With another CONCURRENCY the script also runs
# pgbench with CONCURRENCY/2 per statement on 2 connections and prints the
# bench's ratio to that (stderr).
#
# Env: SWITCHBOARD_BIN (the binary, bin/switchboard; to compare two builds), SWITCHBOARD_BENCH_GRPC (port, 19390), SWITCHBOARD_BENCH_HTTP (18390),
# PGBENCH_SECONDS (10, each pgbench run), PGBENCH_TRANSACTIONS (unset; when
# set, each pgbench client runs that many transactions instead of for
# PGBENCH_SECONDS: a test that only checks the script works then gets a
# figure however slow the machine is), CEILING_BATCH (16),
# SWITCHBOARD_PPROF_ADDR (passed to the node: a CPU profile can be taken
# during the run). The last line is machine-readable:
#   RATIO accepted_per_s=<n> pgbench_one_tps=<n> ratio_one=<n> pgbench_ceiling_tps=<n> ratio_ceiling=<n> p50_ms=<n> p99_ms=<n>
# where pgbench_*_tps are deliveries (event + todo) per second.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${SWITCHBOARD_BIN:-$repo/bin/switchboard}
requests=${1:-40000}
conc=${2:-32}
secs=${PGBENCH_SECONDS:-10}
length=(-T "$secs")
[[ -n ${PGBENCH_TRANSACTIONS:-} ]] && length=(-t "$PGBENCH_TRANSACTIONS")
batch=${CEILING_BATCH:-16}
grpc=127.0.0.1:${SWITCHBOARD_BENCH_GRPC:-19390}
http=127.0.0.1:${SWITCHBOARD_BENCH_HTTP:-18390}

eval "$("$repo/deploy/local/postgres.sh")"
admin=$TEST_DATABASE_URL
db=benchi_$$
psql "$admin" -XAtqc "CREATE DATABASE $db" >/dev/null
url=${admin%/*}/$db?${admin#*\?}
log=$(mktemp)
node=
cleanup() {
  [[ -z $node ]] || { kill "$node" 2>/dev/null; wait "$node" 2>/dev/null || true; }
  psql "$admin" -XAtqc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
  rm -f "$log" "$log.sql"
}
trap cleanup EXIT

token=$("$bin" token generate)
DATABASE_URL=$url SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN=$token \
  SWITCHBOARD_GRPC_ADDR=$grpc SWITCHBOARD_HTTP_ADDR=$http SWITCHBOARD_LOG_LEVEL=warn \
  "$bin" serve all 2>"$log" &
node=$!
for _ in $(seq 300); do curl -fs "http://$http/health" >/dev/null && break; sleep 0.1; done

# The tenant limit (ingest.limits, 1,000/s by default) would answer 429: lift it for the scratch tenant.
psql "$url" -XAtqc "UPDATE settings SET value = '{\"tenant_requests_per_second\": 1000000}' WHERE key = 'ingest.limits'" >/dev/null
line=$(SWITCHBOARD_TOKEN=$token "$bin" bench ingest --url "http://$http" --requests "$requests" --concurrency "$conc" | grep '^RESULT')
echo "$line" >&2

# pgbench's script: the node's two statements, with its parameters as
# pgbench variables (-D, set by vars below) holding the values of the node's
# last event. Each transaction draws a fresh number r, so its delivery ids
# (r-1 … r-n) are new, as the bench's are.
read -r human source endpoint queue <<<"$(psql "$url" -XAtF ' ' -c \
  "SELECT e.human_id, e.source, e.endpoint_id, t.queue FROM events e JOIN todos t ON t.event_id = e.id ORDER BY e.id DESC LIMIT 1")"
# sample: an array element (quoted, escaped) of the last event's column.
sample() { psql "$url" -XAtc "SELECT '\"' || replace(replace($1, '\\', '\\\\'), '\"', '\\\"') || '\"' FROM events ORDER BY id DESC LIMIT 1"; }
headers=$(sample "headers::text")
payload=$(sample "'\\x' || encode(payload, 'hex')")
ctype=$(sample "content_type")
scheme=$(sample "verified_scheme")
ip=$(sample "coalesce(host(source_ip), '')")
arr() { local a=$1 i; for ((i = 1; i < $2; i++)); do a+=",$1"; done; printf '{%s}' "$a"; }
vars() { # vars N: the -D flags for N deliveries per transaction
  local n=$1
  printf -- '-D\0%s\0' "human=$human" "source=$source" "endpoint=$endpoint" "queue=$queue" "n=$n" \
    "none=$(arr '""' "$n")" "headers=$(arr "$headers" "$n")" "ctypes=$(arr "$ctype" "$n")" \
    "payloads=$(arr "$payload" "$n")" "schemes=$(arr "$scheme" "$n")" "ips=$(arr "$ip" "$n")"
}
cat >"$log.sql" <<'SQL'
\set r random(1, 9000000000000000000)
\startpipeline
WITH input AS MATERIALIZED (
    SELECT v.delivery_id, v.topic, v.headers, v.content_type, v.payload, v.body_sha256, v.verified_scheme, v.source_ip, v.trace_parent, v.ord, nextval(pg_get_serial_sequence('events', 'id')) AS id
    FROM (
        SELECT unnest(ARRAY(SELECT :r::text || '-' || g FROM generate_series(1, :n::integer) AS g)) AS delivery_id,
               unnest(:none::text[])                                 AS topic,
               unnest(:headers::text[])                                AS headers,
               unnest(:ctypes::text[])                          AS content_type,
               unnest(:payloads::bytea[])                              AS payload,
               unnest(:none::bytea[])                          AS body_sha256,
               unnest(:schemes::text[])                       AS verified_scheme,
               unnest(:ips::text[])                             AS source_ip,
               unnest(:none::text[])                          AS trace_parent,
               generate_series(1, cardinality(:none::text[]))::bigint AS ord
    ) AS v
    ORDER BY v.ord
)
INSERT INTO events (id, human_id, source, endpoint_id, adapter_id, published_by, agent_id, topic, delivery_id,
                    headers, content_type, payload, size_bytes, body_sha256, verified_scheme, source_ip, trace_parent)
OVERRIDING SYSTEM VALUE
SELECT i.id, :human::uuid, :source::text, :endpoint::uuid, NULL::uuid, NULL::uuid,
       NULL::uuid, i.topic, nullif(i.delivery_id, ''), i.headers::jsonb, i.content_type, i.payload,
       octet_length(i.payload), nullif(i.body_sha256, ''::bytea), i.verified_scheme, nullif(i.source_ip, '')::inet, nullif(i.trace_parent, '')
FROM input AS i
ORDER BY i.delivery_id COLLATE "C", i.ord
ON CONFLICT (human_id, source, delivery_id) WHERE delivery_id IS NOT NULL DO NOTHING
RETURNING id, received_at, coalesce(delivery_id, '')::text AS delivery_id;
WITH mine AS MATERIALIZED (
    SELECT e.id, e.human_id, e.source, e.topic, e.content_type, e.delivery_id, e.trace_parent
    FROM events AS e
    WHERE e.received_at = now()
      AND e.xmin = pg_current_xact_id()::xid
)
INSERT INTO todos (human_id, queue, agent_id, event_id, kind, payload, max_attempts, trace_parent)
SELECT m.human_id,
       :queue::text,
       NULL::uuid,
       m.id,
       CASE WHEN true AND m.topic <> '' THEN m.topic ELSE 'webhook'::text END,
       coalesce(NULL::jsonb,
                jsonb_strip_nulls(jsonb_build_object('event_id', m.id, 'source', m.source, 'topic', nullif(m.topic, ''),
                                                     'content_type', nullif(m.content_type, ''),
                                                     'delivery_id', m.delivery_id))),
       coalesce((SELECT greatest(1, (s.value ->> 'max_attempts')::integer) FROM settings AS s WHERE s.key = 'queue.defaults'),
                25::integer),
       m.trace_parent
FROM mine AS m
WHERE m.human_id = :human::uuid
  AND m.source = :source::text
ORDER BY m.id
RETURNING id, event_id, agent_id, state;
\endpipeline
SQL
# deliveries N CLIENTS: deliveries/s of pgbench running the script with N
# deliveries per transaction on CLIENTS connections (2 threads at most).
deliveries() {
  local flags tps
  mapfile -d '' flags < <(vars "$1")
  tps=$(PGOPTIONS='-c plan_cache_mode=force_generic_plan' pgbench -n -M prepared -c "$2" -j "$(( $2 < 2 ? $2 : 2 ))" \
    "${length[@]}" "${flags[@]}" -f "$log.sql" "$url" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  # pgbench that could not connect all its clients (the server's
  # max_connections) prints no tps: that is a failed run, not 0/s.
  [[ -n $tps ]] || { echo "pgbench with $2 clients, $1 per transaction, measured nothing (see its errors above)" >&2; return 1; }
  awk -v t="$tps" -v n="$1" 'BEGIN {print t * n}'
}
before=$(psql "$url" -XAtc "SELECT count(*) FROM todos")
one=$(deliveries 1 "$conc")
echo "pgbench 1 delivery per transaction, $conc clients: $one deliveries/s" >&2
ceiling=$(deliveries "$batch" 2)
echo "pgbench $batch deliveries per transaction, 2 clients (the ceiling): $ceiling deliveries/s" >&2
if (( conc != 2 * batch && conc >= 2 )); then
  # The ceiling keeps 2 × CEILING_BATCH deliveries in flight; with another
  # number in flight the database itself reaches a different share of it.
  same=$(deliveries $(( conc / 2 )) 2)
  echo "pgbench $(( conc / 2 )) deliveries per transaction, 2 clients ($conc in flight, as the bench): $same deliveries/s" \
    "($(awk -v a="$same" -v b="$ceiling" 'BEGIN {printf "%.2f", a / b}') of the ceiling; the bench: $(awk -v a="$(sed -n 's/.*accepted_per_s=\([0-9.]*\).*/\1/p' <<<"$line")" -v b="$same" 'BEGIN {printf "%.2f", a / b}') of this)" >&2
fi
# Both scripts stored a todo for each event, or they measured less than the node's work.
read -r events todos <<<"$(psql "$url" -XAtF ' ' -c "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM todos)")"
[[ $events == "$todos" && $todos -gt $before ]] || { echo "pgbench stored $events events but $todos todos" >&2; exit 1; }

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$line"; }
acc=$(field accepted_per_s)
printf 'RATIO accepted_per_s=%s pgbench_one_tps=%.0f ratio_one=%.2f pgbench_ceiling_tps=%.0f ratio_ceiling=%.2f p50_ms=%s p99_ms=%s\n' \
  "$acc" "$one" "$(awk -v a="$acc" -v b="$one" 'BEGIN {print a / b}')" \
  "$ceiling" "$(awk -v a="$acc" -v b="$ceiling" 'BEGIN {print a / b}')" "$(field p50_ms)" "$(field p99_ms)"
