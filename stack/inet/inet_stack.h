// One userspace TCP/IP stack instance: Ethernet demultiplexing on top of a PacketDevice, with
// ARP, IPv4/ICMP and TCP, and IPv6/ICMPv6/Neighbor Discovery when an IPv6 address is configured
// with TCP over both families. Share-nothing: each worker builds its own instance (own connection
// table, timers, ARP replica) and feeds it the frames of its own queue.
#pragma once

#include <memory>

#include "stack/inet/arp_resolver.h"
#include "stack/inet/device.h"
#include "stack/inet/icmp_echo.h"
#include "stack/inet/inet_options.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/ipv4_layer.h"
#include "stack/inet/ipv6_address_set.h"
#include "stack/inet/ipv6_layer.h"
#include "stack/inet/neighbor_cache.h"
#include "stack/inet/tcp_layer.h"
#include "stack/inet/timer_service.h"

namespace bypass::inet {

class InetStack {
 public:
  // `secret_seed` keys ISN and SYN-cookie generation; pass a random value in production.
  InetStack(const InetSettings& settings, PacketDevice& device, TimerService& timers,
            uint64_t secret_seed);
  ~InetStack();
  InetStack(const InetStack&) = delete;
  InetStack& operator=(const InetStack&) = delete;

  // Announce ourselves (gratuitous ARP) and, with IPv6, start Duplicate Address Detection of the
  // link-local and configured addresses (RFC 4862 §5.4); each is announced with an unsolicited
  // Neighbor Advertisement and usable once it passes, nd_retrans_timer * dad_transmits later.
  void start();
  // A received Ethernet frame.
  void receive(Packet&& frame);
  // Frames received between the two belong to one receive burst (one poll of the device): TCP
  // segments may be held and coalesced (tcp_gro.h) until end_burst(), which processes them.
  void begin_burst() { tcp_.begin_burst(); }
  void end_burst() { tcp_.end_burst(); }

  const InetSettings& settings() const { return settings_; }
  InetStats& stats() { return stats_; }
  ArpResolver& arp() { return arp_; }
  Ipv4Layer& ipv4() { return ipv4_; }
  Ipv6AddressSet& addresses() { return addresses_; }
  NeighborCache& neighbors() { return neighbors_; }
  Ipv6Layer& ipv6() { return ipv6_; }
  bool ipv6_enabled() const { return !settings_.ipv6.address.is_unspecified(); }
  TcpLayer& tcp() { return tcp_; }
  IcmpEcho& echo() { return echo_; }
  TimerService& timers() { return timers_; }

 private:
  // The Ethernet groups IPv6 listens to (RFC 2464 §7): our addresses' solicited-node groups and
  // all-nodes.
  bool is_ipv6_group(const MacAddress& destination) const;

  InetSettings settings_;
  PacketDevice& device_;
  TimerService& timers_;
  InetStats stats_;
  ArpResolver arp_;
  Ipv4Layer ipv4_;
  Ipv6AddressSet addresses_;
  NeighborCache neighbors_;
  Ipv6Layer ipv6_;
  TcpLayer tcp_;
  IcmpEcho echo_;
};

}  // namespace bypass::inet
