#!/bin/bash
# `bypass-pmd stack echo-server` (the dpdk stack without a messenger, on a looped net_ring) answers
# on ms.admin_socket and ms.metrics_address: perf dump has the port's and every worker's TCP/IP
# counters, conns the workers' connection tables, /metrics passes promtool.
#   admin_pmd_test.sh BYPASS_PMD BYPASS_ADMIN
set -u
pmd="$1" admin="$2"
py=/usr/bin/python3
work=$(mktemp -d /tmp/bypass-admin-pmd-test-XXXXXX)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (DPDK memory)"
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

"$pmd" --set dpdk.vdev=net_ring0 --set dpdk.host_ip=10.92.$(( $$ % 250 )).1 --set dpdk.in_memory=true \
  --set dpdk.no_huge=auto --set dpdk.memory=256M --set ms.workers=2 \
  --set "ms.admin_socket=$work/pmd.asok" --set "ms.metrics_address=127.0.0.1:$port" \
  stack echo-server 7 >"$work/server.out" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do [ -S "$work/pmd.asok" ] && break; kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
[ -S "$work/pmd.asok" ] || { cat "$work/server.out"; fail "no admin socket"; }

check() {  # COMMAND... -- PYTHON-EXPRESSION over j
  local args=() expr
  while [ "$1" != -- ]; do args+=("$1"); shift; done
  expr="$2"
  "$admin" "$work/pmd.asok" "${args[@]}" >"$work/answer.json" || fail "bypass-admin ${args[*]}"
  "$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$work/answer.json" "$expr" ||
    { cat "$work/answer.json"; echo; fail "${args[*]}: not $expr"; }
}
check perf dump -- 'j["messengers"] == [] and j["transports"][0]["transport"] == "dpdk" and "rx_packets" in j["transports"][0]["port"]'
check perf dump -- 'len(j["transports"][0]["workers"]) == 2 and all("tcp_segments_received" in w["counters"] for w in j["transports"][0]["workers"])'
check conns -- 'all(w["connections"] == [] for w in j["transports"][0]["workers"])'
check config diff -- 'j["dpdk.vdev"]["origin"] == "--set"'
"$py" -c 'import sys,urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
  "http://127.0.0.1:$port/metrics" >"$work/metrics.txt" || fail "GET /metrics"
if command -v promtool >/dev/null; then
  promtool check metrics <"$work/metrics.txt" || fail "promtool check metrics"
fi
grep -q '^bypass_port_rx_packets_total{transport="dpdk",port="0"} ' "$work/metrics.txt" || { cat "$work/metrics.txt"; fail "no port counter"; }
grep -q '^bypass_transport_tcp_segments_received_total{transport="dpdk",worker="1"} ' "$work/metrics.txt" || fail "no TCP counter of worker 1"
kill -TERM "$server_pid"
wait "$server_pid"
status=$?
server_pid=""
[ "$status" = 0 ] || { cat "$work/server.out"; fail "echo-server exited with $status"; }
[ ! -e "$work/pmd.asok" ] || fail "the admin socket outlived the server"
echo "PASS: bypass-pmd stack echo-server admin socket and metrics"
