#!/usr/bin/env bash
# ci.sh: the stages of `make test` (what .ci/run runs), in the order and
# lanes that keep a 2-core machine busy, then deploy/local/ci-report.sh.
#
#   alone:   tools, services, verify (short; later stages need them)
#   lane A:  integration, then e2e   (both use the test Postgres)
#   lane B:  e2e-deps, vet, lint, fuzz, chaos  (no connection to the test
#            Postgres: chaos runs its own private cluster)
#
# The lanes run at the same time. Measured on the 2-core machine, every
# stage of lane B left a core partly idle (chaos ~35% busy: it waits out
# faults; fuzz one worker), and lane A is the long one. Lane B never opens a
# connection to the test server, so the connection bound of the tiers
# (README, "Development") still holds. integration and e2e do not overlap:
# together they would pass that bound.
#
# Every stage runs even after one failed; the report says what failed and
# the exit status is non-zero then. GOFLAGS gets -trimpath: file paths then
# leave the build's cache keys, so a fresh clone in another directory reuses
# what an earlier run compiled instead of rebuilding every package of the
# workspace (and vet's and the fuzzers' builds alike).
set -uo pipefail
cd "$(dirname "$0")/../.."

ci=${CI_DIR:-.local/ci}
export CI_DIR=$ci
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"
stage=deploy/local/stage.sh
make=(make --no-print-directory)
start=$(date +%s.%N)

$stage tools deploy/local/tools.sh buf protoc sqlc lint
# "services" starts (or installs) Postgres and Redis, which the integration
# tier needs, so their time (apt on a first run) is not charged to a tier.
# What only the e2e tier needs (Chromium, promtool, npm locks, grpcurl) is
# lane B's first stage, off the critical path: lane A waits for it only
# after the integration tier, which takes far longer.
$stage services bash -c 'eval "$(deploy/local/postgres.sh test)" && deploy/local/redis.sh'
$stage verify "${make[@]}" verify

echo
echo "== lanes A (integration, e2e) and B (e2e-deps, vet, lint, fuzz, chaos) run at once; each stage's output is in its log =="
rm -f "$ci/e2e-deps.done"
(
  export STAGE_LANE=A
  $stage integration "${make[@]}" integration
  for ((i = 0; i < 900; i++)); do [[ -e $ci/e2e-deps.done ]] && break; sleep 1; done
  $stage e2e "${make[@]}" e2e
) &
a=$!
# Lane A is the critical path, so lane B's stages that have no timing to
# keep (vet, lint, the fuzzers' seconds) run at a lower CPU priority: on the
# 2-core machine they otherwise took CPU from the integration tier's
# busiest packages, which run first. chaos keeps the default priority (it
# asserts stalls and recovery times) and comes last, once those packages
# are past.
(
  export STAGE_LANE=B
  $stage e2e-deps "${make[@]}" e2e-deps
  touch "$ci/e2e-deps.done"
  $stage vet nice -n 10 "${make[@]}" vet
  $stage lint nice -n 10 "${make[@]}" lint
  $stage fuzz nice -n 10 "${make[@]}" fuzz-brief
  $stage chaos "${make[@]}" chaos
) &
b=$!
wait "$a" "$b"

awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }' >"$ci/wall"
exec deploy/local/ci-report.sh
