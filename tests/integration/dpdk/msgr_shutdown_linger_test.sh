#!/usr/bin/env bash
# No data lost at a clean shutdown, over the dpdk transport between two processes (net_memif): a
# client messenger queues N requests and shuts down at once. With ms.shutdown_linger (10 s here)
# its shutdown sends them, waits for the server's msgr2 ACKs, closes, and its stack's stop() waits
# for the TCP ACK of the last data and FIN before the process exits: the server must have received
# all N, the client must count N acknowledged and none dropped. With ms.shutdown_linger=0 (the old
# behaviour) the client closes at once: what the server had not acknowledged is dropped, and
# counted as such (acked + dropped = N, dropped > 0, the server received no more than was sent).
#
#   msgr_shutdown_linger_test.sh MSGR_PEER_BINARY CONFIG_EXAMPLES_DIR
# Needs root (DPDK memory and the memif socket); exits 77 without.
set -euo pipefail
source "$(dirname "$0")/../../support/test_lib.sh"
own_network_namespace "$@"  # the abstract memif socket meets no other test's

msgr_peer=$1
examples=$2
socket=/run/bypass-memif-L.sock  # abstract: nothing on disk
server_ip=10.98.0.1
port=7400
messages=2000
work=$(mktemp -d /tmp/bypass-linger.XXXXXX)
server_pid=

fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/*.out "$work"/*.err; do
    [ -s "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
  done
  exit 1
}
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -9 "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (DPDK memory and the memif socket)"; exit 77; }

# memif copies: hugepages buy nothing here.
server_sets=(--set dpdk.no_huge=yes "--set=dpdk.vdev=[\"net_memif0,role=server,socket=$socket\"]")
client_sets=(--set dpdk.no_huge=yes "--set=dpdk.vdev=[\"net_memif0,role=client,socket=$socket\"]")

# One round: a server, a burst of $messages requests with the given linger, the server stopped.
# Leaves the client's and the server's output in $work/client.out and $work/server.out.
round() {
  local linger=$1
  timeout 120 "$msgr_peer" -c "$examples/dpdk-memif-server.yaml" "${server_sets[@]}" --set ms.cpus=1 \
    server --bind "$server_ip:$port" --lifetime 100s >"$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  wait_for_socket "$socket" "$server_pid" "$work/server.err"
  timeout 60 "$msgr_peer" -c "$examples/dpdk-memif-client.yaml" "${client_sets[@]}" --set ms.cpus=0 \
    --set ms.shutdown_linger="$linger" burst --to "$server_ip:$port" --messages $messages --max-size 8K \
    >"$work/client.out" 2>"$work/client.err" || fail "burst client (linger $linger) exited with $?"
  cat "$work/client.out"
  kill -TERM "$server_pid"
  local rc=0
  wait "$server_pid" || rc=$?
  server_pid=
  [ "$rc" = 0 ] || fail "the server exited with $rc"
  grep '^received ' "$work/server.out"
}

# field N of the client's burst line: burst N queued A acked D dropped in T s
burst_field() { awk -v n="$1" '/^burst /{print $n}' "$work/client.out"; }

round 10s
[ "$(burst_field 4)" = "$messages" ] || fail "linger 10s: $(burst_field 4) of $messages acknowledged"
[ "$(burst_field 6)" = 0 ] || fail "linger 10s: $(burst_field 6) dropped"
grep -qx "received $messages requests" "$work/server.out" || fail "linger 10s: the server did not receive all $messages"

round 0s
acked=$(burst_field 4)
dropped=$(burst_field 6)
received=$(awk '/^received /{print $2}' "$work/server.out")
[ $((acked + dropped)) = "$messages" ] || fail "linger 0: $acked acked + $dropped dropped != $messages"
[ "$dropped" -gt 0 ] || fail "linger 0: nothing dropped (a shutdown without linger cannot wait for the handshake)"
[ "$received" -le "$messages" ] && [ "$received" -ge "$acked" ] ||
  fail "linger 0: the server received $received, the client counts $acked acknowledged of $messages"
echo "PASS"
