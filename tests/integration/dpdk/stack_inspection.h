// What a test peer can learn about its own dpdk stack from outside the socket interface: TCP
// connection state, drop and recovery counters, ARP entries. Each call runs on the workers'
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

}  // namespace bypass::testing
