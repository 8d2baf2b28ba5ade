#!/usr/bin/env bash
# fuzz.sh runs every `go test -fuzz` target of the repository for a short
# budget each (default 20000 executions; FUZZTIME=1m deploy/local/fuzz.sh for
# a longer run by hand). CI runs it briefly: a parser or verifier that panics or accepts a
# forged signature on the first few thousand inputs fails the build. The
# seed corpus (f.Add and testdata/fuzz) already runs in every `go test`.
# Anything the fuzzer finds is written to that package's testdata/fuzz and
# should be committed as a regression seed once fixed.
#
# The default budget is a count, not a duration: with a duration, Go's fuzz
# coordinator (up to 1.26, golang/go#75804) can report a bare "context deadline
# exceeded" failure at the deadline on a loaded machine, with no input found.
# A count has no deadline to race, so a failure here is always a real one.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fuzztime=${FUZZTIME:-20000x}
cd "$repo"
status=0
while IFS= read -r file; do
  dir=$(dirname "$file")
  for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
    echo "fuzz: $dir $target ($fuzztime)"
    if ! go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -parallel=1 "./$dir" >/tmp/fuzz.$$.log 2>&1; then
      cat /tmp/fuzz.$$.log
      status=1
    fi
  done
done < <(grep -rl --include='*_test.go' '^func Fuzz' pkg services | sort)
rm -f /tmp/fuzz.$$.log
exit $status
