#!/usr/bin/env bash
# bench-queue-vs-river.sh runs `switchboard bench queue` side by side with
# River on this machine and prints the ratios. Absolute figures on a shared
# 2-core machine drift by ±20% from minute to minute, so each round runs
# River and then Switchboard back to back, and the ratio is taken from the
# medians of the rounds.
#
#   make build && deploy/local/bench-queue-vs-river.sh [ROUNDS]   (default 3)
#
# River: the harness in the peers folder (SWITCHBOARD_PEERS, default
# ../shared/peers next to the repository), `-only work -workers 2000`
# (River's own bench setting: 100k jobs, FetchCooldown 2 ms, FetchPollInterval
# 20 ms) against the database bench_river, created if missing, on the
# server postgres.sh picks; and its latency trickle (`-only latency
# -latency-configs tuned`). Switchboard: deploy/local/bench-queue.sh --todos
# 100000 --workers 200 --buffer 200 --trickle 1000.
# The last line is machine-readable:
#   RATIO river_jobs_per_s=<n> switchboard_jobs_per_s=<n> throughput_ratio=<n> river_p99_ms=<n> switchboard_p99_ms=<n>
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
peers=${SWITCHBOARD_PEERS:-$repo/../shared/peers}
rounds=${1:-3}
harness=$peers/riverbench-harness
[[ -d $harness ]] || { echo "bench-queue-vs-river.sh: no River harness at $harness (set SWITCHBOARD_PEERS)" >&2; exit 1; }
[[ -x $repo/bin/switchboard ]] || { echo "bench-queue-vs-river.sh: run make build first" >&2; exit 1; }

eval "$("$repo/deploy/local/postgres.sh")"
admin=$TEST_DATABASE_URL
river_url=${admin%/*}/bench_river?${admin#*\?}
if [[ $(psql "$admin" -XAtqc "SELECT 1 FROM pg_database WHERE datname = 'bench_river'") != 1 ]]; then
  psql "$admin" -XAtqc "CREATE DATABASE bench_river" >/dev/null
fi
river=$(mktemp -d)/riverbench
trap 'rm -rf "$(dirname "$river")"' EXIT
(cd "$harness" && go build -o "$river" .)

median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

river_tp=() sb_tp=() sb_p99=()
for r in $(seq "$rounds"); do
  tp=$("$river" -dsn "$river_url" -runs 1 -only work -workers 2000 2>/dev/null | sed -n 's/^RESULT,work_maxworkers2000,jobs\/s,//p')
  line=$("$repo/deploy/local/bench-queue.sh" --todos 100000 --workers 200 --buffer 200 --trickle 1000 2>/dev/null | grep '^RESULT')
  river_tp+=("$tp") sb_tp+=("$(field jobs_per_s <<<"$line")") sb_p99+=("$(field claim_p99_ms <<<"$line")")
  echo "round $r: River ${tp} jobs/s · Switchboard $(field jobs_per_s <<<"$line") jobs/s, enqueue→claim p50 $(field claim_p50_ms <<<"$line") ms p99 $(field claim_p99_ms <<<"$line") ms" >&2
done
river_p99=$("$river" -dsn "$river_url" -runs 1 -only latency -latency-configs tuned 2>/dev/null | sed -n 's/^RESULT,latency_tuned_p99,ms,//p')
echo "River latency trickle (tuned 2 ms / 20 ms): p99 ${river_p99} ms" >&2

rt=$(printf '%s\n' "${river_tp[@]}" | median)
st=$(printf '%s\n' "${sb_tp[@]}" | median)
sp=$(printf '%s\n' "${sb_p99[@]}" | median)
printf 'RATIO river_jobs_per_s=%.0f switchboard_jobs_per_s=%.0f throughput_ratio=%.2f river_p99_ms=%s switchboard_p99_ms=%s\n' \
  "$rt" "$st" "$(awk -v a="$st" -v b="$rt" 'BEGIN {print a / b}')" "$river_p99" "$sp"
