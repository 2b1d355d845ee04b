#!/usr/bin/env bash
# Benchmark analysis (not a test): how far above posix can any transport take the default job at
# queue depth 128, and secure mode against crc mode? Both are bounded by work every transport
# shares, so the bound comes from a profile of the posix run itself.
#
#   tools/bench/ratio-ceiling.sh [BUILD_DIR]     (default build/release; root, for perf -a)
#   SECONDS_PROFILED=4 SIZE=4K to change the run; DPDK=0 skips the dpdk profile printed at the end
#
# It runs config/examples/default.yaml over posix at depth 128 (crc mode) under
# `perf record -a -e cpu-clock` and sorts both benchmark processes' samples into:
#   messenger  user space: the msgr2 protocol, crc32c, the load generator, libc (same code on every transport)
#   copies     the kernel's copies of the payload into and out of socket buffers
#   kernel     the rest of the kernel's work (TCP, loopback, epoll, system calls)
# A transport at ratio R needs messenger + its own cost <= (messenger + copies + kernel) / R. Moving
# each payload between two processes over memif takes as many copies as the kernel makes (the
# server side of memif always copies; the client side copies into its mbufs, or with zero-copy=yes
# the server's rx copies from the client's memory), so the printed ceilings are:
#   same copies         messenger + copies                  (the rest of the transport free)
#   half the copies     messenger + copies / 2
#   no transport at all messenger alone
# Secure mode adds AES-128-GCM on each payload four times per request/reply (sealed and opened on
# both sides) and drops crc32c: secure/crc <= C / (C - crc + 4 * size / AES rate), with C the CPU
# per message of the crc run and the AES rate from `openssl speed` (OpenSSL's fastest path on this
# CPU; Bypass calls the same provider). It also prints the AES rate that 0.85 would need.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
bench=$build/tools/bypass-bench/bypass-bench
profiled=${SECONDS_PROFILED:-4}
size=${SIZE:-4K}
[ -x "$bench" ] || { echo "ratio-ceiling: $bench not built (tools/run.sh builds it)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "ratio-ceiling: needs root (perf record -a)" >&2; exit 2; }
if ! command -v perf >/dev/null; then
  echo "ratio-ceiling: installing linux-perf" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends linux-perf >/dev/null
fi
command -v openssl >/dev/null || { echo "ratio-ceiling: openssl missing (apt-get install openssl)" >&2; exit 2; }

work=$(mktemp -d /tmp/ratio-ceiling.XXXXXX)
trap 'rm -rf "$work"' EXIT

# profile TRANSPORT: runs the job at depth 128 over TRANSPORT and records every CPU meanwhile into
# $work/TRANSPORT.data (results in $work/TRANSPORT.json). The profile starts after start-up (the dpdk
# link takes a moment longer) and warm-up (1 s) and ends before the run does.
duration=$((profiled + 5))
profile() {
  local transport=$1 settle=$2
  "$bench" -c "$root/config/examples/default.yaml" --set bench.transports="$transport" --set bench.iodepth=128 \
    --set bench.message_size="$size" --set bench.duration="${duration}s" --set bench.progress=off \
    --set bench.output="$work/$transport.json" run >"$work/$transport.log" 2>&1 &
  local bench_pid=$!
  sleep "$settle"
  perf record -a -F 999 -e cpu-clock -o "$work/$transport.data" -- sleep "$profiled" >/dev/null 2>&1
  wait "$bench_pid" || { cat "$work/$transport.log" >&2; echo "ratio-ceiling: the $transport run failed" >&2; exit 1; }
}
profile posix 3
perf report -i "$work/posix.data" --stdio --no-children --sort comm,dso,sym -g none 2>/dev/null >"$work/report.txt"
openssl speed -evp aes-128-gcm -bytes 4096 -seconds 2 2>/dev/null >"$work/aes.txt"

/usr/bin/python3 - "$work/report.txt" "$work/posix.json" "$work/aes.txt" <<'PY'
import json, re, sys
report, result, aes = sys.argv[1:4]
share = {"messenger": 0.0, "copies": 0.0, "kernel": 0.0, "crc": 0.0}
idle = 0.0
row = re.compile(r"^\s*([\d.]+)%\s+(\S+)\s+(\S+)\s+\[(.)\]\s+(.*)$")
copy_sym = re.compile(r"copy_(to|from)_(iter|user)|copy_user|rep_movs")
for line in open(report):
    m = row.match(line)
    if not m:
        continue
    pct, comm, dso, where, sym = float(m[1]), m[2], m[3], m[4], m[5].strip()
    if comm == "swapper":
        idle += pct
        continue
    if not comm.startswith("bypass"):
        continue  # perf itself, sleep, kernel threads
    if where == "k":
        share["copies" if copy_sym.search(sym) else "kernel"] += pct
    else:
        share["messenger"] += pct
        if "crc32" in sym:
            share["crc"] += pct
case = json.load(open(result))["cases"][0]
msgs = case["totals"]["messages_per_second"]
cpu_s = case["cpu"]["client"]["process_seconds"] + case["cpu"]["server"]["process_seconds"]
size = case["message_size"]
busy = share["messenger"] + share["copies"] + share["kernel"]
cpu_us = cpu_s / case["seconds"] / msgs * 1e6  # both processes, per request/reply
aes_rate = None
for line in open(aes):
    if line.lower().startswith("aes-128-gcm"):
        aes_rate = float(line.split()[-1].rstrip("k")) * 1000  # bytes/s for 4096-byte blocks
print(f"posix, depth 128, {size} B request/reply: {msgs:,.0f} msgs/s, {cpu_us:.2f} us of CPU per message (both processes)")
print(f"profile of both processes (share of all samples; idle {idle:.1f} %):")
for k in ("messenger", "copies", "kernel"):
    print(f"  {k:10s} {share[k]:5.1f} %")
print(f"  (crc32c inside messenger: {share['crc']:.1f} %)")
m, c = share["messenger"], share["copies"]
print("ceiling of any transport / posix at depth 128, with:")
print(f"  the kernel's copies, the rest of the transport free  {busy / (m + c):.2f}x")
print(f"  half the kernel's copies, the rest free            {busy / (m + c / 2):.2f}x")
print(f"  no transport cost at all                           {busy / m:.2f}x")
if aes_rate:
    crc_us = cpu_us * share["crc"] / busy
    aes_us = 4 * size / aes_rate * 1e6
    bound = cpu_us / (cpu_us - crc_us + aes_us)
    need = 4 * size / ((cpu_us / 0.85 - cpu_us + crc_us) * 1e-6)
    print(f"secure/crc: AES-128-GCM {aes_rate / 1e9:.2f} GB/s (openssl speed, 4 KiB): {aes_us:.2f} us per message "
          f"against {crc_us:.2f} us of crc32c saved")
    print(f"  ceiling secure/crc {bound:.2f}; 0.85 would need AES-128-GCM at {need / 1e9:.1f} GB/s")
PY

# Where the dpdk run's time goes (same job over net_memif), by library and by symbol.
[ "${DPDK:-1}" = 0 ] && exit 0
profile dpdk 4
msgs=$(/usr/bin/python3 - "$work/dpdk.json" <<'PY'
import json, sys
print(f"{json.load(open(sys.argv[1]))['cases'][0]['totals']['messages_per_second']:,.0f}")
PY
)
echo "dpdk (net_memif), depth 128: $msgs msgs/s; both processes' profile (share of all samples) by library, then the top symbols:"
perf report -i "$work/dpdk.data" --stdio --no-children --sort comm,dso -g none 2>/dev/null | grep -E '^ +[0-9.]+% +bypass' | head -8
perf report -i "$work/dpdk.data" --stdio --no-children --sort comm,sym -g none 2>/dev/null | grep -E '^ +[0-9.]+% +bypass' | head -15
