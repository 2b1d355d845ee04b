#!/bin/bash
# Inside the soft-RoCE guest (tools/rxe-vm, as root): two rxe devices, rxeA on vethA (10.77.5.1)
# and rxeB on vethB (10.77.5.2), the two ends of one veth pair, both in the init namespace, with
# traffic between their addresses forced across the veth — a two-host RDMA link on one kernel.
#
# Why not two namespaces: kernel 6.1's rxe opens its UDP 4791 socket only in the init netns. Why
# the routing: both addresses are local, so by default the kernel delivers between them through
# lo, where rxe (which looks its device up by the receiving netdev) drops the packets. So: locally
# generated packets from one address to the other (`iif lo`) use a table that sends them out of
# the veth, ahead of the local table (moved from priority 0 to 1000); arriving on the other end,
# they match the local table and are delivered with the veth as their device. accept_local lets
# a packet whose source is a local address in; rp_filter would drop it as martian.
#
# Prints "rxeA 10.77.5.1 rxeB 10.77.5.2" on success; exits non-zero naming the failed step.
set -eu
step() { "$@" || { echo "rxe_veth_pair: failed: $*" >&2; exit 1; }; }
step ip link add vethA type veth peer name vethB
step ip addr add 10.77.5.1/24 dev vethA
step ip addr add 10.77.5.2/24 dev vethB
step ip link set vethA up
step ip link set vethB up
for d in all default vethA vethB; do
  step sysctl -qw net.ipv4.conf.$d.accept_local=1 net.ipv4.conf.$d.rp_filter=0
done
step ip rule add pref 100 from 10.77.5.1 to 10.77.5.2 iif lo lookup 100
step ip rule add pref 101 from 10.77.5.2 to 10.77.5.1 iif lo lookup 101
step ip route add 10.77.5.2 dev vethA src 10.77.5.1 table 100
step ip route add 10.77.5.1 dev vethB src 10.77.5.2 table 101
step ip rule add pref 1000 lookup local
step ip rule del pref 0
step rdma link add rxeA type rxe netdev vethA
step rdma link add rxeB type rxe netdev vethB
echo "rxeA 10.77.5.1 rxeB 10.77.5.2"
