// What a test peer can learn about its own dpdk stack from outside the socket interface: TCP
// connection state, drop and recovery counters, ARP and Neighbor Discovery entries, IPv6 path MTUs. Each call runs on the workers'
// threads and waits; on other transports (state in the kernel) they do nothing.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "stack/network_stack.h"

namespace bypass::testing {

// True when `stack` is the dpdk transport (the calls below have something to show).
bool is_dpdk_stack(NetworkStack& stack);

// One line per TCP connection ("  worker I: " + TcpConnection::describe()).
void print_tcp_connections(NetworkStack& stack, std::ostream& out);

// "stats worker I: name=value ..." with each worker's non-zero counters, then the port's drops.
void print_inet_stats(NetworkStack& stack, std::ostream& out);

// TCP connections with work left (all but TIME-WAIT). A closed socket hands its unsent bytes and
// FIN to the userspace stack, which sends them only while the process runs: unlike the kernel,
// nothing delivers them after exit.
size_t unfinished_tcp_connections(NetworkStack& stack);

// "arp IP MAC" or "arp IP unresolved" for each address, from worker 0's ARP table (the workers'
// replicas agree). `ips` must be valid dotted quads.
void print_arp_entries(NetworkStack& stack, const std::vector<std::string>& ips, std::ostream& out);

// The IPv6 counterpart: "neigh IP MAC" or "neigh IP unresolved" for each address, from worker 0's
// Neighbor Discovery cache (what one worker learns every worker learns). `ips` must be valid IPv6
// addresses; each is printed in its canonical form (RFC 5952).
void print_neighbor_entries(NetworkStack& stack, const std::vector<std::string>& ips, std::ostream& out);

// For each IPv6 destination: "path_mtu IP N" from worker 0's path MTU table (the link MTU unless a
// Packet Too Big lowered it), then "send_mss [IP]:PORT N bytes_acked=B" for each TCP connection to
// it on any worker, TIME-WAIT included: its SMSS (timestamps excluded) and the data the peer
// acknowledged (0 for a connection that carried none, whose SMSS nothing had reason to lower).
void print_path_mtu(NetworkStack& stack, const std::vector<std::string>& ips, std::ostream& out);

// print_path_mtu's "send_mss" line for the TCP connection whose local port is `local`'s, read on
// worker `worker`'s own thread (call it there, e.g. when a client completes, before its socket
// closes and the connection may be gone); empty when there is none or the stack is not dpdk.
std::string send_mss_of(NetworkStack& stack, unsigned worker, const SocketAddress& local);

}  // namespace bypass::testing
