#!/usr/bin/env bash
# stage.sh NAME COMMAND...: runs one stage of `make test` and records it.
#
# The command's output goes to the terminal and, in full, to
# $CI_DIR/NAME.log (default .local/ci, git-ignored); its wall time and result
# are appended to $CI_DIR/stages.tsv, which deploy/local/ci-report.sh turns
# into the table printed at the end of the run. The stage's exit status is the
# command's, so the caller decides whether to go on (make test always does:
# one broken stage must not hide what the others would have found).
#
# STAGE_LANE names the lane the stage ran in (deploy/local/ci.sh runs two at
# once). In a lane the output goes only to the log, and the terminal gets the
# stage's result line, plus the log's last lines when it failed: two lanes'
# output interleaved line by line could not be read.
set -uo pipefail

name=$1
shift
dir=${CI_DIR:-.local/ci}
mkdir -p "$dir"
log=$dir/$name.log

lane=${STAGE_LANE:-}
start=$(date +%s.%N)
if [[ -n $lane ]]; then
  printf '== %s (lane %s) started\n' "$name" "$lane"
  "$@" >"$log" 2>&1
  rc=$?
else
  printf '\n== %s ==\n' "$name"
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
fi
end=$(date +%s.%N)
secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
status=ok
((rc == 0)) || status=FAILED
printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$secs" "$status" "$rc" "${lane:--}" >>"$dir/stages.tsv"
if [[ -n $lane ]] && ((rc != 0)); then
  grep -v '^go: downloading' "$log" | tail -40
fi
printf '== %s: %s in %s s (log: %s)\n' "$name" "$status" "$secs" "$log"
exit "$rc"
