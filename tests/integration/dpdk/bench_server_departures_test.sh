#!/bin/bash
# A long-lived dpdk `bypass-bench server` over net_memif outlives clients that come and go: each
# client is its own process (its own memif connection), exchanges 4 KiB request/replies with the
# server and leaves; every fourth is killed with SIGKILL in the middle of its exchange. After each
# departure the server must still run (DPDK 22.11's memif unmaps the rings under the polling lcore
# when a peer leaves: pmd/burst_guard.h), and once the killed clients' sessions have ended the mbufs
# it holds, read from its SIGUSR1 status lines, must be back to what it held after the first
# client: nothing leaked. POLICY is the server's bench.server_policy: stateless (a killed client's
# session ends with its keepalive timeout, 3 s) or stateful (a lossless session that keeps the
# replies it sent, which share the requests' received mbufs, for a reconnect that never comes:
# ms.connection_idle_timeout, 4 s here, ends it). The timeouts leave room for a busy machine: both
# processes poll without sleeping, and with another test doing the same on the two CPUs a process
# can wait over a second for one (a 1 s keepalive timeout then ended live sessions).
#   bench_server_departures_test.sh BYPASS_BENCH [CLIENTS] [POLICY]
# CLIENTS defaults to 20 (each client starts its own DPDK: 1-5 s apiece on a busy 2-CPU machine);
# the full run is `bench_server_departures_test.sh build/release/tools/bypass-bench/bypass-bench 100`.
# Needs root (DPDK memory and the memif socket); exits 77 without.
set -u
source "$(dirname "$0")/../../support/test_lib.sh"
own_network_namespace "$@"  # the abstract memif socket meets no other test's

bench=$1
clients=${2:-20}
policy=${3:-stateless}
case "$policy" in stateless|stateful) ;; *) echo "POLICY must be stateless or stateful, not '$policy'" >&2; exit 2;; esac
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (DPDK memory and the memif socket)"; exit 77; }

work=$(mktemp -d /tmp/bypass-departures.XXXXXX)
socket=/run/bypass-departures-$$.sock  # abstract: nothing on disk
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/server.out "$work"/server.err "$work"/client.out "$work"/client.err; do
    [ -s "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
  done
  exit 1
}

cat > "$work/job.yaml" <<EOF
ms:
  workers: 1
  keepalive_interval: 500ms
  keepalive_timeout: 3s
  connection_idle_timeout: 4s
dpdk:
  netmask: 255.255.255.0
  no_huge: yes  # memif copies: hugepages buy nothing here
  memory: 128M
  in_memory: true
  rss: false
  link_wait: 20s
  idle_sleep: 0s
bench:
  transports: [dpdk]
  mode: reqrep
  message_size: 4K
  iodepth: 8
  connections: 1
  warmup: 0s
  count: 400
  server_address: 10.99.0.1:6800
  server_policy: $policy
  server:
    cpus: "1"
    dpdk:
      - 'dpdk.vdev=["net_memif0,role=server,socket=$socket"]'
      - dpdk.host_ip=10.99.0.1
      - dpdk.hw_addr=02:00:00:00:99:01
  client:
    cpus: "0"
    dpdk:
      - 'dpdk.vdev=["net_memif0,role=client,socket=$socket"]'
      - dpdk.host_ip=10.99.0.2
      - dpdk.hw_addr=02:00:00:00:99:02
EOF

"$bench" -c "$work/job.yaml" server > "$work/server.out" 2> "$work/server.err" &
server_pid=$!
# The server's port comes up with its first client, and only then does it listen: that client
# starts once the memif socket exists and reads the address once the server says ready.
for _ in $(seq 1 300); do
  grep -q "@$socket\$" /proc/net/unix && break
  kill -0 "$server_pid" 2>/dev/null || fail "the server exited before it listened on its memif socket"
  sleep 0.1
done
ready_then_address() {
  for _ in $(seq 1 300); do
    grep -q '^ready ' "$work/server.out" && { echo 10.99.0.1:6800; return; }
    sleep 0.1
  done
}

# The server's mbufs in use, from its SIGUSR1 status lines.
mbufs_in_use() {
  local before
  before=$(grep -c '^status end' "$work/server.out")
  kill -USR1 "$server_pid"
  for _ in $(seq 1 100); do
    [ "$(grep -c '^status end' "$work/server.out")" -gt "$before" ] && break
    sleep 0.05
  done
  grep '^status mempool ' "$work/server.out" | tail -n 1 | awk '{print $5}'
}

killed=0
in_use=0
baseline=0
for i in $(seq 1 "$clients"); do
  before=$in_use
  kill_this=$([ $((i % 4)) -eq 0 ] && [ "$i" -lt "$clients" ] && echo 1 || echo 0)
  if [ "$kill_this" = 1 ]; then
    # Killed mid-exchange: once it reports progress, while requests are in flight.
    "$bench" -c "$work/job.yaml" --set bench.count=1000000 client > "$work/client.out" 2> "$work/client.err" &
    client_pid=$!
    for _ in $(seq 1 200); do
      grep -q 'msgs/s' "$work/client.out" 2>/dev/null && break
      kill -0 "$client_pid" 2>/dev/null || break
      sleep 0.05
    done
    kill -9 "$client_pid" 2>/dev/null
    wait "$client_pid" 2>/dev/null
    killed=$((killed + 1))
  elif [ "$i" -eq 1 ]; then
    ready_then_address | timeout 60 "$bench" -c "$work/job.yaml" client --server-address-from stdin \
      > "$work/client.out" 2> "$work/client.err" || fail "the first client exited with status $?"
  else
    timeout 60 "$bench" -c "$work/job.yaml" client > "$work/client.out" 2> "$work/client.err" ||
      fail "client $i exited with status $? (expected a clean run against the long-lived server)"
    grep -q 'dpdk 4KiB d8 .* 0$' "$work/client.out" || fail "client $i reported errors"
  fi
  kill -0 "$server_pid" 2>/dev/null || { wait "$server_pid"; fail "the server died after client $i (status $?)"; }
  in_use=$(mbufs_in_use)
  [ -n "$in_use" ] || fail "the server printed no mempool status after client $i"
  echo "client $i$([ "$kill_this" = 1 ] && echo ' (SIGKILL)'): the server holds $in_use mbufs"
  # Orderly departures leave nothing behind; a killed client's session holds its messages in
  # flight until its keepalive times out (stateless) or its standby session expires (stateful).
  if [ "$killed" -eq 0 ]; then
    [ "$in_use" -le "$before" ] || fail "client $i left in order and the server's mbufs in use grew from $before to $in_use"
  fi
  [ "$i" -eq 1 ] && baseline=$in_use
done

# The last killed client's session ends within the keepalive timeout (plus the idle timeout when
# stateful); give it a bounded while.
for _ in $(seq 1 40); do
  [ "$in_use" -le "$baseline" ] && break
  sleep 0.5
  in_use=$(mbufs_in_use)
done
echo "$clients clients ($killed killed with SIGKILL, $policy server): the server outlived them all; it holds $in_use mbufs" \
     "(after the first client: $baseline)"
[ "$in_use" -le "$baseline" ] || fail "the server holds $in_use mbufs, $baseline after the first client: leaked"
kill -INT "$server_pid"
wait "$server_pid" || fail "the server exited with status $? on SIGINT"
server_pid=
echo "PASS"
