#!/bin/bash
# `bypass-pmd stack echo-server` (the dpdk stack without a messenger, on a looped net_ring) answers
# on ms.admin_socket and ms.metrics_address: perf dump has the port's and every worker's TCP/IP
# counters, conns the workers' connection tables, /metrics passes promtool.
#   admin_pmd_test.sh BYPASS_PMD BYPASS_ADMIN
set -u
pmd="$1" admin="$2"
py=/usr/bin/python3
source "$(dirname "$0")/../../tests/support/test_lib.sh"
own_network_namespace "$@"  # the free port found below stays free: no other test binds here
test_begin admin-pmd-test
require_root "DPDK memory"
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

"$pmd" --set dpdk.vdev=net_ring0 --set dpdk.host_ip=10.92.$(( $$ % 250 )).1 --set dpdk.in_memory=true \
  --set dpdk.no_huge=yes --set dpdk.memory=256M --set ms.workers=2 \
  --set "ms.admin_socket=$work/pmd.asok" --set "ms.metrics_address=127.0.0.1:$port" \
  stack echo-server 7 >"$work/server.out" 2>&1 &
server_pid=$!
track "$server_pid"
wait_for_socket "$work/pmd.asok" "$server_pid" "$work/server.out" 30

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
stop "$server_pid"
status=$?
[ "$status" = 0 ] || { cat "$work/server.out"; fail "echo-server exited with $status"; }
[ ! -e "$work/pmd.asok" ] || fail "the admin socket outlived the server"
echo "PASS: bypass-pmd stack echo-server admin socket and metrics"
