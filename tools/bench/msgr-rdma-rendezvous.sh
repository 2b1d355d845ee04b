#!/usr/bin/env bash
# Benchmark (not a test): the messenger over rdma with rendezvous (large payloads pulled by RDMA
# READ) against two-sided SENDs into chunks, side by side in one soft-RoCE guest boot
# (tools/rxe-vm), for 4 KiB, 64 KiB, 1 MiB and 4 MiB messages, stream and request/reply
# (msgr_bench: one client and one server messenger on one rdma stack with one worker, so the
# transport counters cover both ends). Variants, each run in turn for every row:
#   two-sided   rdma.rendezvous_threshold=0: every payload byte copied into send chunks
#   rendezvous  the default threshold; the payload (an ordinary buffer) registered once by the
#               registration cache
#   registered  rendezvous from memory the application took from allocate_payload() (registered
#               once, at start-up)
#   main        (BASELINE=path/to/another/msgr_bench, e.g. main's release build) the same defaults
#               on that binary; its lines carry no counters, only rates and instructions
# Rows (what does not depend on the emulator's pace):
#   copies per payload byte, sender side (tx_copied_bytes) and receiver side (rx_copied_bytes);
#   work requests (SEND + READ + receive) and completions per MiB of payload;
#   user-space instructions per MiB in the transport (callgrind, counting only inside
#   bypass::rdma:: functions and what they call: provider, memcpy), 4 KiB per message;
#   msgs/s and p50 latency as a sanity row (the emulator's pace, not a target).
# Ratios are against two-sided in the same run.
#
#   tools/bench/msgr-rdma-rendezvous.sh [BUILD_DIR]     (default build/rel, built when missing)
#   SIZES="4K 64K 1M 4M" MODES="stream pingpong" REPEAT=1 CALLGRIND=1 BASELINE=... to change the runs
#   READ_SIZE=1M READS=8: rdma.rendezvous_read_size / rdma.rendezvous_reads in every run
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build/rel}" 2>/dev/null && pwd || echo "${1:-$root/build/rel}")
bench=$build/tools/bench/msgr_bench
sizes=${SIZES:-4K 64K 1M 4M}
modes=${MODES:-stream pingpong}
repeat=${REPEAT:-1}
callgrind=${CALLGRIND:-1}
baseline=${BASELINE:-}
# The emulated guest answers a 1 MiB READ more slowly than the default 67 ms ACK timeout (the reader
# would retry it from the start): 1 s, as the guest tests use.
tuning="--set rdma.rendezvous_read_size=${READ_SIZE:-1M} --set rdma.rendezvous_reads=${READS:-8} --set rdma.ack_timeout=1s"

if [ ! -x "$bench" ]; then
  echo "building msgr_bench in $build (release)" >&2
  [ -f "$build/build.ninja" ] || meson setup "$build" --buildtype=release >/dev/null
  ninja -C "$build" -j2 tools/bench/msgr_bench >/dev/null
fi
[ -z "$baseline" ] || [ -x "$baseline" ] || { echo "BASELINE=$baseline is not an executable msgr_bench" >&2; exit 2; }
if [ "$callgrind" != 0 ] && ! command -v valgrind >/dev/null; then
  echo "valgrind is not installed (tools/setup.sh installs it): CALLGRIND=0 to run without instruction counts" >&2
  exit 2
fi

# Messages per run and queue depth by size: enough to average over, few enough for the emulator.
# Under callgrind a tenth (at least 4).
guest_cmd="set -u
count_of() { case \$1 in 4K) echo 2000;; 64K) echo 300;; 1M) echo 40;; *) echo 12;; esac; }
depth_of() { case \$1 in 4K) echo 16;; *) echo 4;; esac; }
run() { variant=\$1 mode=\$2 size=\$3 tool=\$4; count=\$(count_of \$size); bin='$bench'; extra=''
  case \$variant in
    two-sided) extra='--set rdma.rendezvous_threshold=0';;
    registered) extra='--payload registered';;
    main) bin='$baseline';;
  esac
  pre=''
  if [ \$tool = callgrind ]; then
    count=\$(( count / 10 < 4 ? 4 : count / 10 )); out=/tmp/cg.\$\$
    pre=\"valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no --toggle-collect=*bypass::rdma::* --callgrind-out-file=\$out\"
  fi
  line=\$(timeout 900 \$pre \$bin --set ms.type=rdma --set rdma.busy_poll=0 $tuning \$extra --mode \$mode --depth \$(depth_of \$size) \\
          --size \$size --count \$count --warmup \$(( count / 10 + 1 )) 2>/tmp/err.\$\$) || { echo \"failed: \$variant \$mode \$size \$tool\"; cat /tmp/err.\$\$; return; }
  if [ \$tool = callgrind ]; then
    # totals: what --toggle-collect counted (summary stays 0 when collection starts off).
    ir=\$(awk '/^totals:/ {print \$2; exit}' \$out); rm -f \$out
    line=\"\$line instructions=\$ir\"
  fi
  echo \"variant=\$variant tool=\$tool \$line\"
}
variants='two-sided rendezvous registered'; [ -n '$baseline' ] && variants=\"\$variants main\"
tools=plain; [ $callgrind != 0 ] && tools='plain callgrind'
for r in \$(seq $repeat); do for size in $sizes; do for mode in $modes; do for tool in \$tools; do for v in \$variants; do
  run \$v \$mode \$size \$tool | sed \"s/^/run=\$r /\"
done; done; done; done; done"

out=$(mktemp /tmp/msgr-rdma-rendezvous.XXXXXX)
trap 'rm -f "$out"' EXIT
(cd "$root" && RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-5400} tools/rxe-vm "$guest_cmd") | tee "$out" >&2
if grep -q '^run=.* failed:\|^failed:' "$out"; then echo "some runs failed (above)" >&2; exit 1; fi

python3 - "$out" "$repeat" <<'PY'
import sys, statistics
path, repeat = sys.argv[1], sys.argv[2]
rows = {}
for line in open(path):
    if not line.startswith("run="):
        continue
    r = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    rows.setdefault((r["mode"], int(r["size"]), r["variant"], r["tool"]), []).append(r)
if not rows:
    sys.exit("no results")
variants = [v for v in ("two-sided", "rendezvous", "registered", "main") if any(k[2] == v for k in rows)]

def med(rs, f):
    vals = [f(x) for x in rs]
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None

def num(x, key):
    return float(x[key]) if key in x else None

def payload_mib(x):
    # Payload bytes that crossed: each measured message, and its reply in pingpong.
    return float(x["msgs"]) * float(x["size"]) * (2 if x["mode"] == "pingpong" else 1) / (1 << 20)

def per_mib(*keys):
    def f(x):
        if not all("c_" + k in x for k in keys):
            return None
        return sum(float(x["c_" + k]) for k in keys) / payload_mib(x)
    return f

def per_byte(key):
    def f(x):
        return float(x["c_" + key]) / (payload_mib(x) * (1 << 20)) if "c_" + key in x else None
    return f

def instructions(x):
    if "instructions" not in x or not x["instructions"]:
        return None
    # 4 KiB messages per message; larger ones per MiB.
    return float(x["instructions"]) / (float(x["msgs"]) if int(x["size"]) < 65536 else payload_mib(x))

metrics = [
    ("copies/B tx", "plain", per_byte("tx_copied_bytes"), "{:.3f}"),
    ("copies/B rx", "plain", per_byte("rx_copied_bytes"), "{:.3f}"),
    ("WRs/MiB", "plain", per_mib("send_work_requests", "read_work_requests", "receive_work_requests"), "{:.1f}"),
    ("CQEs/MiB", "plain", per_mib("completions"), "{:.1f}"),
    ("Ir/MiB (4K: /msg)", "callgrind", instructions, "{:.0f}"),
    ("msgs/s", "plain", lambda x: num(x, "msgs_per_s"), "{:.1f}"),
    ("p50 ms", "plain", lambda x: num(x, "p50_us") / 1000 if "p50_us" in x else None, "{:.1f}"),
]
print(f"\nmessenger over rdma in the soft-RoCE guest, one stack both ends (counters: both sides), median of {repeat} run(s);"
      " ratio = variant / two-sided")
head = f"{'mode':<9} {'size':>8} {'metric':<18}" + "".join(f" {v:>12}" for v in variants) + "".join(
    f" {v + '/2s':>14}" for v in variants[1:])
print(head)
for (mode, size) in sorted({(k[0], k[1]) for k in rows}, key=lambda k: (k[0], k[1])):
    for name, tool, f, fmt in metrics:
        vals = {v: med(rows.get((mode, size, v, tool), []), f) for v in variants}
        if all(x is None for x in vals.values()):
            continue
        line = f"{mode:<9} {size:>8} {name:<18}"
        line += "".join(f" {fmt.format(vals[v]) if vals[v] is not None else '-':>12}" for v in variants)
        base = vals["two-sided"]
        for v in variants[1:]:
            line += f" {vals[v] / base:>14.2f}" if vals[v] is not None and base else f" {'-':>14}"
        print(line)
PY
