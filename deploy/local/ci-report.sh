#!/usr/bin/env bash
# ci-report.sh: the end of `make test`. Reads what deploy/local/stage.sh and
# deploy/local/gotest.sh left in $CI_DIR (default .local/ci) and prints
#   1. every stage with its wall time and result (ok or FAILED),
#   2. the 10 slowest packages and the 10 slowest tests of the go test tiers,
#   3. the skipped tests (a skip is not a pass: each one should say why),
#   4. what failed: the stage, and for a go test tier each failed test with
#      its package and first error line;
# and exits non-zero when any stage failed. Everything it prints is also in
# $CI_DIR/summary.txt.
set -uo pipefail

ci=${CI_DIR:-.local/ci}
[[ -s $ci/stages.tsv ]] || { echo "ci-report.sh: no stages recorded in $ci"; exit 1; }
command -v jq >/dev/null || { echo "ci-report.sh needs jq: apt-get install -y --no-install-recommends jq"; exit 1; }

tiers=()
for t in unit integration e2e chaos; do [[ -s $ci/$t.json ]] && tiers+=("$t"); done

# per_tier JQ: runs a streaming jq program over each tier's JSON with $tier
# set, concatenating the outputs.
per_tier() {
  local t
  for t in "${tiers[@]}"; do jq -rn --arg tier "$t" "$1" "$ci/$t.json"; done
}

report() {
  echo
  echo "== stages (wall time) =="
  # Lane "-" ran alone; stages of lanes A and B ran at the same time, so
  # their sum is more than the run took: the last line is the run's wall
  # time (deploy/local/ci.sh writes it).
  awk -F'\t' '{ printf "  %-14s %8.1f s  %-6s lane %s\n", $1, $2, $3, $5; total += $2 }
    END { printf "  %-14s %8.1f s\n", "sum", total }' "$ci/stages.tsv"
  [[ ! -s $ci/wall ]] || printf '  %-14s %8.1f s\n' "wall" "$(cat "$ci/wall")"

  if ((${#tiers[@]})); then
    echo
    echo "== 10 slowest packages =="
    per_tier 'inputs | select(.Test == null and (.Action == "pass" or .Action == "fail") and .Elapsed != null)
      | [.Elapsed, $tier, .Package] | @tsv' |
      sort -t$'\t' -k1,1 -g -r | head -10 | awk -F'\t' '{ printf "  %8.1f s  %-12s %s\n", $1, $2, $3 }'
    echo
    echo "== 10 slowest tests (top level; a parallel test's time excludes its wait) =="
    per_tier 'inputs | select(.Test != null and (.Test | contains("/") | not)
        and (.Action == "pass" or .Action == "fail") and .Elapsed != null)
      | [.Elapsed, $tier, .Package, .Test] | @tsv' |
      sort -t$'\t' -k1,1 -g -r | head -10 | awk -F'\t' '{ printf "  %8.1f s  %-12s %s %s\n", $1, $2, $3, $4 }'

    # A skipped test's reason is the last line it printed before "--- SKIP".
    skips=$(per_tier '
      reduce (inputs | select(.Test != null and (.Action == "output" or .Action == "skip"))) as $e ({};
        .["\($e.Package)\t\($e.Test)"] |=
          if $e.Action == "skip" then (. // {}) + {skipped: true}
          elif ($e.Output | test("^\\s*(---|===) ") | not) and ($e.Output | test("\\S"))
          then (. // {}) + {why: ($e.Output | gsub("^\\s+|\\s+$"; ""))}
          else . end)
      | to_entries[] | select(.value.skipped) | "\($tier)\t\(.key)\t\(.value.why // "")"')
    if [[ -n $skips ]]; then
      echo
      echo "== skipped tests: $(wc -l <<<"$skips") (first 10) =="
      head -10 <<<"$skips" | awk -F'\t' '{ printf "  %-12s %s %s: %s\n", $1, $2, $3, $4 }'
    fi
  fi

  if ! awk -F'\t' '$3 == "FAILED" { bad = 1 } END { exit bad }' "$ci/stages.tsv"; then
    echo
    echo "== FAILED =="
    while IFS=$'\t' read -r name _ status _; do
      [[ $status == FAILED ]] || continue
      if [[ -s $ci/$name.json ]]; then
        echo "  stage $name (go test; full output $ci/$name.out):"
        failures "$ci/$name.json"
      else
        echo "  stage $name (log $ci/$name.log), its last lines:"
        { grep -v '^\s*$' "$ci/$name.log" | grep -v '^== ' | tail -5 | sed 's/^/      /'; } || echo "      (no output)"
      fi
    done <"$ci/stages.tsv"
  fi
}

# failures JSON: one line per failed test that has no failed subtest
# (package, test, first error line), and per package that failed outside
# any test (build error, panic, timeout).
failures() {
  local keys
  # Build output is keyed by ImportPath ("pkg [pkg.test]"); the package's own
  # fail event by Package: the suffix is cut so both meet under one key.
  keys=$(jq -n '[inputs | select(.Action == "fail" or .Action == "build-fail")
    | "\((.Package // .ImportPath) | sub(" \\[.*\\]$"; ""))\t\(.Test // "")"] | unique' "$1")
  jq -rn --argjson keys "$keys" '
    # Leaves: failed tests none of whose subtests failed; packages count
    # only when no test of theirs failed.
    ($keys | map(split("\t"))) as $k
    | ($k | map(select(.[1] != "")) ) as $tests
    | ([$tests[] | . as $t | select(any($tests[]; .[0] == $t[0] and (.[1] | startswith($t[1] + "/"))) | not)]
       + [$k[] | select(.[1] == "") | . as $p | select(any($tests[]; .[0] == $p[0]) | not)])
    | map({key: join("\t"), value: []}) | from_entries as $leaves
    | reduce (inputs | select(.Output)
        | {key: "\((.Package // .ImportPath) | sub(" \\[.*\\]$"; ""))\t\(.Test // "")", line: .Output}
        | select($leaves[.key] != null)) as $e ($leaves;
        if (.[$e.key] | length) < 60 then .[$e.key] += [$e.line] else . end)
    | to_entries[]
    | (.key | split("\t")) as $kp
    | (.value | map(gsub("^\\s+|\\s+$"; ""))
        | map(select(. != "" and (test("^(---|===) |^(ok|FAIL|PASS)(\\s|$)|^# ") | not)))) as $c
    | ($c | map(test("^Error:|^panic:")) | index(true)) as $i
    # The first error line: the testify "Error:" line (with the next line when it
    # ends in a colon) or a panic; else, for a test, its last file.go:N:
    # line (t.Fatal ends a test; earlier lines are often t.Log); for a
    # package, its first (a compile error).
    | (if $i != null then
         (if ($c[$i] | test(":$")) and ($c[$i] | test("^panic:") | not) then $c[$i:$i + 2] | join(" ") else $c[$i] end)
       else ($c | map(select(test("\\.go:\\d+:") and (test("^\\S+\\.go:\\d+:$|^Error Trace:") | not)))) as $g
         | if ($g | length) == 0 then ($c[0] // "(no output)")
           elif $kp[1] == "" then $g[0] else $g[-1] end
       end) as $first
    | "    \($kp[0]) \(if $kp[1] == "" then "(package)" else $kp[1] end): \($first | gsub("\\s+"; " ") | .[:240])"' "$1"
}

mkdir -p "$ci"
report | tee "$ci/summary.txt"
awk -F'\t' '$3 == "FAILED" { bad = 1 } END { exit bad }' "$ci/stages.tsv"
