#!/usr/bin/env bash
# bench-mcp-batch.sh replays issue 31's /mcp batch attack against one local
# node and prints what it cost the node: a scratch database, one `serve all`
# node, a tenant with 20 todos (about 1 KiB of payload each, so one
# list_todos page renders about as large as the issue's), a `read`
# credential, then one POST /mcp whose body is a JSON-RPC batch of N
# list_todos calls (default 2000) with no MCP-Protocol-Version header, as a
# 2025-03-26 client would send it. It prints the HTTP status, the response's
# size and time, and the node's CPU time and RSS (before, after, peak)
# around that one request. A node that refuses batches answers 400 at once.
# Then the same calls as single-call POSTs, PARALLEL (default 256) at a
# time, as a client refused its batch would send them: the statuses
# (429 past the credential's cap of requests in progress) and the node's
# CPU and RSS around them.
#
#   make build && deploy/local/bench-mcp-batch.sh [calls] [parallel]
#
# Ports: SWITCHBOARD_BENCH_GRPC (19391) and SWITCHBOARD_BENCH_HTTP (18391).
# SWITCHBOARD_BENCH_BIN runs another binary (an older build, to compare).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${SWITCHBOARD_BENCH_BIN:-$repo/bin/switchboard}
grpc=127.0.0.1:${SWITCHBOARD_BENCH_GRPC:-19391}
http=127.0.0.1:${SWITCHBOARD_BENCH_HTTP:-18391}
calls=${1:-2000}
parallel=${2:-256}

eval "$("$repo/deploy/local/postgres.sh")"
db=benchmcp_$$
admin=$TEST_DATABASE_URL
psql "$admin" -XAtqc "CREATE DATABASE $db" >/dev/null
log=$(mktemp)
body=$(mktemp)
one=$(mktemp)
node=
cleanup() {
  [[ -z $node ]] || { kill "$node" 2>/dev/null; wait "$node" 2>/dev/null || true; }
  psql "$admin" -XAtqc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
  rm -f "$log" "$body" "$one"
}
trap cleanup EXIT

token=$("$bin" token generate)
DATABASE_URL=${admin%/*}/$db?${admin#*\?} SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN=$token \
  SWITCHBOARD_GRPC_ADDR=$grpc SWITCHBOARD_HTTP_ADDR=$http SWITCHBOARD_LOG_LEVEL=warn \
  "$bin" serve all 2>"$log" &
node=$!
for _ in $(seq 300); do curl -fs "http://$http/health" >/dev/null && break; sleep 0.1; done

api() { curl -fsS -H "Authorization: Bearer $2" "http://$http$1" -d "$3"; }
field() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p"; }
human=$(api /api/admin/humans "$token" '{"email":"bench@example.com"}' | field id)
tenant=$(api /api/admin/credentials "$token" "{\"human_id\":\"$human\",\"scopes\":[\"admin\"]}" | field token)
reader=$(api /api/admin/credentials "$token" "{\"human_id\":\"$human\",\"scopes\":[\"read\"]}" | field token)
blob=$(printf 'x%.0s' $(seq 900))
items=$(for i in $(seq 20); do printf '{"payload":{"n":%d,"blob":"%s"}},' "$i" "$blob"; done)
api /api/queues/bench/todos:batch "$tenant" "{\"requests\":[${items%,}]}" >/dev/null

{
  printf '['
  for i in $(seq "$calls"); do
    [[ $i -eq 1 ]] || printf ','
    printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_todos","arguments":{}}}' "$i"
  done
  printf ']'
} >"$body"

# cpu_ms: the node's user + system CPU time so far, in milliseconds.
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$node/stat"; }
kib() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$node/status"; }

post() { # body-file: prints the HTTP status, bytes and seconds of one POST /mcp as the reader
  curl -sS -o /dev/null -w '%{http_code} %{size_download} %{time_total}\n' "http://$http/mcp" \
    -H "Authorization: Bearer $reader" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' --data-binary @"$1"
}

cpu0=$(cpu_ms) rss0=$(kib VmRSS)
read -r code size secs <<<"$(post "$body")"
cpu1=$(cpu_ms) rss1=$(kib VmRSS) peak=$(kib VmHWM)
printf 'one POST: %d list_todos calls in a batch, %d bytes, read credential\n' "$calls" "$(stat -c %s "$body")"
printf '  response: HTTP %s, %s bytes, %ss\n' "$code" "$size" "$secs"
printf '  node CPU: %d ms for the request\n' $((cpu1 - cpu0))
printf '  node RSS: %d MiB before, %d MiB after, %d MiB peak\n' $((rss0 / 1024)) $((rss1 / 1024)) $((peak / 1024))

printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_todos","arguments":{}}}' >"$one"
export -f post
export http reader
start=$(date +%s.%N)
statuses=$(seq "$calls" | xargs -P "$parallel" -I{} bash -c 'post "$0"' "$one" | awk '{ print $1 }' | sort | uniq -c | xargs)
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
cpu2=$(cpu_ms) rss2=$(kib VmRSS) peak=$(kib VmHWM)
printf '%d POSTs of one list_todos call each, %d at a time, read credential\n' "$calls" "$parallel"
printf '  responses: %s (count status), %.1fs\n' "$statuses" "$secs"
printf '  node CPU: %d ms for them\n' $((cpu2 - cpu1))
printf '  node RSS: %d MiB before, %d MiB after, %d MiB peak\n' $((rss1 / 1024)) $((rss2 / 1024)) $((peak / 1024))
