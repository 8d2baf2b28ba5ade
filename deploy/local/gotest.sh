#!/usr/bin/env bash
# gotest.sh TIER DIR GO-TEST-ARGS...: runs `go test -json GO-TEST-ARGS` in DIR
# for one test tier (unit, integration, e2e, chaos) and keeps the output
# short: every event goes to $CI_DIR/TIER.json (default .local/ci, read by
# deploy/local/ci-report.sh for the slowest packages and tests), the plain
# test output to $CI_DIR/TIER.out, and the terminal shows only
#   - "FAIL <package>" as each package fails,
#   - afterwards the output of the failed tests (and build errors),
#   - one line for the tier: packages, tests, failures, skips, seconds.
# Two hundred "ok" lines hid the one failure that mattered.
#
# A tier that ran no test at all fails: a package pattern or build tag that
# matches nothing would otherwise pass forever.
set -uo pipefail

tier=$1 dir=$2
shift 2
ci=${CI_DIR:-.local/ci}
mkdir -p "$ci"
ci=$(cd "$ci" && pwd)
json=$ci/$tier.json out=$ci/$tier.out
command -v jq >/dev/null || { echo "gotest.sh needs jq: apt-get install -y --no-install-recommends jq"; exit 1; }

# With a test server (TEST_DATABASE_URL, from deploy/local/postgres.sh), the
# tier's test databases are dropped in the background and what is left is
# swept once go test exited (PGTEST_RUN, pkg/pgtest/janitor.go).
sweep=
if [[ -n ${TEST_DATABASE_URL:-} ]]; then
  sweep=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
  export PGTEST_RUN=$sweep
fi

start=$(date +%s)
(cd "$dir" && go test -json "$@") 2>"$ci/$tier.stderr" | tee "$json" |
  jq --unbuffered -r 'select(.Action == "fail" and .Test == null) | "FAIL \(.Package) (\(.Elapsed // 0) s)"'
rc=${PIPESTATUS[0]}
if [[ -n $sweep ]] && ! "$(dirname "$0")/pgtest-sweep.sh" "$sweep"; then
  rc=1
fi
secs=$(($(date +%s) - start))
jq -j 'select(.Output) | .Output' "$json" >"$out" 2>/dev/null

# Which (package, test) pairs failed, and which packages failed to build.
# Build output is keyed by ImportPath ("pkg [pkg.test]"), cut to the package.
failed=$(jq -n '[inputs | select(.Action == "fail" or .Action == "build-fail")
  | "\((.Package // .ImportPath) | sub(" \\[.*\\]$"; ""))\t\(.Test // "")"] | unique' "$json")
# The failed tests' output and build errors, at most 150 lines per package
# (the rest is in TIER.out).
jq -rn --argjson failed "$failed" '
  ($failed | map({key: ., value: true}) | from_entries) as $f
  | reduce (inputs | select(.Output)
      | select($f["\((.Package // .ImportPath) | sub(" \\[.*\\]$"; ""))\t\(.Test // "")"])) as $e
      ({}; .[($e.Package // $e.ImportPath) | sub(" \\[.*\\]$"; "")] += [$e.Output])
  | to_entries[]
  | "--- output of \(.key):\n" + (.value[:150] | join(""))
    + (if (.value | length) > 150 then "… \((.value | length) - 150) more lines in '"$out"'\n" else "" end)' "$json"

# Anything go itself said (a pattern matching nothing, a compile error
# outside -json's reach, a vet failure) is on stderr.
grep -v '^go: downloading' "$ci/$tier.stderr" | head -50

# Counted in one streaming pass: a tier's JSON runs to tens of megabytes.
read -r pkgs pkgfail tests testfail skips < <(jq -rn '
  reduce inputs as $e ({p: 0, pf: 0, t: 0, tf: 0, s: 0};
    if $e.Test == null then
      if $e.Action == "pass" then .p += 1 elif $e.Action == "fail" then .p += 1 | .pf += 1 else . end
    elif $e.Action == "pass" then .t += 1
    elif $e.Action == "fail" then .t += 1 | .tf += 1
    elif $e.Action == "skip" then .t += 1 | .s += 1
    else . end)
  | [.p, .pf, .t, .tf, .s] | @tsv' "$json")
pkgs=${pkgs:-0} pkgfail=${pkgfail:-0} tests=${tests:-0} testfail=${testfail:-0} skips=${skips:-0}
if ((rc == 0 && tests == 0)); then
  echo "$tier: ran no tests (go test $*): a pattern or build tag matching nothing is a failure, not a pass"
  rc=1
fi
printf '%s: %s packages (%s failed), %s tests (%s failed, %s skipped) in %s s; full output %s\n' \
  "$tier" "$pkgs" "$pkgfail" "$tests" "$testfail" "$skips" "$secs" "$out"
exit "$rc"
