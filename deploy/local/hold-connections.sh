#!/usr/bin/env bash
# hold-connections.sh N [-- COMMAND...]: holds N idle connections open on the
# test server (TEST_DATABASE_URL, else the test cluster of
# `deploy/local/postgres.sh test`, which the test tiers use too),
# as another client of a shared server would, to check that the suite stays
# within what is left of max_connections:
#
#   deploy/local/hold-connections.sh 40 -- make integration
#
# With a command it holds the connections while the command runs, then
# releases them and exits with the command's status; without one it holds
# them until interrupted. The sessions' application_name starts with
# "hold-connections", so a count of the suite's own connections can leave
# them out:
#   SELECT count(*) FROM pg_stat_activity
#   WHERE backend_type = 'client backend' AND application_name NOT LIKE 'hold-connections%';
set -euo pipefail

n=${1:?usage: hold-connections.sh N [-- COMMAND...]}
shift
[[ ${1:-} == -- ]] && shift
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [[ -z ${TEST_DATABASE_URL:-} ]]; then eval "$("$repo/deploy/local/postgres.sh" test)"; fi
url=$TEST_DATABASE_URL

app=hold-connections-$$
pids=()
# A backend asleep in pg_sleep does not notice its client is gone until the
# sleep ends, so killing psql alone would hold the slots for a day: end the
# sessions on the server too.
release() {
  ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null
  psql "$url" -XAtqc "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '$app'" >/dev/null 2>&1 || true
  wait 2>/dev/null || true
}
trap release EXIT
trap 'exit 130' INT TERM

# One psql per connection, each asleep in the server: the cheapest client
# that holds exactly one session.
for ((i = 0; i < n; i++)); do
  PGAPPNAME=$app psql "$url" -XAtqc 'SELECT pg_sleep(86400)' >/dev/null 2>&1 &
  pids+=($!)
done
held=0
for _ in $(seq 100); do
  held=$(psql "$url" -XAtqc "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$app'")
  ((held >= n)) && break
  sleep 0.1
done
max=$(psql "$url" -XAtqc 'SHOW max_connections')
echo "hold-connections: holding $held of the server's $max connections" >&2
((held >= n)) || { echo "hold-connections: could open only $held of $n" >&2; exit 1; }

if (($#)); then
  rc=0
  "$@" || rc=$?
  exit "$rc"
fi
echo "hold-connections: until interrupted (Ctrl-C)" >&2
wait
