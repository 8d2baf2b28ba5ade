#!/usr/bin/env bash
# pgtest-sweep.sh TAG: drops the test databases of one test run, the
# sbtest_<TAG>_* that pkg/pgtest created with PGTEST_RUN=TAG and whose
# cleanups handed them to its background janitor (pkg/pgtest/janitor.go);
# gotest.sh runs it after each tier's go test has exited. Run by hand, it
# cleans up after a run that was killed. Exits non-zero if any is left.
#
# The drops run four at a time: on PostgreSQL 15 each DROP DATABASE waits
# for a checkpoint, and drops waiting at once share one.
set -euo pipefail

tag=${1:?usage: pgtest-sweep.sh TAG}
[[ $tag =~ ^[a-z0-9]{1,16}$ ]] || { echo "pgtest-sweep: TAG must be 1-16 of [a-z0-9], got $tag"; exit 2; }
admin=${TEST_DATABASE_URL:?pgtest-sweep: set TEST_DATABASE_URL (eval "\$(deploy/local/postgres.sh test)")}

left() { psql "$admin" -XAtqc "SELECT datname FROM pg_database WHERE datname LIKE 'sbtest\_${tag}\_%'"; }
# Twice: a drop that found the server full (53300) gets a second chance.
for _ in 1 2; do
  left | xargs -r -P 4 -I{} psql "$admin" -XAtqc 'DROP DATABASE IF EXISTS "{}" WITH (FORCE)' 2>/dev/null || true
done
remaining=$(left)
if [[ -n $remaining ]]; then
  echo "pgtest-sweep: $(wc -l <<<"$remaining") test database(s) of run $tag are left: $(tr '\n' ' ' <<<"$remaining")"
  exit 1
fi
