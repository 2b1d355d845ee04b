#!/usr/bin/env bash
# Three hosts in network namespaces, the dpdk transport on net_af_packet over veth:
#
#   H1 bpG1  Bypass 10.71.0.1 --vG1a/vG1b--+
#                                          brG 10.71.0.254   router bpGr (ip_forward=1)
#   H2 bpG2  kernel 10.71.0.2 --vG2a/vG2b--+
#   H3 bpG3  Bypass 10.72.0.3 --vG3a/vG3b-- 10.72.0.254
#
# H1 echoes bytes byte-exact with H2 on its own subnet and with H3 through the gateway, while H2's
# kernel talks to H3 through the gateway as well. H1's ARP table must hold the gateway and H2 but
# not H3 (off-subnet traffic goes to the gateway's MAC, RFC 1122 section 3.3.1.1).
#
# af_packet needs the kernel peer's veth without checksum and segmentation offloads: frames
# crossing veth keep a partial checksum (CHECKSUM_PARTIAL) and TSO/GSO frames exceed the MTU,
# which an af_packet reader sees as is. The PMD's defaults (qdisc_bypass=1, blocksz 4096,
# framesz 2048, framecnt 512) fit a 1500-byte MTU; no promiscuous mode is needed because the
# stack uses the veth's own MAC.
#
#   inet_peer_netns_test.sh INET_PEER_BINARY
# Needs root, iproute2 and ethtool (tools/setup.sh test installs them); fails when any is missing.
set -euo pipefail
source "$(dirname "$0")/../../support/test_lib.sh"
own_network_namespace "$@"  # its `ip netns` names and veths meet no other test's

peer=$1
name=G  # this suite's tag: every namespace, link and file it creates carries it
ns1=bp${name}1 ns2=bp${name}2 ns3=bp${name}3 nsr=bp${name}r
h1=10.71.0.1 h2=10.71.0.2 h3=10.72.0.3 gw_x=10.71.0.254 gw_y=10.72.0.254
h2_port=7400 h3_port=7500
namespaces=("$ns1" "$ns2" "$ns3" "$nsr")
links=("v${name}1a" "v${name}1b" "v${name}2a" "v${name}2b" "v${name}3a" "v${name}3b")
# shellcheck source-path=SCRIPTDIR source=netns_lib.sh
source "$(dirname "$0")/netns_lib.sh"
start_netns_test "$peer"
for ns in "${namespaces[@]}"; do
  # No IPv6 chatter (router solicitations, DAD) on links the userspace stack reads.
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
ip netns exec $nsr sysctl -qw net.ipv4.ip_forward=1
ip -n $nsr link add br$name type bridge
for i in 1 2 3; do
  ip link add v${name}${i}a netns bp${name}${i} type veth peer name v${name}${i}b netns $nsr
  ip -n bp${name}${i} link set v${name}${i}a up
  ip -n $nsr link set v${name}${i}b up
done
ip -n $nsr link set v${name}1b master br$name
ip -n $nsr link set v${name}2b master br$name
ip -n $nsr addr add $gw_x/24 dev br$name
ip -n $nsr link set br$name up
ip -n $nsr addr add $gw_y/24 dev v${name}3b
# H2 is the kernel host: it reaches H3 through the gateway; its frames reach H1's af_packet reader
# only with full checksums and at most MTU size (see above).
ip -n $ns2 addr add $h2/24 dev v${name}2a
ip -n $ns2 route add default via $gw_x
ip netns exec $ns2 ethtool -K v${name}2a tx off tso off gso off >/dev/null
# H1 and H3 keep their veth without an address: the kernel there must not answer ARP or TCP.

dpdk_host() {  # dpdk_host NS IP GATEWAY LCORE_CPU: the --set flags of one af_packet Bypass host
  local ns=$1 ip=$2 gateway=$3 cpu=$4
  af_packet_host "v${name}${ns: -1}a" "$cpu"
  echo "--set=dpdk.host_ip=$ip --set=dpdk.netmask=255.255.255.0 --set=dpdk.gateway=$gateway"
}

h1_bytes=32M h1_connections=2 h2_bytes=8M h2_connections=2

# H3: Bypass echo server behind the gateway, on CPU 1; it serves H1's and H2's connections.
# shellcheck disable=SC2046 # dpdk_host prints one flag per word
timeout 150 ip netns exec $ns3 "$peer" $(dpdk_host $ns3 $h3 $gw_y 1) \
  echo-server --listen $h3:$h3_port --serve $((h1_connections + h2_connections)) --lifetime 120s \
  >"$work/h3.out" 2>"$work/h3.err" &
h3_pid=$!
pids+=("$h3_pid")
# H2: the kernel's TCP (ms.type=posix) as an echo server on H1's subnet.
timeout 150 ip netns exec $ns2 "$peer" --set ms.type=posix \
  echo-server --listen $h2:$h2_port --serve $h1_connections --lifetime 120s \
  >"$work/h2.out" 2>"$work/h2.err" &
h2_pid=$!
pids+=("$h2_pid")
wait_ready $h3_pid "$work/h3.out" $h3:$h3_port
wait_ready $h2_pid "$work/h2.out" $h2:$h2_port

# H2's kernel client to H3 through the gateway, while H1 runs.
timeout 150 ip netns exec $ns2 "$peer" --set ms.type=posix \
  echo-client --to $h3:$h3_port --bytes $h2_bytes --connections $h2_connections --seed 72 --timeout 90s \
  >"$work/h2c.out" 2>"$work/h2c.err" &
h2c_pid=$!
pids+=("$h2c_pid")

echo "H1: $h1_bytes over $h1_connections connections each to H2 $h2:$h2_port and H3 $h3:$h3_port"
start=$(date +%s.%N)
# shellcheck disable=SC2046
if ! timeout 150 ip netns exec $ns1 "$peer" $(dpdk_host $ns1 $h1 $gw_x 0) \
       echo-client --to $h2:$h2_port --to $h3:$h3_port --bytes $h1_bytes --connections $h1_connections \
       --seed 71 --timeout 90s --show-arp $gw_x,$h2,$h3 >"$work/h1.out" 2>"$work/h1.err"; then
  cat "$work/h1.out" "$work/h1.err" >&2
  # The servers' view of what is left: SIGTERM makes a Bypass server list its TCP connections.
  kill "$h3_pid" "$h2_pid" 2>/dev/null || true
  wait "$h3_pid" "$h2_pid" 2>/dev/null || true
  echo "H3 server:" >&2; cat "$work/h3.out" "$work/h3.err" >&2
  fail "H1's Bypass echo client failed"
fi
end=$(date +%s.%N)
cat "$work/h1.out"
echo "H1: $h1_bytes in $(echo "$end - $start" | bc) s wall clock (EAL start-up included)"
rc=0
wait $h2c_pid || rc=$?
cat "$work/h2c.out"
[ "$rc" = 0 ] || { cat "$work/h2c.err" >&2; fail "H2's kernel client to H3 through the gateway failed ($rc)"; }
for host in h2 h3; do
  pid_var=${host}_pid
  rc=0
  wait "${!pid_var}" || rc=$?
  cat "$work/$host.out"
  [ "$rc" = 0 ] || { cat "$work/$host.err" >&2; fail "$host's echo server exited with $rc"; }
done

# ARP: H1 resolved its gateway and its on-link neighbour to their MACs, never the remote host.
mac_of() { ip -n "$1" -o link show "$2" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'; }
gw_mac=$(mac_of $nsr br$name)
h2_mac=$(mac_of $ns2 v${name}2a)
grep -qx "arp $gw_x $gw_mac" "$work/h1.out" || fail "H1 did not resolve the gateway $gw_x to $gw_mac"
grep -qx "arp $h2 $h2_mac" "$work/h1.out" || fail "H1 did not resolve its neighbour $h2 to $h2_mac"
grep -qx "arp $h3 unresolved" "$work/h1.out" || fail "H1 resolved the off-subnet host $h3 itself"
# The router did the work: it learned H1 on one side and H3 on the other.
ip -n $nsr neigh show $h1 | grep -q lladdr || fail "the router never heard from H1"
ip -n $nsr neigh show $h3 | grep -q lladdr || fail "the router never resolved H3"
echo "PASS"
