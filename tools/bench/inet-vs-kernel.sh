#!/usr/bin/env bash
# The userspace TCP/IP stack (ms.type=dpdk over a net_memif pair, two processes, one lcore each)
# against Linux TCP, side by side, with ratios:
#   pingpong     64 B ping-pong one-way latency p50/p99: inet_bench vs sockperf on loopback
#   bulk         one-connection throughput: inet_bench vs iperf3 on loopback and over a veth pair
#                between two network namespaces; inet_bench over the fastest port pair measured
#                here, net_memif with MTU 9000 (BENCH_MTU; TCP's 64 KiB segments cut in software
#                while copied into mbufs). BENCH_PORT=vhost runs it over a vhost-user (server) /
#                virtio-user (client) pair, MTU 9000, the client handing 64 KiB segments to
#                virtio-user with TSO: no faster here (7.2-7.9 vs 8.0 Gbit/s for memif in the same
#                minute, 0.4-1.3 vs 1.0-2.5 on a more loaded host), both pairs copying each byte once.
#   connections  10,000 concurrent connections on one lcore: inet_bench dpdk vs inet_bench posix
#   accept       connections accepted per second on one lcore: inet_bench dpdk vs posix
#
#   tools/bench/inet-vs-kernel.sh [BUILD_DIR] [pingpong bulk connections accept]
#
# BENCH_IPV6=1 runs the dpdk side over IPv6 (the kernel's side stays on IPv4).
# BUILD_DIR defaults to build/release (meson setup build/release --buildtype=release). Needs root
# (namespaces, veth, hugepages or --no-huge memory), sockperf and iperf3 (tools/setup.sh test).
# Numbers are only as quiet as the machine: run it with nothing else on the CPUs.
# Names: memif socket /run/bypass-F-bench-*.sock, namespaces bpF-a/bpF-b, veth bpF0a/bpF0b,
# subnets 10.70.0.0/24 (memif) and 10.70.1.0/24 (veth); all removed on exit.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build/release}
[ $# -gt 0 ] && shift
modes=("$@")
[ ${#modes[@]} -eq 0 ] && modes=(pingpong bulk connections accept)
bench=$build/tools/bench/inet_bench
[ -x "$bench" ] || { echo "inet-vs-kernel: $bench not built (ninja -C $build tools/bench/inet_bench)" >&2; exit 2; }
for tool in sockperf iperf3 ip; do
  command -v "$tool" >/dev/null || { echo "inet-vs-kernel: $tool missing (tools/setup.sh test)" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "inet-vs-kernel: needs root (network namespaces, DPDK memory)" >&2; exit 2; }

seconds=${BENCH_SECONDS:-5}
server_cpu=${BENCH_SERVER_CPU:-0}
client_cpu=${BENCH_CLIENT_CPU:-1}
sock=/run/bypass-F-bench-$$.sock
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del bpF-a 2>/dev/null || true
  ip netns del bpF-b 2>/dev/null || true
  rm -f "$sock"
}
trap cleanup EXIT

# key=value lookup in a line: field LINE KEY
field() { sed -n "s/.*\b$2=\([^ ]*\).*/\1/p" <<<"$1" | head -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.2f", a / b }'; }
row() { printf '%-34s %14s %14s %8s  %s\n' "$@"; }

# dpdk over memif: common options, then server/client halves. Extra --set flags follow.
# Workers spin (dpdk.idle_sleep=0) as on dedicated CPUs; a larger pool holds 10,000 connections.
dpdk_common=(--set ms.type=dpdk --set dpdk.netmask=255.255.255.0 --set tcp.msl=1s --set dpdk.idle_sleep=0
             --set dpdk.mbufs=65535 --set dpdk.link_wait=30s)
# BENCH_DPDK_SET: more settings for both dpdk sides, e.g. "--set dpdk.tso=false --set dpdk.gso=false"
# (one MSS per segment, to compare).
read -ra extra_settings <<<"${BENCH_DPDK_SET:-}"
dpdk_common+=(${extra_settings[@]+"${extra_settings[@]}"})
# BENCH_IPV6=1: the dpdk pair talks over IPv6 (fd00:70::1 and ::2, dpdk.host_ipv6) instead of IPv4.
server_addr=10.70.0.1:7000
server_v6=()
client_v6=()
if [ "${BENCH_IPV6:-0}" = 1 ]; then
  server_addr="[fd00:70::1]:7000"
  dpdk_common+=(--set dpdk.ipv6_dad_transmits=0)
  server_v6=(--set dpdk.host_ipv6=fd00:70::1)
  client_v6=(--set dpdk.host_ipv6=fd00:70::2)
fi
server_vdev="net_memif0,role=server,socket=$sock,socket-abstract=no"
client_vdev="net_memif0,role=client,socket=$sock,socket-abstract=no"
dpdk_server() {
  "$bench" "${dpdk_common[@]}" --set "dpdk.vdev=[\"$server_vdev\"]" \
    --set dpdk.host_ip=10.70.0.1 ${server_v6[@]+"${server_v6[@]}"} --set ms.cpus=$server_cpu --role server \
    --addr "$server_addr" "$@"
}
dpdk_client() {
  "$bench" "${dpdk_common[@]}" --set "dpdk.vdev=[\"$client_vdev\"]" \
    --set dpdk.host_ip=10.70.0.2 ${client_v6[@]+"${client_v6[@]}"} --set ms.cpus=$client_cpu --role client \
    --addr "$server_addr" "$@"
}
# Runs a server (function + args up to "--") in the background, then the client; prints the
# client's line. Fails loudly when the client reports an error.
pair() {
  local server=() client=()
  while [ "$1" != -- ]; do server+=("$1"); shift; done
  shift
  client=("$@")
  rm -f "$sock"
  "${server[@]}" >/tmp/bypass-F-bench-server.$$ 2>&1 &
  local spid=$!
  pids+=("$spid")
  # Start the client once the server can take it: a memif server creates its socket file
  # (EAL start-up takes seconds on a busy host), a kernel server prints listening=.
  for _ in $(seq 300); do
    [ -S "$sock" ] && break
    grep -q '^listening=' /tmp/bypass-F-bench-server.$$ 2>/dev/null && break
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.1
  done
  local line
  line=$("${client[@]}" 2>/tmp/bypass-F-bench-client.$$ | grep '^role=client' || true)
  wait "$spid" 2>/dev/null || true
  if [ -z "$line" ] || [[ "$line" == *error=* ]]; then
    echo "inet-vs-kernel: run failed: ${client[*]}" >&2
    cat /tmp/bypass-F-bench-server.$$ /tmp/bypass-F-bench-client.$$ >&2
    rm -f /tmp/bypass-F-bench-*.$$
    return 1
  fi
  echo "$line"
  grep '^role=server' /tmp/bypass-F-bench-server.$$ || true
  rm -f /tmp/bypass-F-bench-*.$$
}

sockperf_pingpong() {  # prints "p50 p99" one-way microseconds (sockperf reports RTT/2)
  taskset -c "$server_cpu" sockperf sr --tcp -i 127.0.0.1 -p 17070 >/dev/null 2>&1 &
  local spid=$!
  pids+=("$spid")
  sleep 1
  local out
  out=$(taskset -c "$client_cpu" sockperf pp --tcp -i 127.0.0.1 -p 17070 -m 64 -t "$seconds" 2>&1)
  kill "$spid" 2>/dev/null || true
  local p50 p99
  p50=$(sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' <<<"$out")
  p99=$(sed -n 's/.*percentile 99.000 = *\([0-9.]*\).*/\1/p' <<<"$out")
  echo "$p50 $p99"
}

iperf3_gbit() {  # iperf3_gbit SERVER_PREFIX CLIENT_PREFIX ADDRESS -> Gbit/s received
  local sp=$1 cp=$2 addr=$3
  $sp taskset -c "$server_cpu" iperf3 -s -1 -p 17071 >/dev/null 2>&1 &
  local spid=$!
  pids+=("$spid")
  sleep 1
  $cp taskset -c "$client_cpu" iperf3 -c "$addr" -p 17071 -t "$seconds" -J 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))'
  wait "$spid" 2>/dev/null || true
}

setup_veth() {
  ip netns del bpF-a 2>/dev/null || true
  ip netns del bpF-b 2>/dev/null || true
  ip netns add bpF-a
  ip netns add bpF-b
  ip link add bpF0a netns bpF-a type veth peer name bpF0b netns bpF-b
  ip -n bpF-a addr add 10.70.1.1/24 dev bpF0a
  ip -n bpF-b addr add 10.70.1.2/24 dev bpF0b
  ip -n bpF-a link set bpF0a up
  ip -n bpF-b link set bpF0b up
  ip -n bpF-a link set lo up
  ip -n bpF-b link set lo up
}

echo "inet-vs-kernel: $(date -u +%FT%TZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), server cpu $server_cpu, client cpu $client_cpu"
row "" "bypass dpdk" "kernel" "ratio" "goal"
for mode in "${modes[@]}"; do
  case $mode in
    pingpong)
      line=$(pair dpdk_server --mode pingpong --timeout 120s -- \
             dpdk_client --mode pingpong --size 64 --count 200000 --warmup 20000 --timeout 100s)
      read -r k50 k99 < <(sockperf_pingpong)
      b50=$(field "$line" p50_us)
      b99=$(field "$line" p99_us)
      row "64B ping-pong one-way p50 (us)" "$b50" "$k50" "$(ratio "$b50" "$k50")" "<= 0.25 (sockperf, loopback)"
      row "64B ping-pong one-way p99 (us)" "$b99" "$k99" "$(ratio "$b99" "$k99")" ""
      ;;
    bulk)
      if [ "${BENCH_PORT:-memif}" = vhost ]; then
        # vhost-user shares the client's memory with the server: hugepage files, one per segment.
        mtu=(--set dpdk.mtu=9000 --set dpdk.mbuf_size=9472 --set dpdk.mbufs=16383 --set dpdk.no_huge=no
             --set dpdk.memory=512M '--set=dpdk.eal_args=["--single-file-segments"]')
        saved=("$server_vdev" "$client_vdev")
        server_vdev="net_vhost0,iface=$sock,queues=1,tso=1"
        client_vdev="net_virtio_user0,path=$sock,queues=1"
      else
        # net_memif carries frames up to its bsize devarg (dpdk.mtu_limit's help says why).
        m=${BENCH_MTU:-9000}
        mtu=(--set dpdk.mtu=$m --set dpdk.mbuf_size=$(( m + 676 > 65535 ? 65535 : m + 676 )))
        [ "$m" -gt 1500 ] && mtu+=(--set dpdk.mbufs=$(( m > 9000 ? 4095 : 16383 )) --set dpdk.memory=1024M)
        saved=("$server_vdev" "$client_vdev")
        server_vdev+=",bsize=$(( m + 14 > 2048 ? m + 14 : 2048 ))"
        client_vdev+=",bsize=$(( m + 14 > 2048 ? m + 14 : 2048 ))"
      fi
      line=$(pair dpdk_server "${mtu[@]}" --set tcp.rcv_buffer=8M --mode bulk --timeout 120s -- \
             dpdk_client "${mtu[@]}" --set tcp.snd_buffer=8M --mode bulk --bytes 1T --duration "${seconds}s" --timeout 100s)
      server_vdev=${saved[0]}
      client_vdev=${saved[1]}
      b=$(field "$line" gbit_per_s)
      lo=$(iperf3_gbit "" "" 127.0.0.1)
      setup_veth
      veth=$(iperf3_gbit "ip netns exec bpF-a" "ip netns exec bpF-b" 10.70.1.1)
      row "bulk 1 conn (Gbit/s) vs loopback" "$b" "$lo" "$(ratio "$b" "$lo")" ">= 1 (iperf3, loopback)"
      row "bulk 1 conn (Gbit/s) vs veth" "$b" "$veth" "$(ratio "$b" "$veth")" ">= 2 (iperf3, veth pair)"
      ;;
    connections)
      args=(--mode connections --connections 10000 --concurrency 256 --rounds 3 --timeout 100s)
      line=$(pair dpdk_server --set tcp.syn_backlog=16384 --mode connections --timeout 120s -- dpdk_client "${args[@]}")
      kline=$(pair "$bench" --set ms.type=posix --role server --mode connections --addr 127.0.0.1:17072 --timeout 120s -- \
              "$bench" --set ms.type=posix --role client --addr 127.0.0.1:17072 "${args[@]}")
      row "10k conns: established/s" "$(field "$line" conn_per_s)" "$(field "$kline" conn_per_s)" \
        "$(ratio "$(field "$line" conn_per_s)" "$(field "$kline" conn_per_s)")" "all 10,000 open on one lcore"
      row "10k conns: ping all (ms)" "$(field "$line" ping_all_ms)" "$(field "$kline" ping_all_ms)" \
        "$(ratio "$(field "$line" ping_all_ms)" "$(field "$kline" ping_all_ms)")" ""
      ;;
    accept)
      args=(--mode accept --concurrency 64 --duration "${seconds}s" --timeout 100s)
      line=$(pair dpdk_server "${args[@]}" -- dpdk_client "${args[@]}")
      kline=$(pair "$bench" --set ms.type=posix --role server --addr 127.0.0.1:17073 "${args[@]}" -- \
              "$bench" --set ms.type=posix --role client --addr 127.0.0.1:17073 "${args[@]}")
      ba=$(field "$(grep role=server <<<"$line")" accept_per_s)
      ka=$(field "$(grep role=server <<<"$kline")" accept_per_s)
      row "accepts/s on one lcore" "$ba" "$ka" "$(ratio "$ba" "$ka")" "(kernel: posix loopback)"
      ;;
    *) echo "inet-vs-kernel: unknown mode '$mode' (pingpong bulk connections accept)" >&2; exit 2 ;;
  esac
done
