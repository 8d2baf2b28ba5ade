#!/usr/bin/env bash
# ci.sh: the stages of `make test` (what .ci/run runs), in the order and
# lanes that keep a 2-core machine busy, then deploy/local/ci-report.sh.
#
#   alone:   tools, services, verify (short; later stages need them)
#   lane A:  integration, then e2e   (both use the shared Postgres)
#   lane B:  vet, lint, chaos, fuzz  (no shared Postgres connection: chaos
#            runs its own private cluster)
#
# The lanes run at the same time. Measured on the 2-core machine, every
# stage of lane B left a core partly idle (chaos ~35% busy: it waits out
# faults; fuzz one worker), and lane A is the long one. Lane B never opens a
# connection to the shared server, so the connection bound of the tiers
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
# "services" installs or starts what the tests need, so its time (apt on a
# first run) is not charged to a test tier.
$stage services bash -c 'eval "$(deploy/local/postgres.sh)" && make --no-print-directory e2e-deps'
$stage verify "${make[@]}" verify

echo
echo "== lanes A (integration, e2e) and B (vet, lint, chaos, fuzz) run at once; each stage's output is in its log =="
(
  export STAGE_LANE=A
  $stage integration "${make[@]}" integration
  $stage e2e "${make[@]}" e2e
) &
a=$!
(
  export STAGE_LANE=B
  $stage vet "${make[@]}" vet
  $stage lint "${make[@]}" lint
  $stage chaos "${make[@]}" chaos
  $stage fuzz "${make[@]}" fuzz-brief
) &
b=$!
wait "$a" "$b"

awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }' >"$ci/wall"
exec deploy/local/ci-report.sh
