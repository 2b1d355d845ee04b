#!/usr/bin/env bash
# Benchmark analysis (not a test): instructions and simulated cache misses per message of the
# connection-scaling job (4 KiB request/reply, depth 4 per connection, per-thread messengers) at each
# connection count, server and client both under cachegrind. Per-message figures are the difference
# between two runs of N1 and N2 messages (bench.count) divided by N2 - N1, so connection set-up drops
# out. Equal instructions at two counts with more misses: memory stalls; more instructions: work that
# grows with the connections. What the figures showed: docs/benchmarks.md, "Connection scaling".
#
#   tools/bench/connection-cachegrind.sh [BUILD_DIR]   (default build/release, built when missing)
#   COUNTS="16 1024" TRANSPORTS="posix dpdk" SIZE=4K DEPTH=4; N1/N2 messages per run (default
#   the larger of 4,000 and 4 windows (connections x depth), and 3 x N1); KEEP=1 keeps the outputs
#   (cg_annotate DIR/server.dpdk.1024.N2 for the functions); LL=SIZE,WAYS,LINE simulates another
#   last level, e.g. LL=1048576,8,64 for one core's L2 (what per-connection state must fit in)
# dpdk runs over memif in copy mode on plain memory (valgrind cannot follow vhost-user's shared
# hugepages) and busy-polls: its poll loop's idle turns count too. The simulated caches are this
# machine's: D1 48 KiB 12-way, LL 32 MiB 16-way (the L3, which the processes really share). Under
# valgrind 1,024 connections take minutes per run.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
bench=$build/tools/bypass-bench/bypass-bench
counts=${COUNTS:-16 1024}
transports=${TRANSPORTS:-posix dpdk}
size=${SIZE:-4K}
depth=${DEPTH:-4}
command -v valgrind >/dev/null || "$root/tools/setup.sh" bench >&2
if [ ! -x "$bench" ]; then
  echo "connection-cachegrind: building bypass-bench in $build (release)" >&2
  [ -f "$build/build.ninja" ] || meson setup "$build" --buildtype=release >/dev/null
  ninja -C "$build" -j2 tools/bypass-bench/bypass-bench >/dev/null
fi

work=$(mktemp -d /tmp/connection-cachegrind.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ "${KEEP:-0}" = 1 ]; then echo "connection-cachegrind: outputs kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
# The job without its duration: a case ends after bench.count messages instead.
grep -v '^  duration:' "$root/config/examples/default.yaml" >"$work/job.yaml"

# measure TRANSPORT CONNECTIONS MESSAGES: one server and one client under cachegrind; succeeds
# when the client wrote its result.
measure() {
  local t=$1 c=$2 n=$3 name="$1.$2.$3"
  local sets=(-c "$work/job.yaml" --set bench.transports="$t" --set bench.connections="$c" --set bench.iodepth="$depth"
    --set bench.message_size="$size" --set bench.messengers=per-thread --set bench.count="$n" --set bench.warmup=0s
    --set bench.progress=off --set ms.connect_timeout=300s)
  local sock=/run/connection-cachegrind-$$.sock
  [ "$t" = dpdk ] && sets+=(--set bench.dpdk_link=memif --set dpdk.no_huge=yes --set bench.link_socket="$sock")
  local vg=(valgrind --tool=cachegrind --max-threads=$((c + 64)) --I1=32768,8,64 --D1=49152,12,64 --LL="${LL:-33554432,16,64}")
  "${vg[@]}" --cachegrind-out-file="$work/server.$name" "$bench" "${sets[@]}" server >"$work/server.$name.log" 2>&1 &
  local server=$!
  pids=("$server")
  # A memif client needs its server's socket; the server prints its address once its link is up.
  if [ "$t" = dpdk ]; then
    for _ in $(seq 600); do ss -xl | grep -q "$sock" && break; sleep 0.5; done
  fi
  mkfifo "$work/stdin.$name"
  "${vg[@]}" --cachegrind-out-file="$work/client.$name" "$bench" "${sets[@]}" client --server-address-from stdin \
    --result-file "$work/result.$name.json" <"$work/stdin.$name" >"$work/client.$name.log" 2>&1 &
  local client=$!
  pids+=("$client")
  exec 9>"$work/stdin.$name"
  local address=""
  for _ in $(seq 1200); do
    address=$(sed -n 's/^ready \([^ ]*\).*/\1/p' "$work/server.$name.log")
    [ -n "$address" ] && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.5
  done
  [ -n "$address" ] && echo "$address" >&9
  # Bounded: an hour for a run of 1,024 connections on a busy machine.
  for _ in $(seq 7200); do
    [ -f "$work/result.$name.json" ] && break
    kill -0 "$client" 2>/dev/null || break
    sleep 0.5
  done
  kill -INT "$server" 2>/dev/null || true
  wait "$server" || true
  exec 9>&-
  wait "$client" || true
  pids=()
  [ -f "$work/result.$name.json" ] || { tail -3 "$work/client.$name.log" "$work/server.$name.log" >&2; return 1; }
}

: >"$work/runs.txt"
for t in $transports; do
  for c in $counts; do
    window=$((c * depth))
    # Time-driven work (keepalives, timers, a busy-polling side's idle turns) differs between the
    # two runs: the difference must hold many windows for it to stay small beside the messages.
    n1=${N1:-$((4 * window > 4000 ? 4 * window : 4000))}
    n2=${N2:-$((n1 * 3))}
    echo "connection-cachegrind: $t, $c connections, $n1 and $n2 messages" >&2
    if measure "$t" "$c" "$n1" && measure "$t" "$c" "$n2"; then
      echo "$t $c $n1 $n2" >>"$work/runs.txt"
    else
      echo "connection-cachegrind: $t at $c connections failed (its messages are above)" >&2
    fi
  done
done

/usr/bin/python3 - "$work" <<'PY'
import os, sys
work = sys.argv[1]
def summary(path):
    for line in open(path):
        if line.startswith("summary:"):
            return [int(x) for x in line.split()[1:]]
    raise SystemExit(f"{path}: no summary line")
print("\nper message, server + client (cachegrind: Ir instructions; D1, LL simulated misses, reads + writes)")
print(f"{'transport':<9} {'connections':>11} {'Ir':>9} {'D1 misses':>10} {'LL misses':>10}")
for line in open(os.path.join(work, "runs.txt")):
    t, c, n1, n2 = line.split()
    per = [0.0] * 9
    for side in ("server", "client"):
        a, b = summary(f"{work}/{side}.{t}.{c}.{n1}"), summary(f"{work}/{side}.{t}.{c}.{n2}")
        for i in range(9):
            per[i] += (b[i] - a[i]) / (int(n2) - int(n1))
    # Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
    print(f"{t:<9} {c:>11} {per[0]:>9.0f} {per[4] + per[7]:>10.1f} {per[5] + per[8]:>10.1f}")
PY
