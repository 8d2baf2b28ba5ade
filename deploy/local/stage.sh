#!/usr/bin/env bash
# stage.sh NAME COMMAND...: runs one stage of `make test` and records it.
#
# The command's output goes to the terminal and, in full, to
# $CI_DIR/NAME.log (default .local/ci, git-ignored); its wall time and result
# are appended to $CI_DIR/stages.tsv, which deploy/local/ci-report.sh turns
# into the table printed at the end of the run. The stage's exit status is the
# command's, so the caller decides whether to go on (make test always does:
# one broken stage must not hide what the others would have found).
set -uo pipefail

name=$1
shift
dir=${CI_DIR:-.local/ci}
mkdir -p "$dir"
log=$dir/$name.log

printf '\n== %s ==\n' "$name"
start=$(date +%s.%N)
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
end=$(date +%s.%N)
secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
status=ok
((rc == 0)) || status=FAILED
printf '%s\t%s\t%s\t%s\n' "$name" "$secs" "$status" "$rc" >>"$dir/stages.tsv"
printf '== %s: %s in %s s (log: %s)\n' "$name" "$status" "$secs" "$log"
exit "$rc"
