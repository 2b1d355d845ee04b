#!/usr/bin/env bash
# Benchmark analysis (not a test): where the default job's CPU goes at queue depth 128, and how far
# above posix the dpdk transport can get on the link it runs over. Both transports pay the
# messenger's work, so the bounds come from profiles of the two runs themselves.
#
#   tools/bench/ratio-ceiling.sh [BUILD_DIR]     (default build/release; root, for perf)
#   SECONDS_PROFILED=4 SIZE=4K to change the runs; LINK=auto|vhost-user|memif-zero-copy|memif picks the
#   dpdk link (bench.dpdk_link; default auto, as the default job); DPDK=0 profiles posix only;
#   KEEP=1 keeps the recordings (perf report -i DIR/dpdk.data) and says where
#
# It runs config/examples/default.yaml at depth 128 over posix, then over dpdk on LINK, and records
# both benchmark processes (perf record -e cpu-clock -g --call-graph dwarf: this VM has no hardware
# counters, the release build no frame pointers). Each sample goes to one share, decided by its
# leaf, or for a leaf in shared code (libc, libstdc++, buffers) by the first caller that decides:
#   messenger  the msgr2 protocol, crc32c, the load generator (the same code on every transport);
#              user-space code nothing else claims counts here too (on posix that is all of it)
#   copies     posix: the kernel's copies of each payload into and out of socket buffers (4 per
#              round trip); dpdk: the link's driver, whose copy loops move each payload between the
#              processes (memif: librte_net_memif; vhost-user: librte_vhost and librte_net_vhost)
#   stack      posix: the rest of the kernel (TCP, loopback, epoll, system calls); dpdk: the
#              userspace TCP/IP stack, its checksums, the poll loop, descriptors and mbufs (stack/,
#              pmd/, the rest of DPDK), and any kernel time
# CPU per message is both processes' CPU over the measured interval (the JSON) divided by the
# request/reply pairs. A transport at ratio R to posix needs its CPU per message <= posix's / R, so
# with the stack free of cost:
#   ceiling with N copies = posix CPU / (posix messenger + N x one kernel copy)
# printed for the kernel's 4, the link's own count and none; then the dpdk run's measured ratio and
# split, the ceiling its own messenger and copies leave, and what its stack may cost for 1.5x.
# Secure mode adds AES-128-GCM on each payload four times per request/reply (sealed and opened on
# both sides) and drops crc32c: secure/crc <= C / (C - crc + 4 * size / AES rate), with C the CPU
# per message of the posix run and the AES rate from `openssl speed` (OpenSSL's fastest path on this
# CPU; Bypass calls the same provider). It also prints the AES rate that 0.85 would need.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
bench=$build/tools/bypass-bench/bypass-bench
profiled=${SECONDS_PROFILED:-4}
size=${SIZE:-4K}
link=${LINK:-auto}
[ -x "$bench" ] || { echo "ratio-ceiling: $bench not built (tools/run.sh builds it)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "ratio-ceiling: needs root (perf on DPDK processes)" >&2; exit 2; }
command -v perf >/dev/null || "$root/tools/setup.sh" bench >&2
command -v openssl >/dev/null || { echo "ratio-ceiling: openssl missing (apt-get install openssl)" >&2; exit 2; }

work=$(mktemp -d /tmp/ratio-ceiling.XXXXXX)
bench_pid=""
cleanup() {
  [ -n "$bench_pid" ] && kill "$bench_pid" 2>/dev/null && wait "$bench_pid" 2>/dev/null
  if [ "${KEEP:-0}" = 1 ]; then echo "ratio-ceiling: recordings kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

# profile TRANSPORT: runs the job at depth 128 over TRANSPORT and records its server and client
# processes into $work/TRANSPORT.data (results in $work/TRANSPORT.json, output in .log). Recording
# starts once the server is ready and the 1 s warm-up is over, and ends before the measured
# interval does.
duration=$((profiled + 4))
profile() {
  local transport=$1
  "$bench" -c "$root/config/examples/default.yaml" --set bench.transports="$transport" --set bench.dpdk_link="$link" \
    --set bench.iodepth=128 --set bench.message_size="$size" --set bench.duration="${duration}s" \
    --set bench.progress=off --set bench.output="$work/$transport.json" run >"$work/$transport.log" 2>&1 &
  bench_pid=$!
  local waited=0
  until grep -q "^== $transport: server ready" "$work/$transport.log"; do
    if ! kill -0 "$bench_pid" 2>/dev/null || [ "$waited" -ge 900 ]; then
      cat "$work/$transport.log" >&2
      echo "ratio-ceiling: the $transport server did not become ready" >&2
      exit 1
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  sleep 2  # the client connects, then warms up for 1 s
  local pids
  pids=$(pgrep -P "$bench_pid" | paste -sd, -)
  [ -n "$pids" ] || { cat "$work/$transport.log" >&2; echo "ratio-ceiling: no $transport processes to record" >&2; exit 1; }
  perf record -F 499 -e cpu-clock --call-graph dwarf -p "$pids" -o "$work/$transport.data" -- sleep "$profiled" \
    >"$work/$transport.perf.log" 2>&1 || { cat "$work/$transport.perf.log" >&2; echo "ratio-ceiling: perf record failed" >&2; exit 1; }
  if ! wait "$bench_pid"; then
    bench_pid=""
    cat "$work/$transport.log" >&2
    echo "ratio-ceiling: the $transport run failed" >&2
    exit 1
  fi
  bench_pid=""
  # One line per frame, samples separated by blank lines: what the classifier below reads.
  perf script -i "$work/$transport.data" -F comm,tid,ip,sym,dso --no-inline >"$work/$transport.stacks" 2>/dev/null
}

profile posix
openssl speed -evp aes-128-gcm -bytes 4096 -seconds 2 2>/dev/null >"$work/aes.txt"
if [ "${DPDK:-1}" != 0 ]; then
  profile dpdk
  grep '^== dpdk link:' "$work/dpdk.log" || true
fi

/usr/bin/python3 - "$work" "${DPDK:-1}" "$root/tools/bench" <<'PY'
import sys

work, with_dpdk = sys.argv[1], sys.argv[2] != "0"
sys.path.insert(0, sys.argv[3])
from perf_split import split as split_run, top  # the shares, shared with connection-scaling.sh


def split(transport):
    try:
        return split_run(f"{work}/{transport}.stacks", f"{work}/{transport}.json", transport)
    except ValueError as e:
        sys.exit(f"ratio-ceiling: {e}")


def show(s, labels):
    for k in ("messenger", "copies", "stack"):
        print(f"  {labels[k]:44s} {s['us'][k]:6.2f} us  {s['share'][k]:5.1f} %")


posix = split("posix")
P, M, C = posix["cpu_us"], posix["us"]["messenger"], posix["us"]["copies"]
one_copy = C / 4
size = posix["size"]
print(f"posix, depth 128, {size} B request/reply: {posix['msgs']:,.0f} msgs/s, {P:.2f} us of CPU per message "
      f"(both processes, {posix['samples']} samples)")
show(posix, {"messenger": "messenger (user space)", "copies": "copies (the kernel's 4)",
             "stack": "stack (the rest of the kernel)"})
print(f"  (crc32c inside messenger: {posix['crc_us']:.2f} us; one kernel copy: {one_copy:.2f} us)")

ceilings = [("the kernel's 4 copies", 4), ("no copies", 0)]
dpdk = split("dpdk") if with_dpdk else None
if dpdk:
    name, copies = dpdk["link"].get("name", "?"), dpdk["link"].get("copies_per_round_trip")
    if copies is not None and copies not in (0, 4):
        ceilings.insert(1, (f"{name}'s {copies} copies (the link in use)", copies))
print("ceiling of dpdk/posix at depth 128 (posix's messenger and kernel copy cost, the rest of the transport free):")
for label, n in ceilings:
    print(f"  with {label:40s} {P / (M + n * one_copy):.2f}x")
aes_rate = None
for line in open(f"{work}/aes.txt"):
    if line.lower().startswith("aes-128-gcm"):
        aes_rate = float(line.split()[-1].rstrip("k")) * 1000  # bytes/s for 4096-byte blocks
if aes_rate:
    crc_us = posix["crc_us"]
    aes_us = 4 * size / aes_rate * 1e6
    need = 4 * size / ((P / 0.85 - P + crc_us) * 1e-6)
    print(f"secure/crc: AES-128-GCM {aes_rate / 1e9:.2f} GB/s (openssl speed, 4 KiB): {aes_us:.2f} us per message "
          f"against {crc_us:.2f} us of crc32c saved")
    print(f"  ceiling secure/crc {P / (P - crc_us + aes_us):.2f}; 0.85 would need AES-128-GCM at {need / 1e9:.1f} GB/s")
if not dpdk:
    sys.exit(0)

D, Md, Ld, Sd = dpdk["cpu_us"], dpdk["us"]["messenger"], dpdk["us"]["copies"], dpdk["us"]["stack"]
ratio = dpdk["msgs"] / posix["msgs"]
copies_text = f"{copies} payload copies per round trip" if copies is not None else "copies not known"
print(f"dpdk over {name} ({copies_text}), depth 128: {dpdk['msgs']:,.0f} msgs/s = {ratio:.2f}x posix, "
      f"{D:.2f} us of CPU per message ({dpdk['samples']} samples; busy-polling, so idle polls count)")
show(dpdk, {"messenger": "messenger (same code as posix's)", "copies": f"copies (the {name} driver)",
            "stack": "stack (TCP/IP, checksums, polling, mbufs)"})
print(f"  (crc32c inside messenger: {dpdk['crc_us']:.2f} us; samples no frame placed, counted as messenger: "
      f"{dpdk['unattributed']:.1f} %)")
print(f"  top of copies: {top(dpdk, 'copies')}")
print(f"  top of stack:  {top(dpdk, 'stack')}")
print(f"  top of messenger: {top(dpdk, 'messenger')}")
print("left to the ceiling:")
print(f"  measured {ratio:.2f}x (CPU per message: posix {P:.2f} us / dpdk {D:.2f} us = {P / D:.2f}x)")
print(f"  this run's messenger and copies alone ({Md + Ld:.2f} us) allow {P / (Md + Ld):.2f}x: the rest is its stack")
budget = P / 1.5 - Md - Ld
print(f"  1.5x needs dpdk at <= {P / 1.5:.2f} us per message: the stack at <= {budget:.2f} us (today {Sd:.2f} us)"
      if budget > 0 else
      f"  1.5x needs dpdk at <= {P / 1.5:.2f} us per message, less than its messenger and copies cost alone")
PY
