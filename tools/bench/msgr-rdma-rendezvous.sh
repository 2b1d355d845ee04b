#!/usr/bin/env bash
# Benchmark (not a test): the messenger over rdma with rendezvous (large payloads pulled by RDMA
# READ) against two-sided SENDs into chunks and against rsockets, side by side in one soft-RoCE
# guest boot (tools/rxe-vm), for 4 KiB, 64 KiB, 1 MiB and 4 MiB messages, stream and
# request/reply (msgr_bench: one client and one server messenger on one stack with one worker, so
# the transport counters cover both ends). Variants, each run in turn for every row:
#   two-sided   rdma.rendezvous_threshold=0: every payload byte copied into send chunks
#   rendezvous  the default threshold; the payload (an ordinary buffer) registered once by the
#               registration cache
#   registered  rendezvous from memory the application took from allocate_payload() (registered
#               once, at start-up)
#   rsocket     ms.type=rsocket on the guest's rxe address: the posix transport's code over
#               librdmacm's rsockets (no Bypass copy or work-request counters: see docs/rdma.md)
#   main        (BASELINE=path/to/another/msgr_bench, e.g. main's release build before rendezvous)
#               rdma with that binary's defaults, at BASELINE_SIZES (default 4K); its lines carry
#               no counters, only rates and instructions
# Rows (what does not depend on the emulator's pace):
#   copies per payload byte, sender side (tx_copied_bytes) and receiver side (rx_copied_bytes);
#   work requests (SEND + READ + receive) and completions per MiB of payload (Bypass's counters);
#   rdma_rxe's own counters for every variant alike (hw_counters: rdma_recvs = receives consumed,
#   by SENDs and by RDMA WRITEs with immediate; rdma_sends = SENDs completed; sent_pkts), over
#   the whole run (warm-up and connection set-up included) per MiB of all its payload;
#   user-space instructions (callgrind in the guest, whole process over the measured messages):
#   all of them, and the transport's share (tools/bench/msgr-rdma-instructions.py says which
#   functions) and the part of that in memcpy (about one instruction per byte copied), per MiB,
#   per message at 4 KiB;
#   msgs/s and p50 latency as a sanity row (the emulator's pace, not a target).
# Ratios are against two-sided in the same run.
#
#   tools/bench/msgr-rdma-rendezvous.sh [BUILD_DIR]     (default build/rel, built when missing)
#   SIZES="4K 64K 1M 4M" MODES="stream pingpong" REPEAT=1 CALLGRIND=1 BASELINE=... BASELINE_SIZES=4K
#   VARIANTS="two-sided rendezvous registered rsocket" COUNT_SCALE=1 (multiplies messages per run)
#   READ_SIZE=1M READS=8: rdma.rendezvous_read_size / rdma.rendezvous_reads in every rdma run
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build/rel}" 2>/dev/null && pwd || echo "${1:-$root/build/rel}")
bench=$build/tools/bench/msgr_bench
sizes=${SIZES:-4K 64K 1M 4M}
modes=${MODES:-stream pingpong}
repeat=${REPEAT:-1}
callgrind=${CALLGRIND:-1}
baseline=${BASELINE:-}
baseline_sizes=${BASELINE_SIZES:-4K}
variants=${VARIANTS:-two-sided rendezvous registered rsocket}
count_scale=${COUNT_SCALE:-1}
[ -z "$baseline" ] || variants="$variants main"
for v in $variants; do
  case $v in two-sided|rendezvous|registered|rsocket|main) ;;
    *) echo "VARIANTS: unknown variant '$v' (two-sided, rendezvous, registered, rsocket)" >&2; exit 2;; esac
done
case $count_scale in ''|*[!0-9.]*) echo "COUNT_SCALE=$count_scale is not a number" >&2; exit 2;; esac
# The emulated guest answers a 1 MiB READ more slowly than the default 67 ms ACK timeout (the reader
# would retry it from the start): 1 s, as the guest tests use. main (before rendezvous) knows only
# the last option.
rdma_opts="--set ms.type=rdma --set rdma.busy_poll=0 --set rdma.ack_timeout=1s"
tuning="--set rdma.rendezvous_read_size=${READ_SIZE:-1M} --set rdma.rendezvous_reads=${READS:-8}"

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

# Messages per run and queue depth by size: enough to average over, few enough for the emulator
# (times COUNT_SCALE). Under callgrind a tenth (at least 4). rdma_rxe's counters are read around
# each plain run (both ends are on rxe0, nothing else runs in the guest).
guest_cmd="set -u
count_of() { case \$1 in 4K) n=2000;; 64K) n=300;; 1M) n=40;; *) n=12;; esac; awk -v n=\$n -v s=$count_scale 'BEGIN { c = int(n * s); print c < 4 ? 4 : c }'; }
depth_of() { case \$1 in 4K) echo 16;; *) echo 4;; esac; }
hw=/sys/class/infiniband/\$RXE_DEV/ports/1/hw_counters
rxe_counts() { for c in rdma_sends rdma_recvs sent_pkts; do [ -r \$hw/\$c ] && echo \$c \$(cat \$hw/\$c); done; }
run() { variant=\$1 mode=\$2 size=\$3 tool=\$4; count=\$(count_of \$size); bin='$bench'; opts='$rdma_opts $tuning'
  case \$variant in
    two-sided) opts=\"\$opts --set rdma.rendezvous_threshold=0\";;
    registered) opts=\"\$opts --payload registered\";;
    rsocket) opts=\"--set ms.type=rsocket --addr \$RXE_IP\";;
    main) bin='$baseline' opts='$rdma_opts';;
  esac
  pre=''
  if [ \$tool = callgrind ]; then
    count=\$(( count / 10 < 4 ? 4 : count / 10 )); out=/tmp/cg.\$\$
    pre=\"valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=\$out\"
  fi
  before=\$(rxe_counts)
  line=\$(timeout 900 \$pre \$bin \$opts --mode \$mode --depth \$(depth_of \$size) \\
          --size \$size --count \$count --warmup \$(( count / 10 + 1 )) 2>/tmp/err.\$\$) || { echo \"failed: \$variant \$mode \$size \$tool\"; cat /tmp/err.\$\$; return; }
  if [ \$tool = callgrind ]; then
    split=\$(python3 '$root/tools/bench/msgr-rdma-instructions.py' \$out) || { echo \"failed: \$variant \$mode \$size \$tool (profile)\"; return; }
    rm -f \$out; line=\"\$line \$split\"
  else
    # x_NAME: rdma_rxe's counter over the whole run; runs: messages in it (warm-up included).
    line=\"\$line runs=\$(( count + count / 10 + 1 ))\$(printf '%s\\n' \"\$before\" | while read -r c v; do
      [ -n \"\$c\" ] && printf ' x_%s=%s' \$c \$(( \$(cat \$hw/\$c) - v )); done)\"
  fi
  echo \"variant=\$variant tool=\$tool \$line\"
}
tools=plain; [ $callgrind != 0 ] && tools='plain callgrind'
for r in \$(seq $repeat); do for size in $sizes; do for mode in $modes; do for tool in \$tools; do for v in $variants; do
  [ \$v = main ] && case ' $baseline_sizes ' in *\" \$size \"*) ;; *) continue;; esac
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
variants = [v for v in ("two-sided", "rendezvous", "registered", "rsocket", "main") if any(k[2] == v for k in rows)]

def med(rs, f):
    vals = [f(x) for x in rs]
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None

def num(x, key):
    return float(x[key]) if key in x else None

def payload_mib(x, msgs_key="msgs"):
    # Payload bytes that crossed: each message, and its reply in pingpong.
    return float(x[msgs_key]) * float(x["size"]) * (2 if x["mode"] == "pingpong" else 1) / (1 << 20)

def per_mib(*keys):
    def f(x):
        if not all("c_" + k in x for k in keys):
            return None
        return sum(float(x["c_" + k]) for k in keys) / payload_mib(x)
    return f

def rxe_per_mib(key):
    # rdma_rxe's counters cover the whole run: per MiB of every message in it.
    return lambda x: float(x["x_" + key]) / payload_mib(x, "runs") if "x_" + key in x and "runs" in x else None

def per_byte(key):
    def f(x):
        return float(x["c_" + key]) / (payload_mib(x) * (1 << 20)) if "c_" + key in x else None
    return f

def instructions(key):
    def f(x):
        if not x.get(key):
            return None
        # 4 KiB messages per message; larger ones per MiB.
        return float(x[key]) / (float(x["msgs"]) if int(x["size"]) < 65536 else payload_mib(x))
    return f

metrics = [
    ("copies/B tx", "plain", per_byte("tx_copied_bytes"), "{:.3f}"),
    ("copies/B rx", "plain", per_byte("rx_copied_bytes"), "{:.3f}"),
    ("WRs/MiB", "plain", per_mib("send_work_requests", "read_work_requests", "receive_work_requests"), "{:.1f}"),
    ("CQEs/MiB", "plain", per_mib("completions"), "{:.1f}"),
    ("rxe recvs/MiB", "plain", rxe_per_mib("rdma_recvs"), "{:.1f}"),
    ("rxe SENDs/MiB", "plain", rxe_per_mib("rdma_sends"), "{:.1f}"),
    ("rxe pkts/MiB", "plain", rxe_per_mib("sent_pkts"), "{:.0f}"),
    ("Ir all (4K: /msg)", "callgrind", instructions("instructions"), "{:.0f}"),
    ("Ir transport", "callgrind", instructions("transport_instructions"), "{:.0f}"),
    ("Ir transport copy", "callgrind", instructions("copy_instructions"), "{:.0f}"),
    ("msgs/s", "plain", lambda x: num(x, "msgs_per_s"), "{:.1f}"),
    ("p50 ms", "plain", lambda x: num(x, "p50_us") / 1000 if "p50_us" in x else None, "{:.1f}"),
]
ratios = [(v, "two-sided", v + "/2s") for v in variants if v != "two-sided"]
if "main" in variants:
    ratios.append(("rendezvous", "main", "rdv/main"))
print(f"\nmessenger over rdma in the soft-RoCE guest, one stack both ends (counters: both sides), median of {repeat} run(s);"
      " ratio = variant / two-sided")
head = f"{'mode':<9} {'size':>8} {'metric':<18}" + "".join(f" {v:>12}" for v in variants) + "".join(
    f" {name:>14}" for _, _, name in ratios)
print(head)
for (mode, size) in sorted({(k[0], k[1]) for k in rows}, key=lambda k: (k[0], k[1])):
    for name, tool, f, fmt in metrics:
        vals = {v: med(rows.get((mode, size, v, tool), []), f) for v in variants}
        if all(x is None for x in vals.values()):
            continue
        line = f"{mode:<9} {size:>8} {name:<18}"
        line += "".join(f" {fmt.format(vals[v]) if vals[v] is not None else '-':>12}" for v in variants)
        for v, base, _ in ratios:
            a, b = vals.get(v), vals.get(base)
            line += f" {a / b:>14.2f}" if a is not None and b else f" {'-':>14}"
        print(line)
if "rsocket" in variants:
    print("rsocket: no Bypass copy or work-request counters; by librdmacm's design each payload byte is copied once on"
          " each side (into the sender's registered ring, out of the receiver's), docs/rdma.md")
PY
