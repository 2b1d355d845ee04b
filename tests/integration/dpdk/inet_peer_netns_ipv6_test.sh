#!/usr/bin/env bash
# The IPv6 gateway path: two Bypass hosts on two prefixes with a Linux router in between, the dpdk
# transport on net_af_packet over veth (IPv6 counterpart of inet_peer_netns_test.sh):
#
#   H1 bpH1  Bypass fd00:73:1::1/64 --vH1a/vH1b-- fe80::1, fd00:73:1::fe   router bpHr
#   H3 bpH3  Bypass fd00:73:3::3/64 --vH3a/vH3b-- fe80::1, fd00:73:3::fe   (forwarding=1)
#
# H1 names its gateway by the router's link-local address (dpdk.gateway_ipv6=fe80::1, RFC 4861 §8),
# H3 by the router's address on its own prefix (fd00:73:3::fe). H1's echo client sends seeded bytes
# to H3's echo server through the router and checks the echo byte-exact (data both ways through
# the gateway). H1's Neighbor Discovery cache must hold the router but not H3 (off-prefix traffic
# goes to the router's MAC, RFC 4861 §5.2), and the router must have learned both hosts.
#
# Path MTU for real (RFC 8201): the router forwards onto H3's link with an IPv6 MTU of 1280
# (net.ipv6.conf.vH3b.mtu) while every device MTU stays 1500. So H3 still advertises MSS 1440 and
# its 1500-byte segments reach the router (a 1280-byte device MTU would make veth drop them before
# IPv6 sees them), but each of H1's full-size segments is answered with ICMPv6 Packet Too Big
# (MTU 1280). The transfer only completes if H1 takes it and resends smaller; H1 must report
# icmpv6_packet_too_big_received > 0, a path MTU of 1280 to H3 and an SMSS of 1208 (1280 - 40 IPv6
# - 20 TCP - 12 timestamps) on every data connection to H3, which started at 1428, and no segment
# refused locally for its size (ipv6_tx_too_big) since.
#
# The router's veth ends run without checksum, segmentation and receive offloads: what it forwards
# or sends must reach the af_packet readers complete and at most MTU-sized (see the IPv4 test).
# The hosts' namespaces have IPv6 off, so their kernels neither claim the veths' EUI-64 link-local
# addresses (the stack derives the same ones from the same MACs) nor answer ND or TCP.
#
#   inet_peer_netns_ipv6_test.sh INET_PEER_BINARY
# Needs root, iproute2 and ethtool (tools/setup.sh test installs them); fails when any is missing.
set -euo pipefail
source "$(dirname "$0")/../../support/test_lib.sh"
own_network_namespace "$@"  # its `ip netns` names and veths meet no other test's

peer=$1
name=H  # this suite's tag: every namespace, link and file it creates carries it
ns1=bp${name}1 ns3=bp${name}3 nsr=bp${name}r
h1=fd00:73:1::1 h3=fd00:73:3::3 gw_1=fe80::1 gw_3=fd00:73:3::fe
h3_port=7600
narrow_mtu=1280
namespaces=("$ns1" "$ns3" "$nsr")
links=("v${name}1a" "v${name}1b" "v${name}3a" "v${name}3b")
# shellcheck source-path=SCRIPTDIR source=netns_lib.sh
source "$(dirname "$0")/netns_lib.sh"
[ -e /proc/sys/net/ipv6 ] || fail "the kernel has no IPv6"
start_netns_test "$peer"
for ns in $ns1 $ns3; do
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
ip netns exec $nsr sysctl -qw net.ipv6.conf.all.forwarding=1
for i in 1 3; do
  host_link=v${name}${i}a router_link=v${name}${i}b
  ip link add $host_link netns bp${name}${i} type veth peer name $router_link netns $nsr
  # Only the fixed link-local fe80::1, without DAD: the hosts may use it at once.
  ip -n $nsr link set $router_link addrgenmode none
  ip netns exec $nsr ethtool -K $router_link tx off tso off gso off gro off >/dev/null
  ip -n bp${name}${i} link set $host_link up
  ip -n $nsr link set $router_link up
  ip -n $nsr addr add $gw_1/64 dev $router_link nodad
done
ip -n $nsr addr add fd00:73:1::fe/64 dev v${name}1b nodad
ip -n $nsr addr add $gw_3/64 dev v${name}3b nodad
# After the link is up (a device MTU change resets it): the IPv6 MTU the router forwards with.
ip netns exec $nsr sysctl -qw net.ipv6.conf.v${name}3b.mtu=$narrow_mtu

dpdk_host() {  # dpdk_host NS IPV4 IPV6 GATEWAY_IPV6 LCORE_CPU: the --set flags of one af_packet Bypass host
  local ns=$1 ipv4=$2 ipv6=$3 gateway=$4 cpu=$5
  af_packet_host "v${name}${ns: -1}a" "$cpu"
  # IPv4 is required by the stack but unused here: an address on a subnet of its own.
  echo "--set=dpdk.host_ip=$ipv4 --set=dpdk.netmask=255.255.255.0"
  echo "--set=dpdk.host_ipv6=$ipv6 --set=dpdk.ipv6_prefix_length=64 --set=dpdk.gateway_ipv6=$gateway"
}

bytes=8M connections=2

# H3: Bypass echo server behind the router, on CPU 1.
# shellcheck disable=SC2046 # dpdk_host prints one flag per word
timeout 120 ip netns exec $ns3 "$peer" $(dpdk_host $ns3 10.73.3.3 $h3 $gw_3 1) \
  echo-server --listen "[$h3]:$h3_port" --serve $((connections + 1)) --lifetime 90s \
  >"$work/h3.out" 2>"$work/h3.err" &
h3_pid=$!
pids+=("$h3_pid")
wait_ready $h3_pid "$work/h3.out" "[$h3]:$h3_port"

echo "H1: $bytes over $connections connections to H3 [$h3]:$h3_port through the router"
# --wait-for-server: both stacks first run Duplicate Address Detection (about a second), during
# which connecting fails (EADDRNOTAVAIL, counted as tx_no_route) or goes unanswered. Its probe is
# the server's extra connection (--serve N+1); it carries no data, so its SMSS stays 1428.
# shellcheck disable=SC2046
if ! timeout 120 ip netns exec $ns1 "$peer" $(dpdk_host $ns1 10.73.1.1 $h1 $gw_1 0) \
       echo-client --to "[$h3]:$h3_port" --bytes $bytes --connections $connections --seed 73 \
       --wait-for-server 20s --timeout 60s --show-neigh $gw_1,$h3 --show-path-mtu $h3 \
       >"$work/h1.out" 2>"$work/h1.err"; then
  cat "$work/h1.out" "$work/h1.err" >&2
  # The server's view of what is left: SIGTERM makes a Bypass server list its TCP connections.
  kill "$h3_pid" 2>/dev/null || true
  wait "$h3_pid" 2>/dev/null || true
  echo "H3 server:" >&2; cat "$work/h3.out" "$work/h3.err" >&2
  fail "H1's Bypass echo client failed"
fi
cat "$work/h1.out"
rc=0
wait $h3_pid || rc=$?
cat "$work/h3.out"
[ "$rc" = 0 ] || { cat "$work/h3.err" >&2; fail "H3's echo server exited with $rc"; }

# Neighbor Discovery: H1 resolved its gateway's link-local address, never the off-prefix H3.
mac_of() { ip -n "$1" -o link show "$2" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'; }
gw_mac=$(mac_of $nsr v${name}1b)
grep -qxF "neigh $gw_1 $gw_mac" "$work/h1.out" || fail "H1 did not resolve its gateway $gw_1 to $gw_mac"
grep -qxF "neigh $h3 unresolved" "$work/h1.out" || fail "H1 resolved the off-prefix host $h3 itself"
# The router did the work: it learned H1 on one side and H3 on the other.
ip -n $nsr -6 neigh show $h1 | grep -q lladdr || fail "the router never heard from H1"
ip -n $nsr -6 neigh show $h3 | grep -q lladdr || fail "the router never resolved H3"

# Path MTU: the router's Packet Too Big reached H1's stack and lowered its path MTU and SMSS.
ptb=$(sed -n 's/^stats worker 0:.* icmpv6_packet_too_big_received=\([0-9]*\).*/\1/p' "$work/h1.out")
[ "${ptb:-0}" -gt 0 ] || fail "H1 counted no ICMPv6 Packet Too Big (the router sends one per segment over $narrow_mtu)"
grep -qxF "path_mtu $h3 $narrow_mtu" "$work/h1.out" || fail "H1's path MTU to $h3 is not $narrow_mtu"
# Every segment sent after the Packet Too Big, retransmissions included, was sized to the learned
# path MTU: Ipv6Layer refused none for its size (the counter stays absent from the stats line).
if grep "^stats worker 0:" "$work/h1.out" | grep -q " ipv6_tx_too_big="; then
  fail "H1 tried to send segments larger than its path MTU (ipv6_tx_too_big)"
fi
expected_mss=$((narrow_mtu - 40 - 20 - 12))
# Each data connection's SMSS as read when its echo completed (completed_send_mss; one whose close
# completed before the final listing is gone from it), and every connection still listed.
grep -E "^(completed_)?send_mss \[$h3\]:$h3_port " "$work/h1.out" | grep -v " bytes_acked=0\$" >"$work/h1.mss" || true
completed=$(grep -c "^completed_send_mss " "$work/h1.mss" || true)
[ "$completed" = "$connections" ] || fail "H1 read the SMSS of $completed of its $connections data connections to H3 at completion"
if grep -Evq "^(completed_)?send_mss [^ ]* $expected_mss " "$work/h1.mss"; then
  fail "a data connection to H3 kept an SMSS other than $expected_mss: $(cat "$work/h1.mss")"
fi
echo "PASS: $ptb Packet Too Big taken, path MTU $narrow_mtu, SMSS $expected_mss"
