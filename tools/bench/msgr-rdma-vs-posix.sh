#!/usr/bin/env bash
# Benchmark (not a test): the messenger over rdma and rsocket vs posix, side by side, inside the
# soft-RoCE guest of tools/rxe-vm (one boot; every transport in the same guest, same parameters,
# runs alternated so a slow spell of the emulator hits all). 4 KiB messages, ping-pong and
# streaming, one connection (msgr_bench: one client and one server messenger, one worker each).
# Prints msgs/s and p50 latency per transport and the ratios to posix. rsocket (librdmacm's
# rsockets under the posix transport's logic) listens on the guest's rxe netdev address.
#
# The guest's CPU is emulated (TCG) and soft-RoCE is itself software on that CPU: absolute numbers
# mean little, and the ratio says how the two code paths compare on the same (slow) CPU, not what
# an RDMA NIC would give.
#
#   tools/bench/msgr-rdma-vs-posix.sh [BUILD_DIR]      (default build/release, built when missing)
#   COUNT=5000 DEPTHS="1 16" SIZE=4096 MODES="pingpong stream" REPEAT=2 to change the runs
#   RDMA_CM=1 adds a column for rdma with rdma.connect_mode=rdma_cm (on the guest's rxe netdev IP)
#   TRANSPORTS="posix rdma" to leave out rsocket (posix always comes first: the ratios' base)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build/release}" 2>/dev/null && pwd || echo "${1:-$root/build/release}")
bench=$build/tools/bench/msgr_bench
count=${COUNT:-5000}
depths=${DEPTHS:-1 16}
modes=${MODES:-pingpong stream}
size=${SIZE:-4096}
repeat=${REPEAT:-2}
transports="posix ${TRANSPORTS:-posix rdma rsocket}"
transports=$(echo "$transports" | tr ' ' '\n' | awk 'NF && !seen[$0]++' | tr '\n' ' ')
[ "${RDMA_CM:-0}" = 1 ] && transports="$transports rdma_cm"

if [ ! -x "$bench" ]; then
  echo "building msgr_bench in $build (release)" >&2
  [ -f "$build/build.ninja" ] || meson setup "$build" --buildtype=release >/dev/null
  ninja -C "$build" -j2 tools/bench/msgr_bench >/dev/null
fi
case $bench in "$root"/*) ;; *) echo "BUILD_DIR must be inside $root (the guest mounts only it)" >&2; exit 2;; esac

# Guest side: every run bounded; each output line gets "transport=... run=..." in front.
guest_cmd="set -eu
run() { t=\$1; shift
  case \$t in
    posix) set -- --set ms.type=posix \"\$@\";;
    rdma) set -- --set ms.type=rdma \"\$@\";;
    rdma_cm) set -- --set ms.type=rdma --set rdma.connect_mode=rdma_cm --addr \$RXE_IP \"\$@\";;
    rsocket) set -- --set ms.type=rsocket --addr \$RXE_IP \"\$@\";;
  esac
  timeout 600 '$bench' \"\$@\" --size $size --count $count --warmup $((count / 10)) | sed \"s/^/transport=\$t /\"; }
for r in \$(seq $repeat); do for mode in $modes; do for depth in $depths; do for t in $transports; do
  run \$t --mode \$mode --depth \$depth | sed \"s/^/run=\$r /\"
done; done; done; done"

out=$(mktemp /tmp/msgr-rdma-vs-posix.XXXXXX)
trap 'rm -f "$out"' EXIT
(cd "$root" && RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-3000} tools/rxe-vm "$guest_cmd") | tee "$out" >&2

python3 - "$out" "$size" "$count" "$repeat" "$transports" <<'PY'
import sys, statistics
path, size, count, repeat, transports = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5].split()
runs = {}
for line in open(path):
    if not line.startswith("run="):
        continue
    r = dict(kv.split("=", 1) for kv in line.split())
    runs.setdefault((r["mode"], int(r["depth"]), r["transport"]), []).append(r)
def med(rows, key):
    return statistics.median(float(x[key]) for x in rows)
print(f"\nmsgr in the soft-RoCE guest (emulated CPU: compare ratios, not absolute numbers), {size} B "
      f"messages, {count} measured per run, median of {repeat} runs; ping-pong msgs/s = round trips")
head = f"{'mode':<9} {'depth':>5}"
for t in transports:
    head += f" {t + ' msg/s':>14} {t + ' p50us':>14}"
for t in transports[1:]:
    head += f" {t + '/posix':>14}"
print(head)
for mode, depth in sorted({(m, d) for m, d, _ in runs}, key=lambda k: (k[0] != "pingpong", k[1])):
    line = f"{mode:<9} {depth:>5}"
    rate = {}
    for t in transports:
        rows = runs.get((mode, depth, t))
        if not rows:
            line += f" {'-':>14} {'-':>14}"
            continue
        rate[t] = med(rows, "msgs_per_s")
        line += f" {rate[t]:>14.0f} {med(rows, 'p50_us'):>14.1f}"
    for t in transports[1:]:
        line += f" {rate[t] / rate['posix']:>14.2f}" if t in rate and rate.get("posix") else f" {'-':>14}"
    print(line)
PY
