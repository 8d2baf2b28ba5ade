#!/usr/bin/env bash
# postgres.sh makes sure a PostgreSQL server is reachable for `make run` and
# `make test`, and prints shell exports for it on stdout:
#   export DATABASE_URL=…        (the project's database, created if missing)
#   export TEST_DATABASE_URL=…   (maintenance database tests clone from)
# Usage: eval "$(deploy/local/postgres.sh)"
#        eval "$(deploy/local/postgres.sh test)"       (TEST_DATABASE_URL only)
#        deploy/local/postgres.sh stop|crash-restart   (the private cluster only)
#
# `test` is for the test tiers: TEST_DATABASE_URL when it is set (any
# server, a shared one included; it must answer), otherwise the machine's
# test cluster (see ensure_test_cluster), started when it is not running.
#
# In order:
#  1. DATABASE_URL, when set and answering, is used as is.
#  2. 127.0.0.1:5432, when it answers, is used.
#  3. Otherwise a private cluster is started from the installed PostgreSQL
#     binaries, in $SWITCHBOARD_PG_DATA (default .local/postgres, git-ignored),
#     on 127.0.0.1:$SWITCHBOARD_PG_PORT (default 54329).
#     SWITCHBOARD_PG_PRIVATE=1 goes straight to this step (tests that restart
#     Postgres use it with their own port and data folder).
#  4. Otherwise, when root on Debian, the postgresql package is installed and
#     step 3 runs.
# It never changes a server it did not start, except to create the project's
# databases (switchboard).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
port=${SWITCHBOARD_PG_PORT:-54329}
data=${SWITCHBOARD_PG_DATA:-$repo/.local/postgres}
dbname=switchboard
log() { printf 'postgres.sh: %s\n' "$*" >&2; }

ensure_client() {
  command -v psql >/dev/null 2>&1 && return 0
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    log "installing postgresql-client"
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-client >&2
    return 0
  fi
  log "psql is missing; install the PostgreSQL client"
  exit 1
}

answers() { psql "$1" -XAtqc 'SELECT 1' >/dev/null 2>&1; }

# url_with_db URL DB: URL with its database path replaced.
url_with_db() {
  local url=$1 db=$2 query=""
  if [[ $url == *\?* ]]; then query="?${url#*\?}"; url=${url%%\?*}; fi
  printf '%s/%s%s' "${url%/*}" "$db" "$query"
}

ensure_database() { # admin-url
  local admin=$1
  if [[ $(psql "$admin" -XAtqc "SELECT 1 FROM pg_database WHERE datname = '$dbname'") != 1 ]]; then
    log "creating database $dbname"
    psql "$admin" -XAtqc "CREATE DATABASE $dbname" >/dev/null
  fi
}

emit() { # admin-url
  ensure_database "$1"
  printf 'export DATABASE_URL=%q\n' "$(url_with_db "$1" "$dbname")"
  printf 'export TEST_DATABASE_URL=%q\n' "$1"
}

pg_bindir() {
  local d
  if command -v pg_config >/dev/null 2>&1; then
    d=$(pg_config --bindir)
    [[ -x $d/initdb ]] && { echo "$d"; return 0; }
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [[ -x $d/initdb ]] && { echo "$d"; return 0; }
  done
  return 1
}

# as_owner: the command prefix that runs the private cluster's binaries.
# PostgreSQL refuses to run as root, so root runs them as the postgres system
# user, from a folder that user can reach.
as=()
if [[ $(id -u) -eq 0 ]]; then
  id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/false postgres
  as=(runuser -u postgres --)
  if ! "${as[@]}" test -x "$(dirname "$data")"; then data=/var/tmp/switchboard-postgres-$port; fi
fi

pg_ctl() { "${as[@]}" "$(pg_bindir)/pg_ctl" -D "$data" "$@"; }

# start_private BIN [SERVER OPTION...]: initialise $data when empty and start
# it on $port.
start_private() {
  local bin=$1
  shift
  local opts="-h 127.0.0.1 -p $port -k $data -c max_connections=200"
  (($#)) && opts="$opts $*"
  mkdir -p "$data"
  [[ ${#as[@]} -eq 0 ]] || chown postgres "$data"
  chmod 700 "$data"
  if [[ ! -f $data/PG_VERSION ]]; then
    log "initialising a private cluster in $data"
    "${as[@]}" "$bin/initdb" -D "$data" -U postgres --auth=trust --no-sync -E UTF8 >/dev/null
  fi
  if ! pg_ctl status >/dev/null 2>&1; then
    log "starting the private cluster on 127.0.0.1:$port"
    pg_ctl -l "$data/server.log" -w -t 60 -o "$opts" start >/dev/null
  fi
}

# server_binaries prints the installed PostgreSQL's bin folder, installing
# the postgresql package first when root on Debian and there is none.
server_binaries() {
  local bin
  if bin=$(pg_bindir); then echo "$bin"; return 0; fi
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    log "no PostgreSQL found: installing the postgresql package"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    pg_bindir && return 0
    log "postgresql installed but initdb not found"
    return 1
  fi
  log "no PostgreSQL reachable and none installed; install postgresql or set DATABASE_URL"
  return 1
}

# test_cluster_home prints where the test cluster's folder goes.
test_cluster_home() {
  local free
  if [[ $(stat -f -c %T /dev/shm 2>/dev/null) == tmpfs && -w /dev/shm ]]; then
    free=$(df -k --output=avail /dev/shm 2>/dev/null | tail -n 1)
    if ((${free:-0} >= 2 * 1024 * 1024)); then echo /dev/shm; return; fi
  fi
  echo /var/tmp
}

# ensure_test_cluster starts the machine's test cluster, on 127.0.0.1:54330
# ($SWITCHBOARD_TEST_PG_PORT) in $SWITCHBOARD_TEST_PG_DATA, and prints its
# admin URL. One cluster serves every checkout on the machine, so the
# migrated template pkg/pgtest keeps there outlives a fresh clone.
#
# It holds nothing but databases tests clone and drop, so it runs without
# durability: no fsync, no synchronous commit, no full-page writes, minimal
# WAL. Measured on the 2-core CI machine, 20 clones of the migrated template
# and their drops took 2.5-2.7 s of CPU on the shared server and 0.86 s here
# (pkg/pgtest clones with FILE_COPY where fsync is off). max_connections
# stays at a shared server's usual 100, so the suite's connection bounds
# (README, "Development") are still held to it.
#
# Without fsync a machine crash can leave the cluster unable to start: then
# it is wiped and initialised anew (the next test run rebuilds the template).
#
# Its folder is in memory (/dev/shm) when that is a tmpfs with 2 GiB free
# (it holds ~100 MB), else in /var/tmp. On disk, its unsynced writes reach
# the disk when the kernel chooses, and they slowed what must sync: measured
# with both cores busy (yes x2), the chaos suite's Postgres crash-restart
# (its recovery fsyncs the data folder) during the integration tier took
# 5.9-6.0 s with the test cluster on disk and 3.2-3.4 s in memory, and the
# tier itself 292 s against 222 s.
ensure_test_cluster() {
  local bin
  bin=$(server_binaries) || exit 1
  port=${SWITCHBOARD_TEST_PG_PORT:-54330}
  data=${SWITCHBOARD_TEST_PG_DATA:-$(test_cluster_home)/switchboard-testpg-$port}
  local admin="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
  local opts=(-c max_connections=100 -c fsync=off -c synchronous_commit=off
    -c full_page_writes=off -c wal_level=minimal -c max_wal_senders=0)
  mkdir -p "$(dirname "$data")"
  # Two checkouts starting their tests at once take turns. The server must
  # not inherit the lock's descriptor (it would hold the lock while it runs),
  # hence 9>&- on every start.
  exec 9>"$data.lock"
  flock 9
  if ! answers "$admin"; then
    if ! (start_private "$bin" "${opts[@]}") 9>&- || ! answers "$admin"; then
      log "the test cluster in $data did not start; its log ends:"
      tail -n 5 "$data/server.log" >&2 2>/dev/null || true
      log "wiping it and initialising a new one"
      pg_ctl -m immediate -w stop >/dev/null 2>&1 || true
      rm -rf "$data"
      start_private "$bin" "${opts[@]}" 9>&-
      answers "$admin" || { log "the test cluster did not answer on port $port"; exit 1; }
    fi
  fi
  exec 9>&-
  echo "$admin"
}

case ${1:-ensure} in
ensure) ;;
test)
  ensure_client
  if [[ -n ${TEST_DATABASE_URL:-} ]]; then
    answers "$TEST_DATABASE_URL" || { log "TEST_DATABASE_URL is set but does not answer (unset it to use the test cluster)"; exit 1; }
    admin=$TEST_DATABASE_URL
  else
    admin=$(ensure_test_cluster)
  fi
  printf 'export TEST_DATABASE_URL=%q\n' "$admin"
  exit 0
  ;;
stop)
  pg_ctl status >/dev/null 2>&1 && pg_ctl -m fast -w stop >/dev/null
  exit 0
  ;;
crash-restart)
  # Immediate mode skips the shutdown checkpoint, so the restart runs crash
  # recovery — which empties every UNLOGGED table, as a real crash would.
  pg_ctl -m immediate -w stop >/dev/null
  pg_ctl -l "$data/server.log" -w -t 60 \
    -o "-h 127.0.0.1 -p $port -k $data -c max_connections=200" start >/dev/null
  exit 0
  ;;
*) log "usage: postgres.sh [ensure|test|stop|crash-restart]"; exit 2 ;;
esac

ensure_client

if [[ -n ${DATABASE_URL:-} ]]; then
  if answers "$DATABASE_URL"; then
    printf 'export DATABASE_URL=%q\n' "$DATABASE_URL"
    printf 'export TEST_DATABASE_URL=%q\n' "${TEST_DATABASE_URL:-$DATABASE_URL}"
    exit 0
  fi
  # The named database may not exist yet: create it on that server.
  admin=$(url_with_db "$DATABASE_URL" postgres)
  if answers "$admin"; then
    db=${DATABASE_URL%%\?*}; db=${db##*/}
    if [[ $db =~ ^[a-z_][a-z0-9_]*$ ]]; then
      dbname=$db
      emit "$admin"
      exit 0
    fi
  fi
  log "DATABASE_URL is set but does not answer"
  exit 1
fi

# SWITCHBOARD_PG_PRIVATE=1 skips the shared server (tests that restart
# Postgres need a cluster of their own).
for user in postgres "$(id -un)"; do
  [[ ${SWITCHBOARD_PG_PRIVATE:-0} == 1 ]] && break
  admin="postgres://$user@127.0.0.1:5432/postgres?sslmode=disable"
  if answers "$admin"; then
    emit "$admin"
    exit 0
  fi
done

admin="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
if answers "$admin"; then
  emit "$admin"
  exit 0
fi

bin=$(server_binaries) || exit 1
start_private "$bin"
answers "$admin" || { log "private cluster did not answer on port $port"; exit 1; }
emit "$admin"
