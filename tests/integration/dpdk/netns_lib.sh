# What the network-namespace tests share (inet_peer_netns_test.sh over IPv4,
# inet_peer_netns_ipv6_test.sh over IPv6): sourced, not run. The test sets `name` (its tag, carried
# by every namespace, link and file it creates), `namespaces` and `links` (its veth names, which a
# run killed half-way through set-up may leave in the root namespace), then calls
# start_netns_test PEER_BINARY.
# shellcheck shell=bash disable=SC2154 # name, namespaces and links come from the sourcing test

fail() { echo "FAIL: $*" >&2; exit 1; }

remove_topology() {
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  for link in "${links[@]}"; do ip link del "$link" 2>/dev/null || true; done
}

cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  remove_topology
  rm -rf "$work"
}

# Checks the prerequisites, sets `work` (a scratch directory) and `pids` (processes to stop at
# exit), removes a crashed run's leftovers and creates the namespaces with loopback up.
start_netns_test() {  # start_netns_test PEER_BINARY
  work=$(mktemp -d "/tmp/bypass-netns-$name.XXXXXX")
  pids=()
  trap cleanup EXIT
  [ "$(id -u)" = 0 ] || fail "needs root (network namespaces, veth, af_packet)"
  [ -x "$1" ] || fail "inet_peer binary '$1' is not executable"
  command -v ip >/dev/null || fail "the ip command (iproute2) is not installed (tools/setup.sh test)"
  command -v ethtool >/dev/null || fail "ethtool is not installed (tools/setup.sh test)"
  remove_topology  # leftovers of a crashed run
  for ns in "${namespaces[@]}"; do
    ip netns add "$ns"
    ip -n "$ns" link set lo up
  done
}

af_packet_host() {  # af_packet_host IFACE LCORE_CPU: the --set flags of a one-worker af_packet Bypass host
  echo "--set=ms.type=dpdk --set=ms.workers=1 --set=ms.cpus=$2"
  echo "--set=dpdk.vdev=[\"net_af_packet0,iface=$1\"]"
  echo "--set=dpdk.no_huge=yes --set=dpdk.memory=256M --set=dpdk.in_memory=true"  # af_packet copies
}

wait_ready() {  # wait_ready PID OUT_FILE ADDRESS: until the server printed "ready ADDRESS"
  for _ in $(seq 300); do
    grep -qxF "ready $3" "$2" && return 0
    kill -0 "$1" 2>/dev/null || { cat "$2" "${2%.out}.err" >&2; fail "server $3 exited early"; }
    sleep 0.1
  done
  fail "server $3 printed no ready line within 30 s"
}
