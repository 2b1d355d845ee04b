#!/usr/bin/env bash
# Benchmark (not a test): how the messenger's rate holds up as connections grow. Runs posix and
# dpdk side by side at each connection count (default 16 64 256 1024; 4 KiB request/reply, queue
# depth 4 on every connection, one client messenger per connection, as issue 25's target states)
# and prints each rate, its ratio to the same transport's rate at the first count, and dpdk/posix.
# Wall-clock rates on a shared machine are noisy: ROUNDS=N repeats the whole sweep, alternating,
# and reports the median of each cell. A run that fails is reported in its cell and the sweep goes
# on; the script fails only when bypass-bench cannot be found or built.
#
#   tools/bench/connection-scaling.sh [BUILD_DIR]   (default build/release, built when missing)
#   COUNTS="16 64 256 1024" DURATION=6s DEPTH=4 SIZE=4K ROUNDS=1 LINK=auto MESSENGERS=per-thread
#   TRANSPORTS="posix dpdk"; SETS="--set tcp.delayed_ack=0s" passes settings on to bypass-bench;
#   KEEP=1 keeps the result files and logs and says where
#   PROFILE=1 records each run's server and client (perf record -e cpu-clock -g, PROFILE_SECONDS=3
#   from 1 s after the server is ready, needs root) and prints per count where the CPU per
#   message goes: messenger (with the bench), the link's copies (what a NIC does by DMA) and the
#   stack (tools/bench/perf_split.py; the last round's recording), both processes together and
#   each on its own (cores it kept busy, its CPU per message): the bottleneck is the process near
#   a full core doing work, and the other's spins (idle polls, TX calls a full ring refused) are
#   waiting for it, not a cost
# For dpdk it prints per message what the stack sent, the polls that found frames, the TX calls a
# full ring refused, and where the data waited (the stack's queue gauges, sampled every 100 ms).
#
# Instructions and simulated cache misses per message at two counts (what separates an algorithm
# that grows with the connection count from memory stalls): tools/bench/connection-cachegrind.sh;
# what they showed: docs/benchmarks.md, "Connection scaling".
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
bench=$build/tools/bypass-bench/bypass-bench
counts=${COUNTS:-16 64 256 1024}
duration=${DURATION:-6s}
depth=${DEPTH:-4}
size=${SIZE:-4K}
rounds=${ROUNDS:-1}
link=${LINK:-auto}
messengers=${MESSENGERS:-per-thread}
transports=${TRANSPORTS:-posix dpdk}
read -r -a extra_sets <<<"${SETS:-}"
profile=${PROFILE:-0}
profile_seconds=${PROFILE_SECONDS:-3}
if [ "$profile" = 1 ]; then
  [ "$(id -u)" -eq 0 ] || { echo "connection-scaling: PROFILE=1 needs root (perf on DPDK processes)" >&2; exit 2; }
  command -v perf >/dev/null || "$root/tools/setup.sh" bench >&2
fi

if [ ! -x "$bench" ]; then
  echo "connection-scaling: building bypass-bench in $build (release)" >&2
  [ -f "$build/build.ninja" ] || meson setup "$build" --buildtype=release >/dev/null
  ninja -C "$build" -j2 tools/bypass-bench/bypass-bench >/dev/null
fi

work=$(mktemp -d /tmp/connection-scaling.XXXXXX)
bench_pid=""
cleanup() {
  [ -n "$bench_pid" ] && kill "$bench_pid" 2>/dev/null && wait "$bench_pid" 2>/dev/null
  if [ "${KEEP:-0}" = 1 ]; then echo "connection-scaling: results kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

# record TRANSPORT OUT: once TRANSPORT's server is ready (and 1 s later, the clients connecting or
# warming up), records the run's processes for $profile_seconds into OUT.TRANSPORT.stacks.
record() {
  local transport=$1 out=$2 waited=0 pids
  until grep -q "^== $transport: server ready" "$out.log" 2>/dev/null; do
    if ! kill -0 "$bench_pid" 2>/dev/null || [ "$waited" -ge 1200 ]; then
      echo "connection-scaling: no $transport server to record" >&2
      return 0
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  sleep 1
  pids=$(pgrep -P "$bench_pid" | paste -sd, -)
  [ -n "$pids" ] || { echo "connection-scaling: no $transport processes to record" >&2; return 0; }
  # Which child is the server and which the client: the subcommand, the first argument after the
  # options (-c FILE, --set KEY=VALUE), so the split can be made per process too.
  local pid arg skip
  : >"$out.$transport.roles"
  for pid in ${pids//,/ }; do
    skip=1
    while IFS= read -r -d '' arg; do
      if [ "$skip" = 1 ]; then skip=0; continue; fi  # argv[0], or an option's value
      case $arg in -c|--set) skip=1 ;; -*) ;; *) echo "$pid $arg" >>"$out.$transport.roles"; break ;; esac
    done <"/proc/$pid/cmdline"
  done
  perf record -F 499 -e cpu-clock --call-graph dwarf -p "$pids" -o "$out.$transport.data" -- sleep "$profile_seconds" \
    >"$out.$transport.perf.log" 2>&1 || { echo "connection-scaling: perf record failed ($out.$transport.perf.log)" >&2; return 0; }
  perf script -i "$out.$transport.data" -F comm,pid,tid,ip,sym,dso --no-inline >"$out.$transport.stacks" 2>/dev/null || true
  rm -f "$out.$transport.data"
}

transport_list=$(echo "$transports" | tr ' ' ',')
for round in $(seq "$rounds"); do
  # Alternate the order of the counts between rounds, so a slow spell of the machine does not
  # always fall on the same count.
  order=$counts
  [ $((round % 2)) = 0 ] && order=$(echo "$counts" | tr ' ' '\n' | tac | tr '\n' ' ')
  for c in $order; do
    out=$work/r$round.c$c
    echo "connection-scaling: round $round/$rounds, $c connections ($transports)" >&2
    # Both transports in one bypass-bench run: the same job, one after the other.
    "$bench" -c "$root/config/examples/default.yaml" --set "bench.transports=[$transport_list]" \
      --set bench.dpdk_link="$link" --set bench.connections="$c" --set bench.iodepth="$depth" \
      --set bench.message_size="$size" --set bench.messengers="$messengers" --set bench.duration="$duration" \
      --set bench.progress=off --set bench.output="$out.json" "${extra_sets[@]}" run >"$out.log" 2>&1 &
    bench_pid=$!
    [ "$profile" = 1 ] && [ "$round" = "$rounds" ] && for t in $transports; do record "$t" "$out"; done
    status=0
    wait "$bench_pid" || status=$?
    bench_pid=""
    if [ "$status" != 0 ]; then
      echo "connection-scaling: the run at $c connections failed (its last lines):" >&2
      tail -5 "$out.log" >&2
    fi
    grep '^== dpdk link:' "$out.log" >&2 || true
  done
done

/usr/bin/python3 - "$work" "$rounds" "$counts" "$transports" "$size" "$depth" "$duration" "$messengers" "$root/tools/bench" <<'PY'
import json, os, statistics, sys

work, rounds, counts, transports = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
size, depth, duration, messengers = sys.argv[5:9]
sys.path.insert(0, sys.argv[9])
from perf_split import SHARES, split, top
rates = {}  # (transport, count) -> [msgs/s per round]
segment_counters = {}  # count -> {side: {counter: total over rounds}}, dpdk only
for r in range(1, rounds + 1):
    for c in counts:
        path = os.path.join(work, f"r{r}.c{c}.json")
        if not os.path.exists(path):
            continue
        try:
            cases = json.load(open(path))["cases"]
        except (ValueError, KeyError):
            continue
        for case in cases:
            rates.setdefault((case["transport"], c), []).append(case["totals"]["messages_per_second"])
            if case["transport"] != "dpdk":
                continue
            for side, groups in case.get("counters", {}).items():
                totals = segment_counters.setdefault(c, {}).setdefault(side, {"messages": 0})
                totals["messages"] += groups.get("msgr", {}).get("msgs_sent", 0)
                for name, value in groups.get("transport", {}).items():
                    totals[name] = totals.get(name, 0) + value

def median(t, c):
    values = rates.get((t, c))
    return statistics.median(values) if values else None

print(f"\nconnection scaling: {size} request/reply, depth {depth} per connection, {messengers} messengers, "
      f"{duration} per run, median of {rounds} round(s); ratio = rate / the same transport's rate at {counts[0]}")
header = f"{'connections':>11}"
for t in transports:
    header += f"  {t + ' msgs/s':>13}  {t + ' ratio':>11}"
if "posix" in transports and "dpdk" in transports:
    header += f"  {'dpdk/posix':>10}"
print(header)
for c in counts:
    line = f"{c:>11}"
    for t in transports:
        rate, first = median(t, c), median(t, counts[0])
        line += f"  {rate:>13.0f}" if rate is not None else f"  {'failed':>13}"
        line += f"  {rate / first:>10.2f}x" if rate is not None and first else f"  {'-':>11}"
    if "posix" in transports and "dpdk" in transports:
        p, d = median("posix", c), median("dpdk", c)
        line += f"  {d / p:>9.2f}x" if p and d else f"  {'-':>10}"
    print(line)

# What the userspace stack sent and received per message (each side's counts over the messages
# that side sent, all rounds together): a figure that grows with the connection count is work the
# protocol adds at scale (ACKs, probes, retransmissions), not a slower path.
if segment_counters:
    rows = [("segments sent", lambda t: t["tcp_segments_sent"]),
            ("segments received", lambda t: t["tcp_segments_received"]),
            ("pure ACKs sent", lambda t: t.get("tcp_pure_acks_sent")),
            ("  by delayed-ACK timer", lambda t: t.get("tcp_delayed_acks_sent")),
            ("  window updates", lambda t: t.get("tcp_window_updates_sent")),
            ("retransmitted segments", lambda t: t["tcp_retransmitted_segments"]),
            ("  loss probes (TLP)", lambda t: t.get("tcp_loss_probes")),
            ("  RTOs", lambda t: t["tcp_timeouts"]),
            ("  fast retransmits", lambda t: t["tcp_fast_retransmits"])]
    print("\ndpdk per message sent (client / server)")
    print(f"{'':>24}" + "".join(f"  {c + ' conns':>20}" for c in counts if c in segment_counters))
    def cell(totals, get):
        try:
            return f"{get(totals) / totals['messages']:.3f}" if totals.get("messages") else "-"
        except (KeyError, TypeError):  # a side that did not report, or an older binary's counters
            return "-"
    def side_row(label, value):
        """One line: value(a side's counter totals) for client / server at each count."""
        line = f"{label:>24}"
        for c in counts:
            if c in segment_counters:
                sides = segment_counters[c]
                line += f"  {value(sides.get('client', {})):>9} / {value(sides.get('server', {})):<8}"
        print(line)
    for label, get in rows:
        side_row(label, lambda t: cell(t, get))
    for label, num, den in (("bytes per segment sent", "port_tx_bytes", "tcp_segments_sent"),
                            ("frames per RX burst", "port_rx_packets", "rx_bursts"),
                            ("frames per TX burst", "port_tx_packets", "tx_bursts")):
        side_row(label, lambda t: f"{t[num] / t[den]:.1f}" if t.get(den) else "-")
    # A poll that found no frame, and a TX call a full ring refused, are spins: waiting for the
    # peer, a cost only when this process is the one the other waits for.
    for label, num, den in (("polls that found frames", "rx_bursts", "polls"),
                            ("TX calls a full ring refused", "tx_refused_bursts", "tx_bursts")):
        side_row(label, lambda t: f"{100 * t[num] / t[den]:.1f} %" if t.get(den) and num in t else "-")
    # Where the data waits (QueueGauges: sampled every 100 ms, means over the run).
    gauges = [("TCP unsent KiB", "queue_unsent_bytes", 1024), ("TCP unacked KiB", "queue_unacknowledged_bytes", 1024),
              ("TCP unread KiB", "queue_unread_bytes", 1024), ("TX backlog frames", "queue_tx_backlog_frames", 1),
              ("mbufs out of the pool", "queue_mbufs_in_use", 1), ("RX ring frames", "queue_rx_ring_frames", 1)]
    if any("queue_samples" in side for sides in segment_counters.values() for side in sides.values()):
        print("\ndpdk: where the data waits, mean of samples every 100 ms (client / server)")
        print(f"{'':>24}" + "".join(f"  {c + ' conns':>20}" for c in counts if c in segment_counters))
        for label, key, unit in gauges:
            den = "queue_rx_ring_samples" if key == "queue_rx_ring_frames" else "queue_samples"
            side_row(label, lambda t: f"{t[key] / t[den] / unit:.0f}" if t.get(den) else "-")

# PROFILE=1: where each count's CPU per message went (the last round's recordings).
for t in transports:
    splits = {}
    for c in counts:
        stacks, result = os.path.join(work, f"r{rounds}.c{c}.{t}.stacks"), os.path.join(work, f"r{rounds}.c{c}.json")
        if os.path.exists(stacks) and os.path.exists(result):
            try:
                splits[c] = split(stacks, result, t)
            except (ValueError, KeyError, StopIteration) as e:
                print(f"connection-scaling: no split of {t} at {c} connections: {e}")
    if not splits:
        continue
    print(f"\n{t}: CPU per message (both processes, us; busy-polling counts idle polls) and its shares")
    print(f"{'connections':>11}  {'total':>7}" + "".join(f"  {k:>17}" for k in SHARES))
    for c, s in splits.items():
        print(f"{c:>11}  {s['cpu_us']:>7.2f}" + "".join(f"  {s['us'][k]:>7.2f} ({s['share'][k]:4.1f} %)" for k in SHARES))
    for c, s in splits.items():
        print(f"  top of stack at {c}: {top(s, 'stack', 5)}")
        print(f"  top of copies at {c}: {top(s, 'copies', 3)}")
    # Per process: the one near a full core doing work is the bottleneck; the other's spins (idle
    # polls, a refused TX ring) only wait for it.
    print(f"\n{t}: per process, cores busy and CPU per message (us) with its shares")
    print(f"{'connections':>11}  {'side':>6}  {'cores':>5}  {'total':>7}" + "".join(f"  {k:>17}" for k in SHARES))
    for c in splits:
        stacks = os.path.join(work, f"r{rounds}.c{c}.{t}.stacks")
        roles = {}
        try:
            for line in open(stacks[:-len(".stacks")] + ".roles"):
                pid, role = line.split()
                roles.setdefault(role, set()).add(int(pid))
        except (OSError, ValueError):
            continue
        for side in ("client", "server"):
            try:
                s = split(stacks, os.path.join(work, f"r{rounds}.c{c}.json"), t, side, roles.get(side, set()))
            except (ValueError, KeyError, StopIteration) as e:
                print(f"connection-scaling: no {side} split of {t} at {c} connections: {e}")
                continue
            print(f"{c:>11}  {side:>6}  {s['busy']:>5.2f}  {s['cpu_us']:>7.2f}" +
                  "".join(f"  {s['us'][k]:>7.2f} ({s['share'][k]:4.1f} %)" for k in SHARES))
            print(f"{'':>13}top: {top(s, 'stack', 3)}; {top(s, 'messenger', 2)}")
PY
