#!/usr/bin/env bash
# bench-ingest.sh runs `switchboard bench ingest` end to end on this machine
# and, right after it, pgbench's single-row insert at the same concurrency
# against the same Postgres (the peers' anchor: one ~200-byte jsonb row per
# autocommit transaction), and prints the ratio.
#
#   make build && deploy/local/bench-ingest.sh [REQUESTS] [CONCURRENCY]   (default 20000 16)
#
# Ports: SWITCHBOARD_BENCH_GRPC (19390) and SWITCHBOARD_BENCH_HTTP (18390).
# The last line is machine-readable:
#   RATIO accepted_per_s=<n> pgbench_tps=<n> ratio=<n> p50_ms=<n> p99_ms=<n>
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$repo/bin/switchboard
requests=${1:-20000}
conc=${2:-16}
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

# The anchor, same database server, same concurrency, 10 s.
psql "$url" -XAtqc "CREATE TABLE ins_rows (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), payload jsonb NOT NULL)"
cat >"$log.sql" <<'SQL'
INSERT INTO ins_rows (payload) VALUES ('{"kind":"email.send","to":"user-000000@example.com","template":"welcome_v2","locale":"en-US","attempt_budget":25,"trace_id":"0123456789abcdef0123456789abcdef","pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}'::jsonb);
SQL
tps=$(pgbench -n -M prepared -c "$conc" -j "$(( conc < 2 ? conc : 2 ))" -T 10 -f "$log.sql" "$url" 2>/dev/null |
  sed -n 's/^tps = \([0-9.]*\).*/\1/p')
echo "pgbench insert1, $conc clients: $tps TPS" >&2

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$line"; }
acc=$(field accepted_per_s)
printf 'RATIO accepted_per_s=%s pgbench_tps=%.0f ratio=%.2f p50_ms=%s p99_ms=%s\n' \
  "$acc" "$tps" "$(awk -v a="$acc" -v b="$tps" 'BEGIN {print a / b}')" "$(field p50_ms)" "$(field p99_ms)"
