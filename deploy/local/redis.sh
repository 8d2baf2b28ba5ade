#!/usr/bin/env bash
# redis.sh makes sure a Redis server answers on 127.0.0.1:${SWITCHBOARD_REDIS_PORT:-6379}
# for `make test` (the ingest Redis Streams adapter's tests talk to a real one).
#  1. When something answers PING there, it is used as is.
#  2. Otherwise redis-server is started in the background (data in
#     $SWITCHBOARD_REDIS_DATA, default .local/redis, git-ignored; no persistence),
#     after installing the redis-server package when root on Debian and it is missing.
# `deploy/local/redis.sh stop` stops a server this script started.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
port=${SWITCHBOARD_REDIS_PORT:-6379}
data=${SWITCHBOARD_REDIS_DATA:-$repo/.local/redis}
log() { printf 'redis.sh: %s\n' "$*" >&2; }

answers() { [[ $(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]]; }

if [[ ${1:-} == stop ]]; then
  [[ -s $data/redis.pid ]] && kill "$(cat "$data/redis.pid")" 2>/dev/null || true
  exit 0
fi

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    log "installing redis-server"
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >&2
  else
    log "redis-server is missing; install Redis"
    exit 1
  fi
fi

answers && exit 0

mkdir -p "$data"
log "starting redis-server on 127.0.0.1:$port"
redis-server --bind 127.0.0.1 --port "$port" --daemonize yes --dir "$data" \
  --pidfile "$data/redis.pid" --logfile "$data/redis.log" --save '' --appendonly no
for _ in $(seq 50); do answers && exit 0; sleep 0.1; done
log "redis-server did not answer on 127.0.0.1:$port; see $data/redis.log"
exit 1
