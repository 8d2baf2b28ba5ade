#!/usr/bin/env bash
# eviction-time.sh measures how long a SIGKILLed node stays listed in the
# cluster: two `switchboard serve all` nodes share a scratch database, one is
# killed, and the other's GET /api/admin/cluster is polled every 50 ms until
# the killed node is gone.
#
# Usage: deploy/local/eviction-time.sh [INTERVAL THRESHOLD]   (default 10s 30s)
# Needs bin/switchboard (make build), psql, curl and awk.
set -euo pipefail

interval=${1:-10s}
threshold=${2:-30s}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
eval "$("$repo/deploy/local/postgres.sh")"
db=evict_$$
admin=$TEST_DATABASE_URL
url=${admin%/*}/$db?${admin#*\?}
psql "$admin" -XAtqc "CREATE DATABASE $db" >/dev/null
token=$("$repo/bin/switchboard" token generate) # the cluster view needs an administrator
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  psql "$admin" -XAtqc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
}
trap cleanup EXIT

node() { # id grpc-port http-port
  DATABASE_URL=$url SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN=$token CLUSTER_NODE_ID=$1 CLUSTER_HEARTBEAT_INTERVAL=$interval CLUSTER_STALE_THRESHOLD=$threshold \
    SWITCHBOARD_GRPC_ADDR=127.0.0.1:$2 SWITCHBOARD_HTTP_ADDR=127.0.0.1:$3 SWITCHBOARD_LOG_LEVEL=warn \
    "$repo/bin/switchboard" serve all 2>/dev/null &
  pids+=($!)
}
node evict-survivor 19190 18180
node evict-victim 19191 18181
victim=${pids[1]}

members() { curl -fsS -H "Authorization: Bearer $token" http://127.0.0.1:18180/api/admin/cluster 2>/dev/null || true; }
until [[ $(members) == *evict-victim* && $(members) == *evict-survivor* ]]; do sleep 0.05; done
kill -KILL "$victim"
wait "$victim" 2>/dev/null || true
start=$(date +%s.%N)
while [[ $(members) == *evict-victim* ]]; do sleep 0.05; done
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v i="$interval" -v t="$threshold" \
  'BEGIN { printf "interval=%s threshold=%s: killed node gone after %.2fs\n", i, t, e - s }'
