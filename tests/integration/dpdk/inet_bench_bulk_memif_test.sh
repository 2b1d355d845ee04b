#!/usr/bin/env bash
# The bulk benchmark of tools/bench/inet-vs-kernel.sh must finish: two inet_bench processes over
# net_memif, one connection streaming for a second, then the server reports the byte count and
# closes. The memif rings hold 64 frames (rsize=6), so the server's ACKs queue up in its TX
# backlog behind them; a server that exits right after close() leaves its byte count and FIN in
# that backlog and the client retransmits its FIN until --timeout (issue 13: 4 runs of 4 failed
# with the default rings on a fast machine, every run with these). Three runs must all complete.
#
#   inet_bench_bulk_memif_test.sh INET_BENCH_BINARY
# Needs root (DPDK memory and the memif socket); fails when it is missing.
set -euo pipefail

bench=$1
name=K  # this suite's tag: every resource it creates carries it
socket=/run/bypass-memif-$name.sock  # abstract (DPDK's default): nothing on disk to clean up
source "$(dirname "$0")/../../support/test_lib.sh"
own_network_namespace "$@"  # the abstract memif socket meets no other test's
test_begin memif-$name

require_root "DPDK memory and the memif socket"
require_executable "$bench" "inet_bench binary"
[ "$(nproc)" -ge 2 ] || fail "needs 2 CPUs to pin the two processes apart (have $(nproc))"

# Plain memory (memif copies: hugepages buy nothing here), more of it than the default 256 MiB for
# 65535 mbufs.
common=(--set ms.type=dpdk --set dpdk.netmask=255.255.255.0 --set tcp.msl=1s --set dpdk.idle_sleep=0
        --set dpdk.no_huge=yes --set dpdk.memory=512M --set dpdk.mbufs=65535 --set dpdk.link_wait=30s
        --set dpdk.mtu=1500 --set dpdk.mbuf_size=2176)

for run in 1 2 3; do
  timeout 60 "$bench" "${common[@]}" --set "dpdk.vdev=[\"net_memif0,role=server,socket=$socket,rsize=6\"]" \
    --set dpdk.host_ip=10.97.0.1 --set ms.cpus=1 --set tcp.rcv_buffer=8M \
    --role server --mode bulk --addr 10.97.0.1:7000 --timeout 45s >"$work/server.out" 2>&1 &
  server_pid=$!
  track "$server_pid"
  wait_for_socket "$socket" "$server_pid" "$work/server.out"
  rc=0
  timeout 60 "$bench" "${common[@]}" --set "dpdk.vdev=[\"net_memif0,role=client,socket=$socket,rsize=6\"]" \
    --set dpdk.host_ip=10.97.0.2 --set ms.cpus=0 --set tcp.snd_buffer=8M \
    --role client --mode bulk --addr 10.97.0.1:7000 --bytes 1T --duration 1s --timeout 20s \
    >"$work/client.out" 2>&1 || rc=$?
  src=0
  reap "$server_pid" || src=$?
  echo "run $run: $(grep '^role=client transport' "$work/client.out" || echo 'no result line')"
  if [ "$rc" != 0 ] || [ "$src" != 0 ] || ! grep -q '^role=client transport=dpdk mode=bulk' "$work/client.out"; then
    cat "$work/client.out" "$work/server.out" >&2
    fail "bulk run $run: client exited with $rc, server with $src"
  fi
done
echo "PASS"
