#!/usr/bin/env bash
# bench-queue-keyed.sh runs `switchboard bench queue` keyless and then keyed
# (100 concurrency keys, key_max_running 10) back to back on this machine and
# prints the ratio: concurrency limits should cost at most 30 % of the drain
# (issue 17's goal: keyed ≥ 0.7 of keyless).
#
#   make build && deploy/local/bench-queue-keyed.sh [--keys 100 --key-max-running 10]
#
# Both runs: deploy/local/bench-queue.sh --todos 100000 --workers 200 --buffer 200 --trickle 200.
# The last line is machine-readable:
#   RATIO keyless_jobs_per_s=<n> keyed_jobs_per_s=<n> keyed_ratio=<n>
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[[ $# -gt 0 ]] || set -- --keys 100 --key-max-running 10
common=(--todos 100000 --workers 200 --buffer 200 --trickle 200)
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

keyless=$("$repo/deploy/local/bench-queue.sh" "${common[@]}" | field jobs_per_s)
echo "keyless: $keyless jobs/s"
keyed=$("$repo/deploy/local/bench-queue.sh" "${common[@]}" "$@" | field jobs_per_s)
echo "keyed ($*): $keyed jobs/s"
echo "RATIO keyless_jobs_per_s=$keyless keyed_jobs_per_s=$keyed keyed_ratio=$(awk -v a="$keyed" -v b="$keyless" 'BEGIN {printf "%.2f", a / b}')"
