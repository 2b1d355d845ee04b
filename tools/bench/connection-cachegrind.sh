#!/usr/bin/env bash
# Benchmark analysis (not a test): instructions and simulated cache misses per message of the
# connection-scaling job (4 KiB request/reply, depth 4 per connection, per-thread messengers) at each
# connection count, server and client both under valgrind's cache simulation (callgrind
# --cache-sim=yes: cachegrind's simulator, plus call counts). Per-message figures are the difference
# between two runs of N1 and N2 messages (bench.count) divided by the difference in round trips the
# client made (its calls to LoadGenerator::send_next), so connection set-up drops out; not by
# N2 - N1: bench.count counts measured round trips only, and the unmeasured ones before measuring
# starts (the windows filling while the stats request crosses: seconds under valgrind) differed
# between the two runs by up to half the difference. Equal instructions at two counts with more
# misses: memory stalls; more instructions: work that grows with the connections. What the figures
# showed: docs/benchmarks.md, "Connection scaling".
#
#   tools/bench/connection-cachegrind.sh [BUILD_DIR]   (default build/release, built when missing)
#   COUNTS="16 1024" TRANSPORTS="posix dpdk" SIZE=4K DEPTH=4; N1/N2 messages per run (default
#   the larger of 4,000 and 4 windows (connections x depth), and 3 x N1); KEEP=1 keeps the outputs
#   (callgrind_annotate DIR/server.dpdk.1024.N2 for the functions); LL=SIZE,WAYS,LINE simulates another
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
  local vg=(valgrind --tool=callgrind --cache-sim=yes --max-threads=$((c + 64)) --I1=32768,8,64 --D1=49152,12,64 --LL="${LL:-33554432,16,64}")
  "${vg[@]}" --callgrind-out-file="$work/server.$name" "$bench" "${sets[@]}" server >"$work/server.$name.log" 2>&1 &
  local server=$!
  pids=("$server")
  # A memif client needs its server's socket; the server prints its address once its link is up.
  if [ "$t" = dpdk ]; then
    for _ in $(seq 600); do ss -xl | grep -q "$sock" && break; sleep 0.5; done
  fi
  mkfifo "$work/stdin.$name"
  "${vg[@]}" --callgrind-out-file="$work/client.$name" "$bench" "${sets[@]}" client --server-address-from stdin \
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
import os, re, sys
work = sys.argv[1]
def totals(path):
    """{event: count} from a callgrind output file."""
    events = None
    for line in open(path):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("totals:"):
            return dict(zip(events, (int(x) for x in line.split()[1:])))
    raise SystemExit(f"{path}: no totals line")
def round_trips(path):
    """Calls to LoadGenerator::send_next in a client's callgrind output (one per round trip)."""
    names, target, calls = {}, None, 0
    for line in open(path):
        if line.startswith("cfn=") or line.startswith("fn="):
            m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line.rstrip("\n"))
            if m and m.group(2):
                names[m.group(1)] = m.group(2)
            target = (names.get(m.group(1), "") if m else "") if line.startswith("cfn=") else None
        elif line.startswith("calls=") and target and "LoadGenerator::send_next(" in target:
            calls += int(line.split()[0][len("calls="):])
    return calls
print("\nper round trip, server + client (Ir instructions; D1, LL simulated misses, reads + writes)")
print(f"{'transport':<9} {'connections':>11} {'Ir':>9} {'D1 misses':>10} {'LL misses':>10} {'round trips':>12}")
for line in open(os.path.join(work, "runs.txt")):
    t, c, n1, n2 = line.split()
    trips = round_trips(f"{work}/client.{t}.{c}.{n2}") - round_trips(f"{work}/client.{t}.{c}.{n1}")
    if trips <= 0:
        print(f"{t:<9} {c:>11} (no round trips counted)")
        continue
    per = {}
    for side in ("server", "client"):
        a, b = totals(f"{work}/{side}.{t}.{c}.{n1}"), totals(f"{work}/{side}.{t}.{c}.{n2}")
        for k in b:
            per[k] = per.get(k, 0.0) + (b[k] - a.get(k, 0)) / trips
    print(f"{t:<9} {c:>11} {per['Ir']:>9.0f} {per['D1mr'] + per['D1mw']:>10.1f} {per['DLmr'] + per['DLmw']:>10.1f}"
          f" {trips:>12} ({trips / (int(n2) - int(n1)):.2f}x counted)")
PY
