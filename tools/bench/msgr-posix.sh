#!/usr/bin/env bash
# Benchmark (not a test): the messenger over posix on loopback, 4 KiB messages, ping-pong and
# streaming at queue depth 1, 16 and 128 (msgr_bench: one client and one server messenger, one
# worker each, one connection). Prints msgs/s, MB/s, p50/p99 latency and CPU per message (both
# ends, kernel included), then the user-space instructions per message counted by callgrind for a
# small fixed run (the messenger alone: no kernel, no waiting).
#
#   tools/bench/msgr-posix.sh [BUILD_DIR]        (default build/release, built when missing)
#   COUNT=200000 DEPTHS="1 16 128" SIZE=4096 CALLGRIND_COUNT=2000 to change the runs
#   CALLGRIND=0 to skip the callgrind part
#   SECURE=1 for msgr2 secure mode (AES-128-GCM; shared-secret auth) instead of crc mode
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
bench=$build/tools/bench/msgr_bench
count=${COUNT:-200000}
depths=${DEPTHS:-1 16 128}
size=${SIZE:-4096}
cg_count=${CALLGRIND_COUNT:-2000}
sets=(--set ms.type=posix)
if [ "${SECURE:-0}" = 1 ]; then
  sets+=(--set ms.auth=shared_secret --set ms.secret=msgr-posix-bench --set ms.mode=secure)
fi
work=$(mktemp -d /tmp/msgr-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

if [ ! -x "$bench" ]; then
  echo "building msgr_bench in $build (release)" >&2
  [ -f "$build/build.ninja" ] || meson setup "$build" --buildtype=release >/dev/null
  ninja -C "$build" -j2 tools/bench/msgr_bench >/dev/null
fi

# Measured runs: warm-up of a tenth (connection set-up, allocator, TCP windows) excluded.
for mode in pingpong stream; do
  for depth in $depths; do
    "$bench" --mode "$mode" --depth "$depth" --size "$size" --count "$count" --warmup $((count / 10)) \
      "${sets[@]}" | tee -a "$work/runs.txt" >&2
  done
done

# Instruction counts: callgrind counts only between the start and the end of the measured
# messages (msgr_bench toggles instrumentation), user space only.
if [ "${CALLGRIND:-1}" != 0 ] && command -v valgrind >/dev/null; then
  for mode in pingpong stream; do
    for depth in $depths; do
      out=$work/callgrind.$mode.$depth
      valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" \
        "$bench" --mode "$mode" --depth "$depth" --size "$size" --count "$cg_count" \
        --warmup $((cg_count / 10)) "${sets[@]}" >/dev/null 2>"$out.log" ||
        { tail -5 "$out.log" >&2; echo "callgrind run failed ($mode depth $depth)" >&2; exit 1; }
      ir=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$out")
      echo "mode=$mode depth=$depth ir_per_msg=$((ir / cg_count))" >>"$work/callgrind.txt"
    done
  done
else
  echo "valgrind not installed (or CALLGRIND=0): no instruction counts" >&2
fi
touch "$work/callgrind.txt"

python3 - "$work/runs.txt" "$work/callgrind.txt" "$size" "$count" "$cg_count" "$([ "${SECURE:-0}" = 1 ] && echo secure || echo crc)" <<'PY'
import sys
def rows(path):
    out = []
    for line in open(path):
        out.append(dict(kv.split("=", 1) for kv in line.split()))
    return out
runs, cg = rows(sys.argv[1]), rows(sys.argv[2])
ir = {(r["mode"], r["depth"]): r["ir_per_msg"] for r in cg}
size, count, cg_count, mode_name = sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
print(f"\nmsgr over posix loopback ({mode_name} mode), {size} B messages, {count} measured per run "
      f"(ping-pong: msgs/s = round trips, MB/s one way; CPU = both ends incl. kernel; "
      f"instructions = user space, both ends, callgrind over {cg_count} messages)")
print(f"{'mode':<9} {'depth':>5} {'msgs/s':>9} {'MB/s':>8} {'p50 us':>8} {'p99 us':>8} {'CPU us/msg':>10} {'instr/msg':>10}")
for r in runs:
    print(f"{r['mode']:<9} {r['depth']:>5} {float(r['msgs_per_s']):>9.0f} {float(r['MB_per_s']):>8.1f} "
          f"{float(r['p50_us']):>8.1f} {float(r['p99_us']):>8.1f} {float(r['cpu_us_per_msg']):>10.2f} "
          f"{ir.get((r['mode'], r['depth']), '-'):>10}")
PY
