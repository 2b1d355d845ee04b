// Per-destination IPv6 path MTU (RFC 8201): learned from ICMPv6 Packet Too Big, never below the
// IPv6 minimum link MTU of 1280 (RFC 8200 §5, RFC 8201 §4), never raised by a Packet Too Big
// (§4), and forgotten after `path_mtu_timeout` so a larger path is found again (§4: at least five
// minutes, ten recommended). Bounded: when full, the entry closest to expiry makes room.
//
// IPv4 keeps its path MTU per TCP connection (Fragmentation Needed goes straight to the connection,
// TcpLayer::on_unreachable). IPv6 keeps it here per destination, as RFC 8201 §5.2 suggests, so that
// every packet to the destination (TCP, echo replies, errors) fits; TCP will also be told.
#pragma once

#include <cstdint>
#include <map>

#include "stack/inet/inet_options.h"
#include "stack/inet/timer_service.h"
#include "stack/inet/wire/bytes.h"

namespace bypass::inet {

class Ipv6PathMtu {
 public:
  Ipv6PathMtu(const InetSettings& settings, const TimerService& timers) : settings_(settings), timers_(timers) {}

  // A Packet Too Big for `destination` reported `mtu`. Returns the path MTU now in force for it
  // (at most `link_mtu`).
  uint32_t on_packet_too_big(const Ipv6Address& destination, uint32_t mtu, uint32_t link_mtu);
  // The path MTU to use for `destination` over a link of `link_mtu`.
  uint32_t get(const Ipv6Address& destination, uint32_t link_mtu) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint32_t mtu = 0;
    TimePoint expires{0};
  };
  const InetSettings& settings_;
  const TimerService& timers_;
  std::map<Ipv6Address, Entry> entries_;
};

}  // namespace bypass::inet
