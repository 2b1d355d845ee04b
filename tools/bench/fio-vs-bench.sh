#!/usr/bin/env bash
# fio with Bypass's engine (libfio_bypass.so) against bypass-bench on the same workload: 4 KiB
# messages over posix (loopback) and dpdk (net_memif, two processes), queue depth 1 and 128, each
# side one process on its own CPU with one worker (as config/examples/default.yaml runs it). Both
# tools read one job file this script writes, so their Bypass settings are the same.
#
# Like for like: a fio write carries 4 KiB to the receiver and a status back, a fio read a small
# request and 4 KiB back; bypass-bench runs each shape with bench.reply_size: "write" is 4 KiB
# requests answered with empty replies, "read" 16-byte requests answered with 4 KiB. Each round
# runs, for every transport and depth, bypass-bench then fio for each shape (and, with
# BENCH_FIO_BASELINE, fio once more with that bypass_poll, e.g. workers: the engine before the job
# thread polled); the table shows each figure's median over the rounds, and fio / bypass-bench for
# IOPS (msgs/s) and p50 latency (fio's clat: submission to completion, as bypass-bench times send
# to reply).
# The sender's fio options for like for like: iodepth_batch_complete_max=<iodepth> (fio's default, 1,
# reaps one completion per getevents call where bypass-bench's client handles every reply its worker
# read), iodepth_batch_submit=<iodepth> (fio's default, 1, commits every request on its own: where
# the job's thread polls the stack, one write per request, where bypass-bench's client writes all
# the requests it sent while handling a read at once), disable_slat=1 and disable_lat=1 (bypass-bench keeps one latency sample per message, as
# fio then does: clat, the figure compared, is kept for every io).
# The ceiling: each round also runs fio's null ioengine (no network) on the sending CPU with the same
# rw, iodepth and options, so fio's own time per io on this machine is measured beside the runs; the
# table's "ceil x" is then the best IOPS ratio fio can reach, t_bench / (t_bench + t_fio), and "recv x"
# the same bound from the receiver's io_u per served request. A row whose ceiling is below 0.9 is
# bounded there by fio itself.
# posix like for like: fio's job thread polls its stack (64 idle polls before it sleeps in epoll),
# so each posix case runs once per BENCH_POSIX_BUSY_POLL value with posix.busy_poll set to it for
# both tools (bypass-bench's workers, fio's job threads: the same "poll epoll this long after the
# last event, then sleep"); rows "posix+bp50us" run with 50us, rows "posix" with 0s (bypass-bench's
# worker sleeps at once, fio's job thread still polls 64 times first: not like for like).
# With posix it also runs fio writes the way Ceph published its ceph-msgr engine's loopback figures
# (4 KiB at depth 1, 8 KiB at depth 128) and prints them beside Ceph's (other hardware).
#
# Over dpdk every side is one thread that busy-polls its stack, so the CPU time it got is the share
# of its CPU it was given: the "cpu" columns show the lower of the two sides' (median over the
# rounds). Below 90 % the figures measure the machine, not the engine: a request/reply pipeline only
# moves while both sides run at once, and a side the kernel takes off its CPU for a time slice
# stalls every request in flight for that long (depth 128 writes at a few thousand IOPS with p50 in
# milliseconds on a shared 2-CPU machine; docs/fio.md).
#
#   tools/bench/fio-vs-bench.sh [BUILD] [ROUNDS]      BUILD: a release tree (default build/release,
#                                                     built when missing); ROUNDS: default 3
# Env: BENCH_SECONDS (measured seconds per run, 5), BENCH_TRANSPORTS ("posix dpdk"),
#      BENCH_DEPTHS ("1 128"), BENCH_FIO_POLL (the engine's bypass_poll, default auto),
#      BENCH_FIO_BASELINE (a second bypass_poll to run beside it; empty: none),
#      BENCH_POSIX_BUSY_POLL (posix.busy_poll values for the posix cases, "50us 0s"),
#      BENCH_FIO_LATENCY (fio's latency compared with bypass-bench's: clat, the default, or lat),
#      BENCH_FIO_SIZE (the sender's file, i.e. its object on the receiver, 4m: 1,024 blocks of
#      4 KiB, 8 times depth 128, so the object stays in the cache as bypass-bench's buffers do; at 64m
#      the receiver's copies stream through memory, ~20 % of its CPU at depth 128 over dpdk).
#      dpdk needs root (memif, DPDK memory).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${1:-build/release}
rounds=${2:-3}
seconds=${BENCH_SECONDS:-5}
transports=${BENCH_TRANSPORTS:-posix dpdk}
depths=${BENCH_DEPTHS:-1 128}
fio_poll=${BENCH_FIO_POLL:-auto}
fio_baseline=${BENCH_FIO_BASELINE:-}
posix_busy_polls=${BENCH_POSIX_BUSY_POLL:-50us 0s}
# fio's latency compared: clat (default) starts when fio's queue and commit returned, i.e. after the
# request was sent (fio's convention: the submission is slat); lat starts when fio took the io_u,
# before the engine sends, as bypass-bench's starts before its send (one more clock read per io).
fio_latency=${BENCH_FIO_LATENCY:-clat}
case $fio_latency in
  clat) fio_latency_options=(--disable_slat=1 --disable_lat=1) ;;
  lat) fio_latency_options=(--disable_slat=1 --disable_clat=1 --lat_percentiles=1 --clat_percentiles=0) ;;
  *) echo "fio-vs-bench: BENCH_FIO_LATENCY must be clat or lat, not '$fio_latency'" >&2; exit 1 ;;
esac
busy_poll=0s  # posix.busy_poll of the current posix case (both tools)
fio_size=${BENCH_FIO_SIZE:-4m}

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

# run_bench TRANSPORT DEPTH SHAPE: "msgs/s p50_us mean_us" of one bypass-bench run; SHAPE write:
# 4 KiB requests, empty replies; read: 16-byte requests, 4 KiB replies (see the file comment).
run_bench() {
  local sizes=(--set bench.message_size=4K --set bench.reply_size=0)
  [ "$3" = read ] && sizes=(--set bench.message_size=16 --set bench.reply_size=4K)
  "$bench" -c "$work/job.yaml" --set bench.transports="$1" --set bench.iodepth="$2" "${sizes[@]}" --set posix.busy_poll="$busy_poll" \
    --set bench.duration="${seconds}s" --set bench.output="$work/bench.json" run >"$work/bench.log" 2>&1 ||
    { cat "$work/bench.log" >&2; echo "fio-vs-bench: bypass-bench failed ($1, depth $2, $3)" >&2; exit 1; }
  python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["cases"][0]
# The share of its CPU each worker got over the measured seconds (dpdk: it busy-polls).
share = min(min(1.0, sum(c["cpu"][side]["workers"]) / c["seconds"]) for side in ("client", "server"))
cpu = f"{100 * share:.0f}" if sys.argv[2] == "dpdk" else "-"
print(c["totals"]["messages_per_second"], c["latency_us"]["p50"], c["latency_us"]["mean"], cpu)' "$work/bench.json" "$1"
}

# run_fio TRANSPORT DEPTH RW [BS [POLL]]: "iops p50_us mean_us cpu" of one fio run (receiver and
# sender: two fio processes, both with bypass_poll POLL, default BENCH_FIO_POLL; cpu: the lower of
# the two job threads' CPU shares where each polls its dpdk stack, else "-").
run_fio() {
  local transport=$1 depth=$2 rw=$3 bs=${4:-4k} poll=${5:-$fio_poll} port host=127.0.0.1 server_set client_set
  port=$(free_port)
  server_set="ms.cpus=$server_cpu posix.busy_poll=$busy_poll" client_set="ms.cpus=$client_cpu posix.busy_poll=$busy_poll"
  if [ "$transport" = dpdk ]; then
    port=7000 host=10.89.0.1
    server_set=$(fio_set "$server_cpu" "${server_dpdk[@]}") client_set=$(fio_set "$client_cpu" "${client_dpdk[@]}")
  fi
  common=(--ioengine=external:"$engine" --thread --ms_type="$transport" --bypass_config="$work/job.yaml" --port="$port"
          --bypass_poll="$poll")
  taskset -c "$server_cpu" fio --name=receiver "${common[@]}" --bypass_set="$server_set" --receiver=1 --rw=read \
    --size=1g --output-format=json --output="$work/receiver.json" >"$work/receiver.log" 2>&1 &
  local receiver=$!
  if [ "$transport" = dpdk ]; then  # the memif client needs the server's socket (abstract: /proc/net/unix)
    for _ in $(seq 1 300); do grep -q "$sock" /proc/net/unix && break; sleep 0.1; done
  fi
  taskset -c "$client_cpu" fio --name=sender "${common[@]}" --bypass_set="$client_set" --hostname="$host" \
    --rw="$rw" --bs="$bs" --iodepth="$depth" --size="$fio_size" --time_based --ramp_time=1 --runtime="$seconds" \
    --iodepth_batch_submit="$depth" --iodepth_batch_complete_max="$depth" "${fio_latency_options[@]}" \
    --bypass_timeout=60 --output-format=json --output="$work/fio.json" >"$work/sender.log" 2>&1 ||
    { cat "$work/sender.log" "$work/receiver.log" >&2; kill "$receiver" 2>/dev/null; echo "fio-vs-bench: fio failed ($transport $rw $depth)" >&2; exit 1; }
  local status=0
  wait "$receiver" || status=$?
  [ "$status" = 0 ] ||
    { cat "$work/receiver.log" >&2; echo "fio-vs-bench: the receiving fio exited $status ($transport $rw $depth)" >&2; exit 1; }
  local polled=no
  [ "$transport" = dpdk ] && [ "$poll" != workers ] && polled=yes
  python3 -c 'import json, sys
job = json.load(open(sys.argv[1]))["jobs"][0]
d = job[sys.argv[2]]
# usr_cpu + sys_cpu of a thread job: the CPU time of its thread over its run, in percent.
share = min(j["usr_cpu"] + j["sys_cpu"] for j in (job, json.load(open(sys.argv[3]))["jobs"][0]))
cpu = f"{min(share, 100):.0f}" if sys.argv[4] == "yes" else "-"
key = sys.argv[5] + "_ns"
print(d["iops"], d[key]["percentile"]["50.000000"] / 1000, d[key]["mean"] / 1000, cpu)' \
    "$work/fio.json" "$([ "$rw" = write ] && echo write || echo read)" "$work/receiver.json" "$polled" "$fio_latency"
}

# run_null DEPTH RW [RECEIVER]: fio's own cost per io on this machine, with no network: fio's null
# ioengine on the sending CPU with the sender's options and depth ("iops"; RECEIVER=1: the
# receiver's case instead, one synchronous io_u per served request with no latency or bandwidth
# samples, as the engine sets them up). The null engine completes an io at once (queued and reaped in getevents
# where iodepth > 1), so 1 / iops, counted per second of CPU the job got, is what fio spends per io
# outside any engine.
run_null() {
  local args=(--rw="$2" --iodepth="$1" --iodepth_batch_submit="$1" --iodepth_batch_complete_max="$1" --disable_slat=1
              --disable_lat=1)
  [ "${3:-0}" = 1 ] && args=(--rw=read --iodepth=1 --disable_slat=1 --disable_lat=1 --disable_clat=1 --disable_bw_measurement=1)
  taskset -c "$client_cpu" fio --name=null --ioengine=null --thread --bs=4k --size=64m --time_based --ramp_time=1 \
    --runtime=2 "${args[@]}" --output-format=json --output="$work/null.json" >"$work/null.log" 2>&1 ||
    { cat "$work/null.log" >&2; echo "fio-vs-bench: fio's null ioengine failed (depth $1, $2)" >&2; exit 1; }
  # IOPS per second of the CPU fio got (usr_cpu + sys_cpu): the machine's other load left out.
  python3 -c 'import json, sys
job = json.load(open(sys.argv[1]))["jobs"][0]
print(job[sys.argv[2]]["iops"] / max(0.01, min(1.0, (job["usr_cpu"] + job["sys_cpu"]) / 100)))' "$work/null.json" "$([ "$2" = write ] && [ "${3:-0}" != 1 ] && echo write || echo read)"
}

echo "fio-vs-bench: $rounds rounds of ${seconds} s per run; fio bypass_poll=$fio_poll${fio_baseline:+, baseline bypass_poll=$fio_baseline}, size=$fio_size; posix.busy_poll: $posix_busy_polls; fio latency: $fio_latency"
echo "load before: $(uptime | sed 's/.*load average: //')"
results=$work/results
for round in $(seq 1 "$rounds"); do
  for depth in $depths; do
    for shape in write read; do
      iops=$(run_null "$depth" "$shape"); echo "null $depth $shape $iops - - -" >> "$results"
    done
  done
  iops=$(run_null 1 read 1); echo "null-receiver 1 read $iops - - -" >> "$results"
  for transport in $transports; do
    for busy_poll in $([ "$transport" = posix ] && echo "$posix_busy_polls" || echo 0s); do
      label=$transport
      [ "$transport" = posix ] && [ "$busy_poll" != 0s ] && label="posix+bp$busy_poll"
      for depth in $depths; do
        echo "round $round: $label depth $depth" >&2
        # One assignment per run: a failed run (exit 1 in its subshell) stops the script (set -e).
        for shape in write read; do
          figures=$(run_bench "$transport" "$depth" "$shape"); echo "$label $depth bench-$shape $figures" >> "$results"
          figures=$(run_fio "$transport" "$depth" "$shape"); echo "$label $depth $shape $figures" >> "$results"
          if [ -n "$fio_baseline" ]; then
            figures=$(run_fio "$transport" "$depth" "$shape" 4k "$fio_baseline")
            echo "$label $depth baseline-$shape $figures" >> "$results"
          fi
        done
      done
    done
  done
  busy_poll=0s
  if [[ " $transports " == *" posix "* ]]; then
    echo "round $round: posix writes as Ceph measured its engine" >&2
    figures=$(run_fio posix 1 write 4k); echo "ceph 1 4k $figures" >> "$results"
    figures=$(run_fio posix 128 write 8k); echo "ceph 128 8k $figures" >> "$results"
  fi
done
echo "load after: $(uptime | sed 's/.*load average: //')"
python3 - "$results" "$rounds" "$fio_poll" "$fio_baseline" "$fio_latency" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    transport, depth, tool, rate, p50, mean, cpu = line.split()
    number = lambda text: None if text == "-" else float(text)
    runs.setdefault((transport, int(depth), tool), []).append((float(rate), number(p50), number(mean), number(cpu)))
poll, baseline = sys.argv[3], sys.argv[4]
med = lambda rows, i: statistics.median(r[i] for r in rows)
def cpu(rows):
    shares = [r[3] for r in rows if r[3] is not None]
    return statistics.median(shares) if shares else None
cpu_text = lambda share: "-" if share is None else f"{share:.0f}"
starved = []
print(f"\nmedians of {sys.argv[2]} rounds (rate: bypass-bench msgs/s, fio IOPS; p50 in us: fio's {sys.argv[5]}); fio with bypass_poll={poll}")
print("write: 4 KiB requests, empty replies (bypass-bench bench.reply_size=0) / fio rw=write bs=4k")
print("read: 16 B requests, 4 KiB replies (bench.message_size=16, bench.reply_size=4K) / fio rw=read bs=4k")
print("cpu %: the lower of the two sides' share of their CPU (dpdk: each side one busy-polling thread)")
print("ceil x: the best IOPS x fio can reach, t_bench / (t_bench + t_fio): t_bench = 1 / bypass-bench's msgs/s,")
print("  t_fio = fio's own CPU time per io (its null ioengine's CPU seconds / ios, same rw, iodepth and options,")
print("  on the sender's CPU, measured in the same rounds: fio us); recv x: the same bound from the receiver's io_u per served")
print("  request (null ioengine, one synchronous io at a time, no latency or bandwidth samples); mean x: mean latencies' ratio")
print("out us: depth 1, fio's time per io outside its clat window (1 / IOPS - mean clat)")
print("posix+bpX: both tools with posix.busy_poll=X (like for like); posix: 0s (bypass-bench's worker sleeps in epoll at")
print("  once, fio's job thread polls 64 times before it sleeps: not like for like)")
null_iops = {(d, tool): med(rows, 0) for (t, d, tool), rows in runs.items() if t == "null"}
receiver_iops = next((med(rows, 0) for (t, d, tool), rows in runs.items() if t == "null-receiver"), None)
bound = lambda rate, own_iops: "-" if own_iops is None else f"{1 / (1 + rate / own_iops):.2f}"
head = (f"{'case':<24}{'shape':<7}{'bench msgs/s':>13}{'p50':>8}{'cpu %':>6}{'fio IOPS':>10}{'p50':>8}{'cpu %':>6}"
        f"{'IOPS x':>8}{'p50 x':>7}{'mean x':>7}{'fio us':>7}{'ceil x':>7}{'recv x':>7}{'out us':>7}")
if baseline:
    head += f"   {'fio ' + baseline + ' IOPS':>20}{'p50':>8}{'IOPS x':>8}{'p50 x':>7}"
print(head)
for (transport, depth, tool) in sorted(k for k in runs if k[2].startswith("bench-")):
    shape = tool[len("bench-"):]
    b = runs[(transport, depth, tool)]
    b_rate, b_p50, b_cpu = med(b, 0), med(b, 1), cpu(b)
    f = runs.get((transport, depth, shape))
    if not f:
        continue
    f_rate, f_p50, f_cpu = med(f, 0), med(f, 1), cpu(f)
    b_mean, f_mean = med(b, 2), med(f, 2)
    # At depth 1 fio's cycle is one clat plus what fio does between a completion and the next
    # submission: 1 / IOPS - mean clat (at depth > 1 the ios overlap: not shown).
    outside = f"{1e6 / f_rate - f_mean:.1f}" if depth == 1 else "-"
    starved += [s for s in (b_cpu, f_cpu) if s is not None and s < 90]
    row = (f"{transport + ' 4KiB d' + str(depth):<24}{shape:<7}{b_rate:>13.0f}{b_p50:>8.1f}{cpu_text(b_cpu):>6}"
           f"{f_rate:>10.0f}{f_p50:>8.1f}{cpu_text(f_cpu):>6}{f_rate / b_rate:>8.2f}{f_p50 / b_p50:>7.2f}"
           f"{f_mean / b_mean:>7.2f}{1e6 / null_iops.get((depth, shape), float('inf')):>7.2f}"
           f"{bound(b_rate, null_iops.get((depth, shape))):>7}{bound(b_rate, receiver_iops):>7}"
           f"{outside:>7}")
    g = runs.get((transport, depth, "baseline-" + shape))
    if g:
        g_rate, g_p50 = med(g, 0), med(g, 1)
        row += f"   {g_rate:>20.0f}{g_p50:>8.1f}{g_rate / b_rate:>8.2f}{g_p50 / b_p50:>7.2f}"
    print(row)
if starved:
    print(f"warning: a side got only {min(starved):.0f} % of its CPU (other processes ran there): those rows measure the")
    print("machine's scheduling, not the tools (a pipeline stalls while either side is off its CPU; docs/fio.md)")
ceph = {(1, "4k"): "13.0k IOPS, 71 us", (128, "8k"): "126k-154k IOPS"}
rows = [(d, bs) for (t, d, bs) in runs if t == "ceph"]
if rows:
    print("\nfio writes over posix on loopback beside Ceph's ceph-msgr engine (Ceph's figures: ceph/ceph PR 26932,")
    print("other hardware; Bypass's mean: fio's clat, from submission to completion; Ceph's: fio's lat)")
    print(f"{'case':<14}{'Bypass IOPS':>12}{'p50 us':>8}{'mean us':>9}   Ceph async+posix")
    for depth, bs in sorted(rows):
        f = runs[("ceph", depth, bs)]
        rate, p50, mean = (med(f, i) for i in range(3))
        print(f"{bs + ' QD' + str(depth):<14}{rate:>12.0f}{p50:>8.1f}{mean:>9.1f}   {ceph[(depth, bs)]}")
PY
