// The receive-side TCP checksum check both families share (tcp_layer.cc, tcp_layer_ipv6.cc): the
// device's verdict when it checked (RxChecksum), else the sum over the pseudo-header of the
// segment's family (RFC 9293 §3.1 for IPv4, RFC 8200 §8.1 for IPv6). A failure is counted and
// logged here, so both receive paths report it the same way.
#pragma once

#include "base/log.h"
#include "stack/inet/packet.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/wire/tcp.h"

namespace bypass::inet {

// True when the segment in `packet.data` may be processed.
template <typename Address>
bool tcp_receive_checksum_ok(const Address& source, const Address& destination, const Packet& packet,
                             InetStats& stats) {
  if (packet.rx_l4_checksum == RxChecksum::Good ||
      (packet.rx_l4_checksum == RxChecksum::Unknown && tcp_checksum(source, destination, packet.data) == 0))
    return true;
  ++stats.tcp_bad_checksum;
  BYPASS_LOG(Debug, "tcp", "dropped segment from %s: bad checksum", source.to_string().c_str());
  return false;
}

}  // namespace bypass::inet
