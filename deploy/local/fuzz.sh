#!/usr/bin/env bash
# fuzz.sh runs every `go test -fuzz` target of the repository, one after the
# other, in one of two modes:
#
#   FUZZTIME=20000x (default; `make fuzz`, FUZZTIME=1m for a longer run by
#     hand): each target for that budget, every failure is a failure.
#   FUZZ_SECONDS=N (`make test`, through `make fuzz-brief`): N seconds of
#     fuzzing in total, split evenly over the targets (at least 1 s each).
#     Building each fuzz binary and replaying its corpus comes on top.
#
# The seed corpus (f.Add and testdata/fuzz) already runs in every `go test`,
# so CI only needs a brief run: a parser or verifier that panics or accepts a
# forged signature on the first few thousand inputs fails the build.
# Anything the fuzzer finds is written to that package's testdata/fuzz and
# should be committed as a regression seed once fixed.
#
# Why FUZZ_SECONDS is judged by what the fuzzer found: with a duration, Go's
# fuzz coordinator (up to 1.26 at least, golang/go#75804) can report a
# bare "context deadline exceeded" failure at the deadline on a loaded
# machine, with no input found. A count has no deadline to race, but a count
# costs a different time on every machine, and CI wants a time budget. So in
# FUZZ_SECONDS mode a target fails when the fuzzer wrote a failing input, or
# when anything other than that one bare deadline line failed (a seed, a
# build, a panic); the bare deadline alone is reported, not failed: by then
# the seeds passed and the fuzzer ran its whole budget without a crash.
# FUZZTIME mode keeps every failure a failure.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"

targets=()
while IFS= read -r file; do
  for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
    targets+=("$(dirname "$file") $target")
  done
done < <(grep -rl --include='*_test.go' '^func Fuzz' pkg services | sort)
((${#targets[@]})) || { echo "fuzz: no fuzz targets found: the search pattern is broken"; exit 1; }

if [[ -n ${FUZZ_SECONDS:-} ]]; then
  per=$((FUZZ_SECONDS / ${#targets[@]}))
  ((per >= 1)) || per=1
  fuzztime=${per}s
  brief=1
else
  fuzztime=${FUZZTIME:-20000x}
  brief=0
fi
echo "fuzz: ${#targets[@]} targets, $fuzztime each"

log=$(mktemp)
bins=$(mktemp -d)
trap 'rm -rf "$log" "$bins"' EXIT
# Each package's fuzz binary is built once (go test -c -fuzz instruments it
# as go test -fuzz would) and run once per target: ingest/verify holds 15 of
# the 19 targets, and go test -fuzz linked it anew for each. It is built into
# the test-binary cache of gotest.sh (go skips a binary whose inputs did not
# change) under a lock, and hard-linked into this run's folder, so another
# run's rebuild never changes a binary this one runs. The corpus cache is go
# test's own ($GOCACHE/fuzz/<import path>).
cache=$(go env GOCACHE)/fuzz
built=${GOTEST_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-testbin}/fuzz
mkdir -p "$built"
declare -A importpath
status=0 tolerated=0
for t in "${targets[@]}"; do
  dir=${t% *} target=${t#* }
  start=$SECONDS
  bin=$bins/${dir//\//_}.test
  if [[ -z ${importpath[$dir]:-} ]]; then
    importpath[$dir]=$(go list "./$dir")
    if ! flock "$built/.lock" bash -c 'go test -c -fuzz=. -o "$1" "./$2" || exit 1; ln -f "$1" "$3" 2>/dev/null || cp "$1" "$3"' \
      _ "$built/${dir//\//_}.test" "$dir" "$bin" >"$log" 2>&1; then
      printf 'fuzz: %-28s build FAILED\n' "$dir"
      cat "$log"
      status=1
    fi
  fi
  if [[ ! -x $bin ]]; then
    printf 'fuzz: %-28s %-40s FAILED (no binary)\n' "$dir" "$target"
    status=1
    continue
  fi
  # -parallel=1: one fuzz worker, the machine is shared with the other stages'
  # leftovers and other jobs. -timeout bounds a wedged run, not the budget.
  # The binary runs in its package's folder, where testdata/fuzz is.
  if (cd "$dir" && "$bin" -test.run='^$' -test.fuzz="^${target}\$" -test.fuzztime="$fuzztime" -test.parallel=1 -test.timeout=15m \
    -test.fuzzcachedir="$cache/${importpath[$dir]}") >"$log" 2>&1; then
    printf 'fuzz: %-28s %-40s ok (%d s)\n' "$dir" "$target" $((SECONDS - start))
    continue
  fi
  if ((brief)) && ! grep -q 'Failing input written to' "$log" &&
    [[ $(grep -cvE '^(--- FAIL: Fuzz|    context deadline exceeded$|FAIL|exit status [0-9]+$|fuzz: elapsed: )' "$log") == 0 ]] &&
    grep -q '^    context deadline exceeded$' "$log"; then
    printf 'fuzz: %-28s %-40s ok: ran its budget, found nothing; go reported only its bare deadline (golang/go#75804)\n' "$dir" "$target"
    tolerated=$((tolerated + 1))
    continue
  fi
  printf 'fuzz: %-28s %-40s FAILED\n' "$dir" "$target"
  cat "$log"
  status=1
done
((tolerated == 0)) || echo "fuzz: $tolerated target(s) ended with go's bare deadline (golang/go#75804), not counted as failures"
exit $status
