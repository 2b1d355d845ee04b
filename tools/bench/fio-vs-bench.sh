#!/usr/bin/env bash
# fio with Bypass's engine (libfio_bypass.so) against bypass-bench on the default job's workload:
# 4 KiB messages over posix (loopback) and dpdk (net_memif, two processes), queue depth 1 and 128,
# each side one process on its own CPU with one worker (as config/examples/default.yaml runs it).
# Both tools read one job file this script writes, so their Bypass settings are the same.
#
# bypass-bench's reqrep carries 4 KiB each way; a fio write carries 4 KiB to the receiver and a
# status back, a fio read a request and 4 KiB back. Both fio directions run. Each round runs
# bypass-bench, then fio write, then fio read, for every transport and depth; the table shows each
# figure's median over the rounds, and fio / bypass-bench for IOPS (msgs/s) and p50 latency
# (fio's clat: submission to completion, as bypass-bench times send to reply).
# With posix it also runs fio writes the way Ceph published its ceph-msgr engine's loopback figures
# (4 KiB at depth 1, 8 KiB at depth 128) and prints them beside Ceph's (other hardware).
#
#   tools/bench/fio-vs-bench.sh [BUILD] [ROUNDS]      BUILD: a release tree (default build/release,
#                                                     built when missing); ROUNDS: default 3
# Env: BENCH_SECONDS (measured seconds per run, 5), BENCH_TRANSPORTS ("posix dpdk"),
#      BENCH_DEPTHS ("1 128"). dpdk needs root (memif, DPDK memory).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${1:-build/release}
rounds=${2:-3}
seconds=${BENCH_SECONDS:-5}
transports=${BENCH_TRANSPORTS:-posix dpdk}
depths=${BENCH_DEPTHS:-1 128}

if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --buildtype=release >/dev/null
fi
ninja -C "$build" tools/bypass-bench/bypass-bench tools/fio/libfio_bypass.so >/dev/null ||
  { echo "fio-vs-bench: build failed (is the fio engine configured? tools/setup.sh, -Dfio)" >&2; exit 1; }
bench=$root/$build/tools/bypass-bench/bypass-bench
engine=$root/$build/tools/fio/libfio_bypass.so
[ -x "$bench" ] && [ -f "$engine" ] || { echo "fio-vs-bench: $build has no bypass-bench or fio engine" >&2; exit 1; }
command -v fio >/dev/null || { echo "fio-vs-bench: no fio (tools/setup.sh installs it)" >&2; exit 1; }

work=$(mktemp -d /tmp/fio-vs-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
sock=/run/fio-vs-bench-$$.sock
server_cpu=1 client_cpu=0
# One side's dpdk settings, the same list for bypass-bench (bench.<side>.dpdk) and fio (bypass_set).
server_dpdk=("dpdk.vdev=[\"net_memif0,role=server,socket=$sock,bsize=9216\"]" dpdk.host_ip=10.89.0.1
             dpdk.hw_addr=02:00:00:00:89:01)
client_dpdk=("dpdk.vdev=[\"net_memif0,role=client,socket=$sock,bsize=9216\"]" dpdk.host_ip=10.89.0.2
             dpdk.hw_addr=02:00:00:00:89:02)
yaml_list() { for item in "$@"; do printf "      - '%s'\n" "$item"; done; }
cat > "$work/job.yaml" <<EOF
ms:
  workers: 1
dpdk:
  netmask: 255.255.255.0
  no_huge: auto
  memory: 256M
  in_memory: true
  rss: false
  link_wait: 30s
  idle_sleep: 0s
  mtu: 9000
  mbuf_size: 9472
  mbufs: 8191
bench:
  mode: reqrep
  message_size: 4K
  connections: 1
  warmup: 1s
  progress: "off"
  server:
    cpus: "$server_cpu"
    dpdk:
$(yaml_list "${server_dpdk[@]}")
  client:
    cpus: "$client_cpu"
    dpdk:
$(yaml_list "${client_dpdk[@]}")
EOF
# bypass_set items for fio: quoted, as fio hands the value over whole.
fio_set() { local out="ms.cpus=$1"; shift; for item in "$@"; do out+=" '$item'"; done; echo "$out"; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# run_bench TRANSPORT DEPTH: "msgs/s p50_us mean_us" of one bypass-bench run.
run_bench() {
  "$bench" -c "$work/job.yaml" --set bench.transports="$1" --set bench.iodepth="$2" \
    --set bench.duration="${seconds}s" --set bench.output="$work/bench.json" run >"$work/bench.log" 2>&1 ||
    { cat "$work/bench.log" >&2; echo "fio-vs-bench: bypass-bench failed ($1, depth $2)" >&2; exit 1; }
  python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["cases"][0]
print(c["totals"]["messages_per_second"], c["latency_us"]["p50"], c["latency_us"]["mean"])' "$work/bench.json"
}

# run_fio TRANSPORT DEPTH RW [BS]: "iops p50_us mean_us" of one fio run (receiver and sender: two
# fio processes).
run_fio() {
  local transport=$1 depth=$2 rw=$3 bs=${4:-4k} port host=127.0.0.1 server_set client_set
  port=$(free_port)
  server_set="ms.cpus=$server_cpu" client_set="ms.cpus=$client_cpu"
  if [ "$transport" = dpdk ]; then
    port=7000 host=10.89.0.1
    server_set=$(fio_set "$server_cpu" "${server_dpdk[@]}") client_set=$(fio_set "$client_cpu" "${client_dpdk[@]}")
  fi
  common=(--ioengine=external:"$engine" --thread --ms_type="$transport" --bypass_config="$work/job.yaml" --port="$port")
  taskset -c "$server_cpu" fio --name=receiver "${common[@]}" --bypass_set="$server_set" --receiver=1 --rw=read \
    --size=1g >"$work/receiver.log" 2>&1 &
  local receiver=$!
  if [ "$transport" = dpdk ]; then  # the memif client needs the server's socket (abstract: /proc/net/unix)
    for _ in $(seq 1 300); do grep -q "$sock" /proc/net/unix && break; sleep 0.1; done
  fi
  taskset -c "$client_cpu" fio --name=sender "${common[@]}" --bypass_set="$client_set" --hostname="$host" \
    --rw="$rw" --bs="$bs" --iodepth="$depth" --size=64m --time_based --ramp_time=1 --runtime="$seconds" \
    --bypass_timeout=60 --output-format=json --output="$work/fio.json" >"$work/sender.log" 2>&1 ||
    { cat "$work/sender.log" "$work/receiver.log" >&2; kill "$receiver" 2>/dev/null; echo "fio-vs-bench: fio failed ($transport $rw $depth)" >&2; exit 1; }
  local status=0
  wait "$receiver" || status=$?
  [ "$status" = 0 ] ||
    { cat "$work/receiver.log" >&2; echo "fio-vs-bench: the receiving fio exited $status ($transport $rw $depth)" >&2; exit 1; }
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))["jobs"][0][sys.argv[2]]
print(d["iops"], d["clat_ns"]["percentile"]["50.000000"] / 1000, d["lat_ns"]["mean"] / 1000)' "$work/fio.json" "$([ "$rw" = write ] && echo write || echo read)"
}

echo "fio-vs-bench: $rounds rounds of ${seconds} s per run; load: $(uptime | sed 's/.*load average: //')"
results=$work/results
for round in $(seq 1 "$rounds"); do
  for transport in $transports; do
    for depth in $depths; do
      echo "round $round: $transport depth $depth" >&2
      # One assignment per run: a failed run (exit 1 in its subshell) stops the script (set -e).
      figures=$(run_bench "$transport" "$depth"); echo "$transport $depth bench $figures" >> "$results"
      figures=$(run_fio "$transport" "$depth" write); echo "$transport $depth write $figures" >> "$results"
      figures=$(run_fio "$transport" "$depth" read); echo "$transport $depth read $figures" >> "$results"
    done
  done
  if [[ " $transports " == *" posix "* ]]; then
    echo "round $round: posix writes as Ceph measured its engine" >&2
    figures=$(run_fio posix 1 write 4k); echo "ceph 1 4k $figures" >> "$results"
    figures=$(run_fio posix 128 write 8k); echo "ceph 128 8k $figures" >> "$results"
  fi
done
echo "load after: $(uptime | sed 's/.*load average: //')"
python3 - "$results" "$rounds" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    transport, depth, tool, rate, p50, mean = line.split()
    runs.setdefault((transport, int(depth), tool), []).append((float(rate), float(p50), float(mean)))
print(f"\nmedians of {sys.argv[2]} rounds (rate: bypass-bench msgs/s, fio IOPS; p50 in us)")
print(f"{'case':<18}{'bench msgs/s':>13}{'p50':>8}   {'fio':<6}{'IOPS':>9}{'p50':>8}{'IOPS x':>9}{'p50 x':>8}")
for (transport, depth, tool) in sorted(k for k in runs if k[2] == "bench"):
    b = runs[(transport, depth, "bench")]
    b_rate, b_p50 = statistics.median(r for r, _, _ in b), statistics.median(p for _, p, _ in b)
    for rw in ("write", "read"):
        f = runs.get((transport, depth, rw))
        if not f:
            continue
        f_rate, f_p50 = statistics.median(r for r, _, _ in f), statistics.median(p for _, p, _ in f)
        print(f"{transport + ' 4KiB d' + str(depth):<18}{b_rate:>13.0f}{b_p50:>8.1f}   {rw:<6}{f_rate:>9.0f}{f_p50:>8.1f}"
              f"{f_rate / b_rate:>9.2f}{f_p50 / b_p50:>8.2f}")
ceph = {(1, "4k"): "13.0k IOPS, 71 us", (128, "8k"): "126k-154k IOPS"}
rows = [(d, bs) for (t, d, bs) in runs if t == "ceph"]
if rows:
    print("\nfio writes over posix on loopback beside Ceph's ceph-msgr engine (Ceph's figures: ceph/ceph PR 26932,")
    print("other hardware; fio's lat = submission to completion, mean)")
    print(f"{'case':<14}{'Bypass IOPS':>12}{'p50 us':>8}{'mean us':>9}   Ceph async+posix")
    for depth, bs in sorted(rows):
        f = runs[("ceph", depth, bs)]
        rate, p50, mean = (statistics.median(x[i] for x in f) for i in range(3))
        print(f"{bs + ' QD' + str(depth):<14}{rate:>12.0f}{p50:>8.1f}{mean:>9.1f}   {ceph[(depth, bs)]}")
PY
