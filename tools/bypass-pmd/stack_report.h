// Printing the stack's state for operators: the ARP cache and the TCP connections of every worker
// (each worker owns its replica and its connections), and the port's queues and flow rules, as text
// tables or JSON lines.
#pragma once

#include <string>
#include <vector>

#include "stack/inet/arp_resolver.h"
#include "stack/inet/neighbor_cache.h"
#include "stack/inet/tcp_layer.h"

namespace bypass::tools {

struct WorkerState {
  unsigned worker = 0;
  std::vector<inet::ArpEntryInfo> arp;
  bool ipv6 = false;  // dpdk.host_ipv6 set: the neighbour cache below is in use
  std::vector<inet::NeighborEntryInfo> neighbors;
  std::vector<inet::OwnAddressInfo> addresses;  // our own IPv6 addresses and their DAD state
  std::vector<inet::ConnectionInfo> connections;
  std::vector<uint16_t> listening;
};

void print_arp(const std::vector<WorkerState>& workers, bool json);
// Our IPv6 addresses with their DAD state (RFC 4862 §5.4: TENTATIVE, PREFERRED, DUPLICATED), then
// the IPv6 neighbour cache (RFC 4861 §7.3.2 states in capitals, as `ip -6 neigh` prints them).
void print_neighbors(const std::vector<WorkerState>& workers, bool json);
void print_connections(const std::vector<WorkerState>& workers, bool json);

// The port under the stack: packets each receive queue took (where rules or RSS put them) and,
// under dpdk.flow_isolate, the rte_flow rules claiming the stack's traffic.
struct PortState {
  bool isolated = false;
  std::vector<uint64_t> rx_queue_packets;
  std::vector<std::string> flow_rules;  // "ID RULE" in testpmd syntax
};
void print_port(const PortState& port, bool json);

}  // namespace bypass::tools
