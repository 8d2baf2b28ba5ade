#!/usr/bin/env bash
# bench-queue.sh runs `switchboard bench queue` end to end on this machine:
# a scratch database, one `serve all` node, an administrator token, a tenant,
# an agent and an agent credential (scopes agent,publisher), then the bench.
# Arguments go to the bench (default: --todos 100000 --workers 200 --buffer 200 --trickle 1000);
# a keyed run adds e.g. --keys 100 --key-max-running 10.
#
#   make build && deploy/local/bench-queue.sh [--todos N --workers W ...]
#
# Ports: SWITCHBOARD_BENCH_GRPC (19390) and SWITCHBOARD_BENCH_HTTP (18390).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$repo/bin/switchboard
grpc=127.0.0.1:${SWITCHBOARD_BENCH_GRPC:-19390}
http=127.0.0.1:${SWITCHBOARD_BENCH_HTTP:-18390}
[[ $# -gt 0 ]] || set -- --todos 100000 --workers 200 --buffer 200 --trickle 1000

eval "$("$repo/deploy/local/postgres.sh")"
db=benchq_$$
admin=$TEST_DATABASE_URL
psql "$admin" -XAtqc "CREATE DATABASE $db" >/dev/null
log=$(mktemp)
node=
cleanup() {
  [[ -z $node ]] || { kill "$node" 2>/dev/null; wait "$node" 2>/dev/null || true; }
  psql "$admin" -XAtqc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
  rm -f "$log"
}
trap cleanup EXIT

token=$("$bin" token generate)
DATABASE_URL=${admin%/*}/$db?${admin#*\?} SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN=$token \
  SWITCHBOARD_GRPC_ADDR=$grpc SWITCHBOARD_HTTP_ADDR=$http SWITCHBOARD_LOG_LEVEL=warn \
  "$bin" serve all 2>"$log" &
node=$!
for _ in $(seq 300); do curl -fs "http://$http/health" >/dev/null && break; sleep 0.1; done

api() { curl -fsS -H "Authorization: Bearer $token" "http://$http$1" -d "$2"; }
field() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p"; }
human=$(api /api/admin/humans '{"email":"bench@example.com"}' | field id)
agent=$(api /api/admin/agents "{\"human_id\":\"$human\",\"name\":\"bench\"}" | field id)
cred=$(api /api/admin/credentials "{\"human_id\":\"$human\",\"agent_id\":\"$agent\",\"scopes\":[\"agent\",\"publisher\"]}" | field token)
# The tenant's admin credential, for a keyed run's SetQueueLimits (--key-max-running).
admin_cred=$(api /api/admin/credentials "{\"human_id\":\"$human\",\"scopes\":[\"admin\"]}" | field token)
SWITCHBOARD_TOKEN=$cred SWITCHBOARD_ADMIN_TOKEN=$admin_cred "$bin" bench queue --addr "$grpc" "$@"
