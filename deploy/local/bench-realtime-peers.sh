# shellcheck shell=bash disable=SC2154,SC2034
# (SC2154, SC2034: the variables are the sourcing script's, both ways.)
# bench-realtime-peers.sh: the peer side of deploy/local/bench-realtime.sh,
# sourced by it (it reads that script's variables: nats, nats_url, url,
# work, secs, duration, size, rate, publishers, subscribers, msgs,
# nats_pid): CPU accounting from /proc, the NATS core runs and the floor.
# Not a command of its own.

# cpu_of PID...: the CPU-seconds (utime+stime, /proc/PID/stat fields 14 and
# 15, counted after the ")" that ends the command name) those processes used
# so far; one that is gone counts 0, so callers sample live processes only.
cpu_of() {
  local p f a t=0
  for p in "$@"; do
    f=$(sed -n 's/^.*) //p' "/proc/$p/stat" 2>/dev/null) || continue
    read -r -a a <<<"$f"
    ((${#a[@]} > 12)) && t=$((t + a[11] + a[12]))
  done
  awk -v t="$t" -v hz="$(getconf CLK_TCK 2>/dev/null || echo 100)" 'BEGIN { printf "%.3f", t / hz }'
}
# children_cpu VAR: sets VAR to the CPU-seconds of this shell's children that
# have ended and been waited for, with their own descendants (the second line
# of bash's `times`, which must run in this shell, not in a $(…) subshell).
children_cpu() {
  times >"$work/times"
  printf -v "$1" '%s' "$(awk 'NR == 2 {
    s = 0
    for (i = 1; i <= 2; i++) { split($i, p, "m"); sub(/s$/, "", p[2]); s += p[1] * 60 + p[2] }
    printf "%.3f", s
  }' "$work/times")"
}
sub_cpu() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
# postgres_cpu VAR: sets VAR to the CPU-seconds the local `postgres`
# processes used since the last call (the first call starts from each one's
# birth): backends the nodes' pools open meanwhile count from their start,
# ones that end meanwhile are missed (the nodes keep theirs open).
declare -A pg_seen=()
postgres_cpu() {
  local p now total=0
  for p in $(pgrep -x postgres || true); do
    now=$(cpu_of "$p")
    total=$(awk -v t="$total" -v n="$now" -v b="${pg_seen[$p]:-0}" 'BEGIN { printf "%.3f", t + n - b }')
    pg_seen[$p]=$now
  done
  printf -v "$1" '%s' "$total"
}
# nats_phase TAG [COMMAND...]: one NATS core run, its tools' output in
# $work/TAG-{sub,pub,lat}.out, and COMMAND (when given) running alongside the
# publishers from their start. Sets nats_server_cpu and nats_clients_cpu
# (the latency probe left out) and returns 1 when a subscriber missed
# messages (core NATS drops for slow consumers).
nats_phase() {
  local tag=$1 sub lat side='' server0 kids0 kids1 rc=0
  shift
  timeout $((${secs%.*} + 120)) "$nats" -s "$nats_url" bench sub "bench.realtime.$$.$tag" --clients "$subscribers" --msgs "$msgs" \
    --size "$size" --no-progress >"$work/$tag-sub.out" 2>&1 &
  sub=$!
  # Until every subscriber is subscribed (the tool prints a line per client as it starts).
  for _ in $(seq 100); do
    (($(grep -c 'Starting Core NATS subscriber,' "$work/$tag-sub.out" || true) >= subscribers)) && break
    sleep 0.1
  done
  sleep 0.5
  server0=$(cpu_of ${nats_pid:+"$nats_pid"})
  children_cpu kids0
  # In a subshell whose `times` says what the latency probe alone used (it
  # is left out of NATS's CPU: our bench's timing is in ours, but this is a
  # second publisher and subscriber pair that we do not have).
  ("$nats" -s "$nats_url" latency --server-b "$nats_url" --size "$size" --rate "$rate" --duration "$duration" >"$work/$tag-lat.out" 2>&1
    rc=$?
    children_cpu lat_cpu
    echo "$lat_cpu" >"$work/$tag-lat.cpu"
    exit $rc) &
  lat=$!
  if (($#)); then
    "$@" &
    side=$!
  fi
  "$nats" -s "$nats_url" bench pub "bench.realtime.$$.$tag" --clients "$publishers" --msgs "$msgs" --throughput "$rate" \
    --size "$size" --no-progress >"$work/$tag-pub.out" 2>&1
  wait "$lat" || { echo "nats latency failed:" >&2; cat "$work/$tag-lat.out" >&2; exit 1; }
  [[ -z $side ]] || wait "$side" || { echo "$1 failed; its output:" >&2; cat "$work/$tag-side.out" >&2; exit 1; }
  wait "$sub" || rc=1
  nats_server_cpu=$(sub_cpu "$(cpu_of ${nats_pid:+"$nats_pid"})" "$server0")
  children_cpu kids1
  nats_clients_cpu=$(sub_cpu "$(sub_cpu "$kids1" "$kids0")" "$(cat "$work/$tag-lat.cpu")")
  return $rc
}
# "… 99:       426µs" → 0.426 (ms).
nats_ms() {
  awk -v p="$1:" '$2 == p {
    v = $3; n = v; sub(/[^0-9.]+$/, "", n); u = substr(v, length(n) + 1)
    f = (u == "ns") ? 1e-6 : (u == "µs" || u == "us") ? 1e-3 : (u == "ms") ? 1 : (u == "s") ? 1000 : -1
    if (f < 0) exit 1
    printf "%.3f", n * f; exit
  }' "$work/${2:-nats}-lat.out"
}
# floor_phase (durable runs): the least work our run stands for, done by
# the peers at once on the same machine: NATS core's fan-out (nats_phase),
# and pgbench storing the same events (the last one the bench published)
# into realtime_events with the node's statement (EventInsert: the
# publishers' advisory lock, then the insert), one event per transaction (a
# node merges concurrent publishes; here each commits alone), --rate per
# second paced, one connection per publisher. No reads, notifications,
# HTTP/2 or three nodes: where the floor's latencies miss the goal, so must
# we on that machine. Sets floor_nats_p99 and floor_insert_p99 (ms).
floor_phase() {
  read -r f_human f_channel f_kind f_by <<<"$(psql "$url" -XAtF ' ' -c \
    "SELECT human_id, channel, kind, published_by FROM realtime_events WHERE kind = 'bench' ORDER BY id DESC LIMIT 1")"
  f_payload=$(psql "$url" -XAtc "SELECT payload::text FROM realtime_events WHERE kind = 'bench' ORDER BY id DESC LIMIT 1")
  cat >"$work/floor.sql" <<'SQL'
WITH l AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(21314, 21076) AS locked)
INSERT INTO realtime_events (human_id, channel, kind, payload, published_by)
SELECT :human::uuid, :channel, :kind, :payload::jsonb, :by FROM l
RETURNING id, created_at;
SQL
  # shellcheck disable=SC2317 # run by nats_phase
  floor_inserts() {
    pgbench -n -M prepared -c "$publishers" -j "$((publishers < 2 ? publishers : 2))" -R "$rate" \
      -T "$(awk -v s="$secs" 'BEGIN { print (s == int(s) ? s : int(s) + 1) }')" -l --log-prefix="$work/floorlog" \
      -D "human=$f_human" -D "channel=$f_channel" -D "kind=$f_kind" -D "payload=$f_payload" -D "by=$f_by" \
      -f "$work/floor.sql" "$url" >"$work/floor-side.out" 2>&1
  }
  read -r _ u0 n0 s0 i0 w0 q0 sq0 _ </proc/stat
  echo "floor: the same NATS core run with pgbench inserting the bench's events into realtime_events alongside (one per commit, $publishers clients, $rate/s)" >&2
  nats_phase floor floor_inserts || echo "floor: NATS dropped messages for slow consumers (a subscriber missed some)" >&2
  read -r _ u1 n1 s1 i1 w1 q1 sq1 _ </proc/stat
  floor_idle=$(awk -v b=$((u1 + n1 + s1 + i1 + w1 + q1 + sq1 - u0 - n0 - s0 - i0 - w0 - q0 - sq0)) -v i=$((i1 + w1 - i0 - w0)) 'BEGIN { printf "%.0f", (b > 0 ? 100 * i / b : 0) }')
  # pgbench's log: one line per transaction, its latency (µs) third and,
  # with --rate, how late it started seventh: the insert's own time is the
  # difference (as our bench times a Publish from when it is sent).
  floor_ins=$(cat "$work"/floorlog.* | awk '{ print $3 - $7 }' | sort -n | awk '{ v[NR] = $1 } END {
    if (NR == 0) exit 1
    p50 = v[int((NR - 1) * 0.50) + 1]; p99 = v[int((NR - 1) * 0.99) + 1]
    printf "%.3f %.3f %d", p50 / 1000, p99 / 1000, NR }') || { echo "pgbench logged no transactions:" >&2; cat "$work/floor-side.out" >&2; exit 1; }
  read -r floor_insert_p50 floor_insert_p99 floor_n <<<"$floor_ins"
  floor_nats_p50=$(nats_ms 50 floor) floor_nats_p99=$(nats_ms 99 floor)
  floor_tps=$(sed -n 's/^tps = \([0-9]*\).*/\1/p' "$work/floor-side.out")
  echo "floor: NATS core p50 $floor_nats_p50 ms, p99 $floor_nats_p99 ms; pgbench $floor_n inserts ($floor_tps/s of $rate/s asked), each p50 $floor_insert_p50 ms, p99 $floor_insert_p99 ms; CPU idle $floor_idle %" >&2
}
