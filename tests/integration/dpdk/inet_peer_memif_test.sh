#!/usr/bin/env bash
# Two Bypass processes over net_memif, each on its own lcore (server pinned to CPU 1, client to
# CPU 0): 64 MiB of seeded random bytes echoed byte-exact over 4 connections; then a client to a
# port nobody listens on must fail with ECONNREFUSED (so the checks can fail); then two messengers
# (msgr2, lossless client) exchange requests and replies checked byte-exact.
#
#   inet_peer_memif_test.sh INET_PEER_BINARY MSGR_PEER_BINARY CONFIG_EXAMPLES_DIR [jumbo|jumbo64k|vhost][-faults|-ipv6]
# With "jumbo" both sides run MTU 9000 over memif (bsize 9216, 9 KiB mbufs: dpdk.mtu_limit's help
# says why memif allows it), 256 MiB echoed; the echo must have moved its bytes in jumbo segments,
# TCP's large segments cut in software while copied into mbufs (memif has no TSO); "jumbo64k" runs
# MTU 64,000 (bsize 64014, 64 KiB mbufs) instead. With "vhost"
# the port pair is net_vhost (server) and net_virtio_user (client) instead of memif, MTU 9000,
# 256 MiB echoed (hugepages required: vhost-user maps the client's memory); the client's large
# segments go to virtio-user with TSO (the vhost-user peer cuts or passes them on whole), the
# server's (net_vhost advertises no TSO) are cut in software. "-faults" adds the pmd fault shim on
# both sides' receive bursts: 1 % loss, 2 % reordering, 0.5 % duplication. "-ipv6" runs the echo
# alone (64 MiB) over IPv6 (fd00:98::1 and ::2, dpdk.host_ipv6): the same large segments (TSO,
# software cuts, LRO on the vhost side) as over IPv4, checked by the same counters.
# Runs in network namespaces of its own (test_lib.sh), so its abstract memif socket meets no other
# test's; the vhost modes hold the machine's hugepage lock while their processes run, the others
# run on plain memory (dpdk.no_huge=yes).
# Needs root (DPDK memory and the memif socket); fails when it is missing.
set -euo pipefail

peer=$1
msgr_peer=$2
examples=$3
mode=${4:-standard}
faults=no
ipv6=no
case "$mode" in
  *-faults) faults=yes; mode=${mode%-faults} ;;
  *-ipv6) ipv6=yes; mode=${mode%-ipv6} ;;
esac
name=G  # this suite's tag: every resource it creates carries it
memif_args=
jumbo_settings=(--set dpdk.no_huge=yes)  # memif copies: hugepages buy nothing here
if [ "$mode" = jumbo ]; then
  name=J
  memif_args=,bsize=9216
  jumbo_settings+=(--set dpdk.mtu=9000 --set dpdk.mbuf_size=9472 --set dpdk.mbufs=8191)
elif [ "$mode" = jumbo64k ]; then
  # memif frames up to its bsize of 65,014 bytes: one TCP segment of ~64 KiB per frame, no cutting.
  name=S  # sixty-four KiB
  memif_args=,bsize=64014
  jumbo_settings+=(--set dpdk.mtu=64000 --set dpdk.mbuf_size=65535 --set dpdk.mbufs=4095 --set dpdk.memory=1024M)
elif [ "$mode" = vhost ]; then
  name=V
  # The client fills its hugepages before it attaches, which under ASan on a busy host outlasts the
  # server's default 5 s dpdk.link_wait: the server then gives up and takes its socket away.
  # 128 MiB each: 8191 mbufs of 9.5 KiB take 78 MiB (the machine's 1 GiB of hugepages is shared).
  jumbo_settings=(--set dpdk.mtu=9000 --set dpdk.mbuf_size=9472 --set dpdk.mbufs=8191 --set dpdk.no_huge=no
                  --set dpdk.memory=128M '--set=dpdk.eal_args=["--single-file-segments"]' --set dpdk.link_wait=30s)
fi
if [ "$faults" = yes ]; then
  name=${name}F
  jumbo_settings+=(--set dpdk.fault_drop=10000 --set dpdk.fault_reorder=20000 --set dpdk.fault_duplicate=5000
                   --set dpdk.fault_seed=12 --set tcp.rto_min=20ms)
fi
socket=/run/bypass-memif-$name.sock  # abstract (DPDK's default): nothing on disk to clean up
port=7300
server_ip=10.98.0.1
bytes=64M
[ "$mode" != standard ] && bytes=256M
server_v6=()
client_v6=()
if [ "$ipv6" = yes ]; then
  name=${name}6
  server_ip=fd00:98::1
  server_v6=(--set dpdk.host_ipv6=$server_ip --set dpdk.ipv6_dad_transmits=0)
  client_v6=(--set dpdk.host_ipv6=fd00:98::2 --set dpdk.ipv6_dad_transmits=0)
  bytes=64M
fi
server_addr=$server_ip:$port
[ "$ipv6" = yes ] && server_addr="[$server_ip]:$port"
connections=4
source "$(dirname "$0")/../../support/test_lib.sh"
own_network_namespace "$@"
test_begin memif-$name

require_root "DPDK memory and the memif socket"
require_executable "$peer" "inet_peer binary"
require_executable "$msgr_peer" "msgr_peer binary"
[ "$(nproc)" -ge 2 ] || fail "needs 2 CPUs to pin the two processes apart (have $(nproc))"

server_vdev="--set=dpdk.vdev=[\"net_memif0,role=server,socket=$socket$memif_args\"]"
client_vdev="--set=dpdk.vdev=[\"net_memif0,role=client,socket=$socket$memif_args\"]"
if [ "$mode" = vhost ]; then
  hold_hugepages_lock  # until the script ends: every phase below starts a vhost-user pair
  socket=$work/vhost.sock  # a file: the virtio-user client waits for it (dpdk.link_wait)
  server_vdev="--set=dpdk.vdev=[\"net_vhost0,iface=$socket,queues=1,tso=1\"]"
  client_vdev="--set=dpdk.vdev=[\"net_virtio_user0,path=$socket,queues=1\"]"
fi

# The server's port comes up only once the client attaches, so the server prints its ready line
# after the client started; the client waits for the listener (--wait-for-server) instead.
rm -f "$socket"  # a vhost-user socket file left by the previous server would pass for the new one's
timeout 150 "$peer" -c "$examples/dpdk-memif-server.yaml" "$server_vdev" ${jumbo_settings[@]+"${jumbo_settings[@]}"} \
  ${server_v6[@]+"${server_v6[@]}"} --set ms.cpus=1 echo-server --listen "$server_addr" --serve $((connections + 1)) --lifetime 120s \
  >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
track "$server_pid"
wait_for_socket "$socket" "$server_pid" "$work/server.err"

echo "client: $bytes over $connections connections to $server_addr"
start=$(date +%s.%N)
if ! timeout 150 "$peer" -c "$examples/dpdk-memif-client.yaml" "$client_vdev" ${jumbo_settings[@]+"${jumbo_settings[@]}"} \
       ${client_v6[@]+"${client_v6[@]}"} --set ms.cpus=0 echo-client --to "$server_addr" --bytes $bytes --connections $connections --seed 71 \
       --timeout 90s --wait-for-server 30s >"$work/client.out" 2>"$work/client.err"; then
  cat "$work/client.out" "$work/client.err" "$work/server.out" "$work/server.err" >&2
  fail "memif echo client failed"
fi
end=$(date +%s.%N)
cat "$work/client.out"
grep -q "^ok " "$work/client.out" || fail "client printed no ok line"
grep -qx "worker 0 cpus 0" "$work/client.out" || fail "the client's worker is not pinned to CPU 0 alone"
if [ "$mode" != standard ]; then
  # 64 MiB out and back in 1460-byte segments would take over 46,000 data segments plus ACKs; in
  # 8960-byte segments about 7,500. Fewer than one segment per 3,000 bytes proves jumbo segments.
  # (The same ratio holds for 256 MiB.)
  sent=$(grep -o 'tcp_segments_sent=[0-9]*' "$work/client.out" | head -1 | cut -d= -f2)
  [ -n "$sent" ] || fail "client printed no tcp_segments_sent"
  limit=$(( $(numfmt --from=iec "$bytes") / 3000 ))
  echo "jumbo: client sent $sent TCP segments for $bytes (limit $limit)"
  [ "$sent" -lt "$limit" ] || fail "client sent $sent segments for $bytes: not jumbo segments"
  # Large segments: the client's go to the port whole (TSO on virtio-user) or are cut in software.
  counter() { grep -o "$1=[0-9]*" "$2" | head -1 | cut -d= -f2; }
  if [ "$mode" = jumbo64k ]; then
    :  # segments of one SMSS already fill the frame
  elif [ "$mode" = vhost ]; then
    tso=$(counter tso_segments "$work/client.out")
    echo "tso: client handed $tso large segments to virtio-user"
    # At least a quarter of the data in 64 KiB segments (1024 for 256 MiB, 256 for 64 MiB).
    [ "${tso:-0}" -ge $(( $(numfmt --from=iec "$bytes") / 262144 )) ] ||
      fail "the client used no TSO (tso_segments=${tso:-none})"
  else
    cut=$(counter cut_segments "$work/client.out")
    echo "gso: client cut $cut large segments in software"
    [ "${cut:-0}" -gt 1000 ] || fail "the client cut no large segments (cut_segments=${cut:-none})"
  fi
fi
# --wait-for-server's probe is the server's extra connection: it exits by itself after serving all.
rc=0
reap "$server_pid" || rc=$?
cat "$work/server.out"
[ "$rc" = 0 ] || { cat "$work/server.err" >&2; fail "memif echo server exited with $rc"; }
grep -qF "ready $server_addr" "$work/server.out" || fail "server printed no ready line"
grep -qx "worker 0 cpus 1" "$work/server.out" || fail "the server's worker is not pinned to CPU 1 alone"
grep -q "^served $((connections + 1)) connections\$" "$work/server.out" || fail "server did not serve every connection"
echo "memif echo: $bytes in $(echo "$end - $start" | bc) s wall clock (both EAL start-ups included)"
if [ "$ipv6" = yes ]; then
  # The server's segments (net_vhost has no TSO) were cut in software, over IPv6 too.
  cut=$(counter cut_segments "$work/server.out")
  echo "gso: server cut $cut large IPv6 segments in software"
  [ "${cut:-0}" -gt 100 ] || fail "the server cut no large segments (cut_segments=${cut:-none})"
  # And received the client's whole (net_vhost marks them RTE_MBUF_F_RX_LRO): LRO over IPv6.
  lro=$(counter tcp_lro_frames "$work/server.out")
  echo "lro: server received $lro large IPv6 segments whole"
  [ "${lro:-0}" -gt 100 ] || fail "the server received no large segments (tcp_lro_frames=${lro:-none})"
  echo "PASS"
  exit 0
fi

# Negative case: a listener on the wrong port. The client must give up with a clear error (not
# under faults: a lost RST turns the refusal into a timeout).
if [ "$faults" = no ]; then
rm -f "$socket"  # a vhost-user socket file left by the previous server would pass for the new one's
timeout 60 "$peer" -c "$examples/dpdk-memif-server.yaml" "$server_vdev" ${jumbo_settings[@]+"${jumbo_settings[@]}"} --set ms.cpus=1 \
  echo-server --listen "$server_ip:$((port + 1))" --lifetime 30s >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
track "$server_pid"
wait_for_socket "$socket" "$server_pid" "$work/server.err"
rc=0
timeout 60 "$peer" -c "$examples/dpdk-memif-client.yaml" "$client_vdev" ${jumbo_settings[@]+"${jumbo_settings[@]}"} --set ms.cpus=0 \
  echo-client --to "$server_ip:$port" --bytes 1M --timeout 10s >"$work/client.out" 2>"$work/client.err" || rc=$?
cat "$work/client.err"
[ "$rc" = 1 ] || fail "client to a closed port exited with $rc, expected 1"
grep -q "ECONNREFUSED" "$work/client.err" || fail "client to a closed port did not report ECONNREFUSED"
stop "$server_pid" || true
fi

# The messenger: a lossless client retries a refused connect itself, so it needs no wait for the
# server's listener; the server exits 0 on SIGTERM once the client checked every reply.
messages=1000
rm -f "$socket"  # a vhost-user socket file left by the previous server would pass for the new one's
timeout 150 "$msgr_peer" -c "$examples/dpdk-memif-server.yaml" "$server_vdev" ${jumbo_settings[@]+"${jumbo_settings[@]}"} --set ms.cpus=1 \
  server --bind "$server_ip:$port" --lifetime 120s >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
track "$server_pid"
wait_for_socket "$socket" "$server_pid" "$work/server.err"
if ! timeout 150 "$msgr_peer" -c "$examples/dpdk-memif-client.yaml" "$client_vdev" ${jumbo_settings[@]+"${jumbo_settings[@]}"} --set ms.cpus=0 \
       client --to "$server_ip:$port" --messages $messages --max-size 64K --depth 8 --seed 71 \
       --timeout 90s >"$work/client.out" 2>"$work/client.err"; then
  cat "$work/client.out" "$work/client.err" "$work/server.out" "$work/server.err" >&2
  fail "messenger client over memif failed"
fi
cat "$work/client.out"
grep -q "^ok $messages replies" "$work/client.out" || fail "messenger client printed no ok line"
rc=0
stop "$server_pid" || rc=$?
[ "$rc" = 0 ] || { cat "$work/server.out" "$work/server.err" >&2; fail "messenger server exited with $rc"; }
echo "PASS"
