#!/usr/bin/env bash
# gotest.sh TIER DIR GO-TEST-FLAGS... PACKAGES...: runs one test tier (unit,
# integration, e2e, chaos) as `go test -json` would, and keeps the output
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
#
# Why not `go test` itself: it links every test binary anew on every run
# (go caches compiled packages, not linked tests), ~40 CPU-seconds for the
# 43 race-enabled binaries of the integration tier on the 2-core machine,
# and each race-enabled binary sleeps 1 s at exit (GORACE atexit_sleep_ms).
# So the tier runs in two steps:
#   1. build: `go test -c -o DIR/` into a cache outside the checkout
#      ($GOTEST_BIN_CACHE, default ~/.cache/switchboard-testbin/TIER-<flags>),
#      where go's own up-to-date check (the build ID) skips every binary
#      whose inputs did not change, whichever clone built it (GOFLAGS has
#      -trimpath); then hard links of the binaries into $CI_DIR/TIER.bin,
#      so a later run that replaces them (go removes, then writes) never
#      changes a binary this run is executing. A lock serialises the step
#      between runs sharing the cache.
#   2. run: each binary in its package's folder under go's test2json, -p at
#      a time, the packages that took longest last time first, with
#      GORACE=atexit_sleep_ms=0 (a report is printed when the race is
#      found, not at exit; set GORACE to override).
# Flags: build flags (-race, -tags, -ldflags), -p, and the test flags -count,
# -parallel, -timeout, -run, -skip, -short, -failfast; any other (-v too:
# test2json needs its own) is refused rather than silently dropped.
set -uo pipefail

tier=$1 dir=$2
shift 2
ci=${CI_DIR:-.local/ci}
mkdir -p "$ci"
ci=$(cd "$ci" && pwd)
json=$ci/$tier.json out=$ci/$tier.out
command -v jq >/dev/null || { echo "gotest.sh needs jq: apt-get install -y --no-install-recommends jq"; exit 1; }
command -v flock >/dev/null || { echo "gotest.sh needs flock (util-linux)"; exit 1; }

build=() run=() pkgs=() jobs=$(nproc)
while (($#)); do
  a=$1
  shift
  case $a in
    -race | -race=* | -tags=* | -ldflags=* | -trimpath) build+=("$a") ;;
    -tags | -ldflags) build+=("$a=$1") && shift ;;
    -p) jobs=$1 && shift ;;
    -p=*) jobs=${a#-p=} ;;
    -count | -parallel | -timeout | -run | -skip) run+=("-test.${a#-}=$1") && shift ;;
    -count=* | -parallel=* | -timeout=* | -run=* | -skip=* | -short | -failfast) run+=("-test.${a#-}") ;;
    -*) echo "gotest.sh: go test flag $a is not handled here (deploy/local/gotest.sh)"; exit 2 ;;
    *) pkgs+=("$a") ;;
  esac
done

# With a test server (TEST_DATABASE_URL, from deploy/local/postgres.sh), the
# tier's test databases are dropped in the background and what is left is
# swept once every test process exited (PGTEST_RUN, pkg/pgtest/janitor.go).
sweep=
if [[ -n ${TEST_DATABASE_URL:-} ]]; then
  sweep=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
  export PGTEST_RUN=$sweep
fi
export GORACE="atexit_sleep_ms=0${GORACE:+ $GORACE}"

start=$(date +%s)
: >"$json"
rc=0
bin=$ci/$tier.bin
rm -rf "$bin" "$ci/$tier.pkg"
mkdir -p "$bin" "$ci/$tier.pkg"

# The packages that have tests under these build flags (import path,
# folder), and those go could not load (a path that does not exist, a file
# that does not parse), which fail the tier as go test would.
if ! (cd "$dir" && go list -e "${build[@]}" -f '{{if .Error}}!{{.ImportPath}}{{"\t"}}{{printf "%q" .Error.Err}}{{else if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{"\t"}}{{.Dir}}{{end}}' "${pkgs[@]}") \
  >"$ci/$tier.list" 2>"$ci/$tier.stderr"; then
  rc=1
fi
mapfile -t list < <(grep -v '^!' "$ci/$tier.list" | grep .)

# Build. `go test -c -o DIR/` names a binary after the package's last path
# element, so packages sharing one (three internal/store) go to separate
# folders: group k holds the k-th package of each name.
key=$(printf '%s\n' "$tier" "${build[@]}" "$(go env GOVERSION GOFLAGS GOARCH)" | md5sum | cut -c1-12)
cache=${GOTEST_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-testbin}/$tier-$key
mkdir -p "$cache"
declare -A seen=() group=() built=()
for row in "${list[@]}"; do
  ip=${row%%$'\t'*} base=${ip##*/}
  k=${seen[$base]:-0}
  seen[$base]=$((k + 1))
  group[$k]+="$ip "
done
# buildfail PKG LOG: the package's build output and failure, as go test -json reports them.
buildfail() {
  jq -Rn --arg p "$1" '(inputs | {Action: "output", Package: $p, Output: (. + "\n")}), {Action: "fail", Package: $p, Elapsed: 0}' <"$2" >>"$json"
  echo "FAIL $1 (build)"
  rc=1
}
while IFS=$'\t' read -r ip why; do
  buildfail "${ip#!}" <(printf '%s\n' "$why")
done < <(grep '^!' "$ci/$tier.list")
{
  flock 9
  for k in "${!group[@]}"; do
    read -ra ips <<<"${group[$k]}"
    if (cd "$dir" && go test -c "${build[@]}" -o "$cache/g$k/" "${ips[@]}") >"$ci/$tier.build" 2>&1; then
      for ip in "${ips[@]}"; do built[$ip]=$cache/g$k/${ip##*/}.test; done
      continue
    fi
    # One at a time, to know whose build failed.
    for ip in "${ips[@]}"; do
      if (cd "$dir" && go test -c "${build[@]}" -o "$cache/g$k/${ip##*/}.test" "$ip") >"$ci/$tier.build" 2>&1; then
        built[$ip]=$cache/g$k/${ip##*/}.test
      else
        buildfail "$ip" "$ci/$tier.build"
      fi
    done
  done
  for ip in "${!built[@]}"; do
    to=$bin/${ip//\//_}.test
    ln -f "${built[$ip]}" "$to" 2>/dev/null || cp "${built[$ip]}" "$to"
  done
} 9>"$cache/.lock"

# Run, longest first by the last run's times (a long package started last
# would leave the other slots idle at the end).
# test2json's path, so each package does not start the go command again
# (go tool -n builds it if need be and prints where it is).
t2j=$(go tool -n test2json 2>/dev/null)
[[ -x $t2j ]] || t2j="go tool test2json"
times=$cache/elapsed.tsv
order=()
while IFS=$'\t' read -r _ ip pkgdir; do order+=("$ip"$'\t'"$pkgdir"); done < <(
  for row in "${list[@]}"; do
    ip=${row%%$'\t'*}
    [[ -n ${built[$ip]:-} ]] || continue
    printf '%s\t%s\n' "$(awk -F'\t' -v p="$ip" '$1 == p { t = $2 } END { print t + 0 }' "$times" 2>/dev/null || echo 0)" "$row"
  done | sort -t$'\t' -k1,1 -g -r)
runone() {
  local ip=$1 pkgdir=$2 pj=$ci/$tier.pkg/${1//\//_}.json
  (cd "$pkgdir" && $t2j -t -p "$ip" "$bin/${ip//\//_}.test" -test.v=test2json -test.paniconexit0 "${run[@]}") >"$pj" 2>&1
  local status=$?
  flock "$json" cat "$pj" >>"$json"
  if ((status != 0)); then
    local took
    took=$(jq -r 'select(.Test == null and .Action == "fail" and .Elapsed != null) | " (\(.Elapsed) s)"' "$pj" 2>/dev/null | tail -1)
    echo "FAIL $ip$took"
  fi
  return $status
}
running=0
for row in "${order[@]}"; do
  if ((running >= jobs)); then
    wait -n || rc=1
    running=$((running - 1))
  fi
  runone "${row%%$'\t'*}" "${row#*$'\t'}" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || rc=1
  running=$((running - 1))
done
jq -r 'select(.Test == null and (.Action == "pass" or .Action == "fail") and .Elapsed != null) | [.Package, .Elapsed] | @tsv' \
  "$json" >"$times.new" 2>/dev/null && mv "$times.new" "$times"

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
