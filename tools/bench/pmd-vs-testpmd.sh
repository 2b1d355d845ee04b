#!/usr/bin/env bash
# Benchmark (not a test): bypass-pmd `fwd txonly` -> `fwd rxonly` over a memif pair, next to
# dpdk-testpmd run the same way, at 64 B and 1500 B. Each process gets its own CPU (receiver on
# CPU $RX_CPU, sender on CPU $TX_CPU). The rate is the median of the receiver's per-second rx
# figures, steady seconds only. Both tools use the same burst ($BURST, default 32). Goal: bypass-pmd >= 0.9x testpmd.
#
#   tools/bench/pmd-vs-testpmd.sh [BUILD_DIR]     (default build/release; needs root, dpdk-testpmd
#                                                 from Debian's dpdk-dev for the comparison column)
#   SECONDS_PER_RUN=8 SIZES="64 1500" RX_CPU=0 TX_CPU=1 to change the run; KEEP_WORK=1 keeps
#   every process's output for a look afterwards
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
tool=$build/tools/bypass-pmd/bypass-pmd
seconds=${SECONDS_PER_RUN:-8}
sizes=${SIZES:-64 1500}
burst=${BURST:-32}  # both tools, both sides (32: the default of each)
rx_cpu=${RX_CPU:-0}
tx_cpu=${TX_CPU:-1}
testpmd=$(command -v dpdk-testpmd || true)
work=$(mktemp -d /tmp/pmd-bench.XXXXXX)
pids=()

cleanup() {
  for pid in "${pids[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
  sleep 0.5
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  if [ -n "${KEEP_WORK:-}" ]; then echo "outputs kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

if [ ! -x "$tool" ]; then
  echo "building bypass-pmd in $build (release)" >&2
  [ -f "$build/build.ninja" ] || meson setup "$build" --buildtype=release >/dev/null
  ninja -C "$build" -j2 tools/bypass-pmd/bypass-pmd >/dev/null
fi

# Waits (at most 20 s) until a memif server listens on abstract socket $1: a client that starts
# first fails at once, and on a busy machine EAL start-up takes longer than any fixed sleep.
wait_for_server() {
  for _ in $(seq 200); do
    grep -q " @$1\$" /proc/net/unix && return 0
    sleep 0.1
  done
  echo "no memif server on @$1 after 20 s" >&2
  return 1
}

# Shows why a run measured nothing instead of printing a bare 0.00.
explain_zero() {  # rate label files...
  local rate=$1 label=$2
  shift 2
  if [ "$rate" = "0.00" ]; then
    echo "$label measured no traffic; last lines of its output:" >&2
    for f in "$@"; do echo "== $(basename "$f")" >&2; tail -n 4 "$f" >&2; done
  fi
}

# Median of the numbers on stdin, skipping the first two (ramp-up) and zeros.
median() {
  /usr/bin/python3 -c '
import sys, statistics
v = [float(x) for x in sys.stdin.read().split()][2:]
v = [x for x in v if x > 0]
print(f"{statistics.median(v):.2f}" if v else "0.00")'
}

# The sender lingers, idle, until the receiver has left: DPDK 22.11's memif unmaps its rings on a
# peer's disconnect even while this side is inside a burst, which crashes whoever still polls.
run_bypass() {  # size -> Mpps
  local size=$1 sock=/run/pmd-bench-bypass-$$.sock
  timeout $((seconds + 30)) "$tool" --set ms.workers=1 --set ms.cpus="$rx_cpu" --set dpdk.link_wait=20s \
    --vdev "net_memif0,role=server,socket=$sock" fwd rxonly --burst "$burst" --duration $((seconds + 3))s \
    >"$work/bypass-rx.txt" 2>"$work/bypass-rx.err" &
  local rx=$!
  pids+=("$rx")
  wait_for_server "$sock" || true
  timeout $((seconds + 30)) "$tool" --set ms.workers=1 --set ms.cpus="$tx_cpu" --set dpdk.link_wait=20s \
    --vdev "net_memif0,role=client,socket=$sock" fwd txonly --burst "$burst" --size "$size" --duration "${seconds}s" --linger 30s \
    >"$work/bypass-tx.txt" 2>"$work/bypass-tx.err" || { echo "bypass-pmd txonly failed:" >&2; tail -3 "$work/bypass-tx.err" >&2; }
  wait "$rx" || { echo "bypass-pmd rxonly failed (exit $?):" >&2; tail -3 "$work/bypass-rx.err" >&2; }
  local rate
  rate=$(grep -E '^port 0: rx' "$work/bypass-rx.txt" | awk '{print $4}' | median)
  explain_zero "$rate" "bypass-pmd ${size}B" "$work"/bypass-{rx,tx}.{txt,err}
  echo "$rate"
}

# testpmd sizes its pool for 32 ports by default (~350 MB of hugepages per process); give it the
# pool bypass-pmd uses (dpdk.mbufs, 16383 by default) so both compete on equal terms and fit.
testpmd_mbufs=${TESTPMD_MBUFS:-16384}

run_testpmd() {  # size -> Mpps (testpmd needs two lcores: they share the process's CPU)
  local size=$1 sock=/run/pmd-bench-testpmd-$$.sock
  [ -n "$testpmd" ] || { echo "n/a"; return; }
  timeout -s INT $((seconds + 4)) "$testpmd" --lcores="0@$rx_cpu,1@$rx_cpu" --in-memory --no-pci \
    --vdev "net_memif0,role=server,socket=$sock" -- --forward-mode=rxonly --burst="$burst" --stats-period=1 --total-num-mbufs="$testpmd_mbufs" \
    </dev/null >"$work/testpmd-rx.txt" 2>&1 &
  local rx=$!
  pids+=("$rx")
  wait_for_server "$sock" || true
  timeout -s INT $((seconds + 1)) "$testpmd" --lcores="0@$tx_cpu,1@$tx_cpu" --in-memory --no-pci \
    --vdev "net_memif0,role=client,socket=$sock" -- --forward-mode=txonly --txpkts="$size" --burst="$burst" --stats-period=1 --total-num-mbufs="$testpmd_mbufs" \
    </dev/null >"$work/testpmd-tx.txt" 2>&1 || true
  wait "$rx" || true
  local rate
  rate=$(grep -E 'Rx-pps:' "$work/testpmd-rx.txt" | awk '{print $2 / 1e6}' | median)
  explain_zero "$rate" "dpdk-testpmd ${size}B" "$work"/testpmd-{rx,tx}.txt
  echo "$rate"
}

# A memif pair settles into one of two steady rates (at 64 B about 6 or about 20+ Mpps, for
# testpmd and bypass-pmd alike), so one run per tool compares luck. Each tool runs $RUNS times,
# alternating; the table gives the best run of each (the rate the pair can sustain) and every run.
runs=${RUNS:-5}
best() { tr ' ' '\n' | grep -v '^$' | sort -g | tail -1; }
printf "%-8s %-16s %-16s %-7s %s\n" "size" "bypass-pmd Mpps" "testpmd Mpps" "ratio" "(every run: bypass-pmd / testpmd)"
for size in $sizes; do
  ours_all="" theirs_all=""
  for _ in $(seq "$runs"); do
    ours_all+="$(run_bypass "$size") "
    theirs_all+="$(run_testpmd "$size") "
  done
  ours=$(echo "$ours_all" | best)
  theirs=$(echo "$theirs_all" | best)
  ratio=$(/usr/bin/python3 -c "import sys; a, b = sys.argv[1], sys.argv[2]; print(f'{float(a)/float(b):.2f}x' if b not in ('n/a', '0.00', '') else 'n/a')" "$ours" "$theirs")
  printf "%-8s %-16s %-16s %-7s %s\n" "${size}B" "$ours" "$theirs" "$ratio" "(${ours_all% } / ${theirs_all% })"
done
[ -n "$testpmd" ] || echo "(dpdk-testpmd not found: apt-get install dpdk-dev for the comparison)"
