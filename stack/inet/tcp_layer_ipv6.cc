// TcpLayer's IPv6 edges: input from Ipv6Layer and ICMPv6 errors about our segments. Everything
// else (demultiplexing, listeners, cookies, the connections, and output with its checksum and
// large-segment offloads, TcpSegmentOutput::send) is shared with IPv4 in tcp_layer.cc: the family
// lives in the tuple.
#include <algorithm>

#include "base/log.h"
#include "stack/inet/tcp_layer.h"
#include "stack/inet/tcp_receive_checksum.h"
#include "stack/inet/wire/checksum.h"
#include "stack/inet/wire/icmpv6.h"

namespace bypass::inet {

void TcpLayer::receive(const Ipv6Header& ip, Packet&& packet) {
  // RFC 8200 §8.1: the checksum covers the pseudo-header with the upper-layer length, which is
  // `ip.payload_length` as Ipv6Layer delivers it (extension headers excluded) and the length of
  // `packet.data`. Unlike IPv4 there is no header checksum below, so this is the only check.
  if (!tcp_receive_checksum_ok(ip.source, ip.destination, packet, stats_)) return;
  // TCP is unicast (RFC 9293 §3.9.1 ties a connection to one remote address): Ipv6Layer also
  // accepts our multicast groups, and a source must be a unicast address we could answer.
  if (ip.destination.is_multicast() || ip.source.is_multicast() || ip.source.is_unspecified() ||
      IpAddress(ip.source).is_v4()) {
    ++stats_.rx_malformed_tcp;
    BYPASS_LOG(Debug, "tcp", "dropped segment from %s: not unicast", ip.source.to_string().c_str());
    return;
  }
  // GRO merges at the TCP level only, so an IPv6 segment may join a unit like an IPv4 one; as
  // there, reassembled packets and device-merged ones (LRO) stay on their own (tcp_gro.h).
  const bool coalescable = !packet.rx_reassembled;
  receive_verified(ip.source, ip.destination, std::move(packet), coalescable);
}

bool TcpLayer::quote_in_flight(const Ipv6Header& quoted, const uint8_t* after_header, size_t length) const {
  return quoted_connection(quoted, after_header, length) != nullptr;
}

std::shared_ptr<TcpConnection> TcpLayer::quoted_connection(const Ipv6Header& quoted, const uint8_t* after_header,
                                                           size_t length) const {
  // Our segments never carry extension headers, so a quote of one has TCP right after the fixed
  // header; anything else is not about a segment of ours.
  if (quoted.next_header != kIpv6Tcp || length < tcp_field::Seq::kEnd) return nullptr;
  const TcpView quoted_tcp(after_header, length);
  const FourTuple tuple{quoted.source, quoted_tcp.src_port(), quoted.destination, quoted_tcp.dst_port()};
  auto connection = find(tuple);
  if (!connection) return nullptr;
  // RFC 5927 §4.1 (as Linux's tcp_v6_err): act only when the quoted sequence number is in flight,
  // which a blind attacker must guess.
  const SeqNumber seq = quoted_tcp.seq_number();
  if (!seq_in(seq, connection->snd_una_, connection->snd_max_ + 1)) return nullptr;
  return connection;
}

void TcpLayer::on_icmpv6_error(const Icmpv6Header& error, const Ipv6Header& quoted, const uint8_t* after_header,
                               size_t length) {
  const std::shared_ptr<TcpConnection> connection = quoted_connection(quoted, after_header, length);
  if (!connection) return;
  switch (error.type) {
    case Icmpv6Header::kPacketTooBig: {
      // Icmpv6Layer already validated the quote and lowered the destination's entry (RFC 8201
      // §4: never below 1280, never raised); the connection takes that, never more than it has,
      // and resends its flight smaller (§5.4).
      const uint32_t mtu = std::min<uint32_t>(path_mtu(connection->tuple()), connection->path_mtu_);
      connection->on_path_mtu(static_cast<uint16_t>(mtu));
      break;
    }
    case Icmpv6Header::kDestinationUnreachable:
      // RFC 4443 §3.1 with RFC 1122 §4.2.3.9 / RFC 5461 §4: port unreachable is a hard error (as
      // IPv4's port and protocol unreachable); no route, prohibited, beyond scope, address
      // unreachable, source policy and reject route are soft: the connection keeps retransmitting.
      if (error.code == Icmpv6Header::kPortUnreachable) connection->on_unreachable();
      break;
    case Icmpv6Header::kParameterProblem:
      // RFC 4443 §3.4 code 1, unrecognized Next Header: the peer has no TCP, IPv4's protocol
      // unreachable.
      if (error.code == 1) connection->on_unreachable();
      break;
    default:
      break;  // Time Exceeded: soft (RFC 1122 §4.2.3.9)
  }
}

void TcpLayer::confirm_reachable(const IpAddress& remote) {
  Ipv6Address hop;
  if (remote.is_v6() && ip6_.next_hop(remote.v6(), hop)) neighbors_.confirm_reachable(hop);
}

}  // namespace bypass::inet
