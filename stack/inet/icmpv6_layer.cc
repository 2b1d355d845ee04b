#include "stack/inet/icmpv6_layer.h"

#include <algorithm>

#include "base/log.h"
#include "stack/inet/ipv6_layer.h"

namespace bypass::inet {

namespace {

// Whether `packet` (whole, fixed header first) carries an ICMPv6 error message, looking through
// the extension headers in its first bytes: a first fragment's Fragment header included, so a
// fragmented error whose reassembly failed is recognised too. A packet whose ICMPv6 header lies
// beyond them, or in a later fragment, reads as no error.
namespace extension = ipv6_extension_field;

bool carries_icmpv6_error(const Ipv6Header& header, const BufferList& packet) {
  uint8_t bytes[Icmpv6Layer::kQuotedBytes];
  const size_t length = std::min(packet.length(), sizeof(bytes));
  packet.copy_out(0, length, bytes);
  uint8_t next = header.next_header;
  size_t at = Ipv6Header::kLength;
  for (size_t headers = 0; headers <= Ipv6Extensions::kMaxHeaders && at + 8 <= length; ++headers) {
    switch (next) {
      case kIpv6Icmpv6:
        // RFC 4443 §2.1: types 0-127 are errors
        return icmp_field::Type::get(bytes + at) < Icmpv6Header::kEchoRequest;
      case kIpv6Fragment:
        if ((extension::FragmentOffsetFlags::get(bytes + at) & Ipv6FragmentHeader::kOffsetMask) != 0) return false;
        next = extension::NextHeader::get(bytes + at);
        at += Ipv6FragmentHeader::kLength;
        break;
      case kIpv6HopByHop:
      case kIpv6DestinationOptions:
      case kIpv6Routing:
        next = extension::NextHeader::get(bytes + at);
        at += (size_t{extension::HeaderExtLength::get(bytes + at)} + 1) * 8;
        break;
      default:
        return false;
    }
  }
  return false;
}

}  // namespace

Icmpv6Layer::Icmpv6Layer(const InetSettings& settings, TimerService& timers, PacketDevice& device, Ipv6Layer& ip,
                         NeighborCache& neighbors, Ipv6AddressSet& addresses, Ipv6PathMtu& path_mtu, InetStats& stats)
    : settings_(settings), timers_(timers), device_(device), ip_(ip), neighbors_(neighbors), addresses_(addresses),
      path_mtu_(path_mtu), stats_(stats), error_tokens_(settings.ipv6.icmp_error_burst), tokens_updated_(timers.now()) {}

bool Icmpv6Layer::take_error_token() {
  const uint32_t rate = settings_.ipv6.icmp_errors_per_second;
  if (rate == 0) return false;
  const int64_t per_token = std::chrono::nanoseconds(1s).count() / rate;
  const TimePoint now = timers_.now();
  const int64_t earned = (now - tokens_updated_).count() / per_token;
  if (earned > 0) {
    error_tokens_ = static_cast<uint32_t>(
        std::min<int64_t>(settings_.ipv6.icmp_error_burst, int64_t{error_tokens_} + earned));
    // Keep the fraction of a token already earned, unless the bucket is full.
    tokens_updated_ = error_tokens_ == settings_.ipv6.icmp_error_burst
                          ? now
                          : tokens_updated_ + std::chrono::nanoseconds(earned * per_token);
  }
  if (error_tokens_ == 0) return false;
  --error_tokens_;
  return true;
}

bool Icmpv6Layer::send_error(const Icmpv6Header& error, const Ipv6Header& invoking_header,
                             const BufferList& invoking) {
  // RFC 4443 §2.4 (e): never about an ICMPv6 error, never about a packet whose source does not
  // name a single node, and not about a packet to a multicast address except Packet Too Big and a
  // Parameter Problem for an unrecognized option that asked for one (code 2).
  if (carries_icmpv6_error(invoking_header, invoking)) return false;
  if (invoking_header.source.is_unspecified() || invoking_header.source.is_multicast()) return false;
  if (invoking_header.destination.is_multicast() && error.type != Icmpv6Header::kPacketTooBig &&
      !(error.type == Icmpv6Header::kParameterProblem && error.code == Ipv6ParameterProblem::kUnrecognizedOption))
    return false;
  if (!take_error_token()) {
    ++stats_.icmpv6_errors_rate_limited;
    return false;
  }
  // §2.4 (c): as much of the invoking packet as fits in a 1280-byte packet.
  const size_t quoted = std::min(invoking.length(), Icmpv6Header::kMaxErrorMessage - Icmpv6Header::kLength);
  BufferList body = invoking.sub(0, quoted);
  BufferSegment head = BufferSegment::allocate(kIpv6FrameHeadroom + Icmpv6Header::kLength);
  // §2.2: from the address the invoking packet was sent to when that is one of ours, else from
  // the address source selection picks for its source.
  const Ipv6Address source = addresses_.is_preferred(invoking_header.destination)
                                 ? invoking_header.destination
                                 : ip_.source_address(invoking_header.source);
  error.emit(reinterpret_cast<uint8_t*>(head.data()) + kIpv6FrameHeadroom, source, invoking_header.source, body);
  Packet frame;
  frame.data.append(std::move(head));
  frame.data.append(std::move(body));
  if (!ip_.send_from(source, invoking_header.source, kIpv6Icmpv6, std::move(frame))) return false;
  ++stats_.icmpv6_errors_sent;
  if (error.type == Icmpv6Header::kParameterProblem) ++stats_.ipv6_parameter_problems_sent;
  return true;
}

void Icmpv6Layer::receive(const Ipv6Header& ip, Packet&& packet, const MacAddress& link_source) {
  Icmpv6Header icmp;
  if (const char* error = Icmpv6Header::parse(packet.data, ip.source, ip.destination, icmp)) {
    ++stats_.rx_malformed_icmpv6;
    BYPASS_LOG(Debug, "icmpv6", "dropped: %s", error);
    return;
  }
  // RFC 6980 §5: Neighbor Discovery messages are never fragmented; one reassembled from fragments
  // is silently dropped (an attacker's way round the hop-limit check and RA guards).
  if (packet.rx_reassembled && icmp.type >= Icmpv6Header::kRouterSolicitation &&
      icmp.type <= Icmpv6Header::kRedirect) {
    ++stats_.rx_malformed_nd;
    return;
  }
  switch (icmp.type) {
    case Icmpv6Header::kEchoRequest:
      return reply_to_echo(ip, icmp, packet.data);
    case Icmpv6Header::kEchoReply:
      if (echo_reply_) echo_reply_(ip, icmp, packet.data);
      return;
    case Icmpv6Header::kNeighborSolicitation:
      return neighbors_.receive_solicitation(ip, packet.data, link_source);
    case Icmpv6Header::kNeighborAdvertisement:
      return neighbors_.receive_advertisement(ip, packet.data, link_source);
    case Icmpv6Header::kRouterSolicitation:
    case Icmpv6Header::kRouterAdvertisement:
      return receive_router_message(ip, icmp, packet.data);
    default:
      break;
  }
  // §2.4 (d): errors of unknown type go to the upper layer like known ones; (b): unknown
  // informational messages (Redirect among them, for now) are silently discarded.
  if (icmp.is_error()) receive_error(icmp, packet.data);
}

void Icmpv6Layer::reply_to_echo(const Ipv6Header& ip, const Icmpv6Header& request, const BufferList& message) {
  if (ip.source.is_unspecified()) {
    ++stats_.rx_malformed_icmpv6;  // nobody to answer
    return;
  }
  // §4.2: the reply carries the request's identifier, sequence number and data unchanged. It comes
  // from the address the request was sent to (§4.2 "Source Address"; a link-local one included),
  // or for a request to a multicast group from the unicast address source selection picks.
  const Ipv6Address source = ip.destination.is_multicast() ? ip_.source_address(ip.source) : ip.destination;
  BufferList body = message.sub(Icmpv6Header::kLength, message.length() - Icmpv6Header::kLength);
  BufferSegment head = BufferSegment::allocate(kIpv6FrameHeadroom + Icmpv6Header::kLength);
  Icmpv6Header reply{Icmpv6Header::kEchoReply, 0, 0, request.rest};
  reply.emit(reinterpret_cast<uint8_t*>(head.data()) + kIpv6FrameHeadroom, source, ip.source, body);
  Packet frame;
  frame.data.append(std::move(head));
  frame.data.append(std::move(body));
  // A request reassembled from fragments gets its reply fragmented the same way.
  if (ip_.send_from(source, ip.source, kIpv6Icmpv6, std::move(frame), true)) ++stats_.icmpv6_echo_replies_sent;
}

void Icmpv6Layer::receive_error(const Icmpv6Header& icmp, const BufferList& message) {
  ++stats_.icmpv6_errors_received;
  // §3: after the 8-byte header comes as much of the invoking packet as fit.
  const size_t available = message.length() - Icmpv6Header::kLength;
  if (available < Ipv6Header::kLength + 8) {
    ++stats_.rx_malformed_icmpv6;
    return;
  }
  uint8_t quoted[kQuotedBytes];
  const size_t copy = std::min(available, sizeof(quoted));
  message.copy_out(Icmpv6Header::kLength, copy, quoted);
  // The quoted payload length refers to the whole original packet, not all here: parse with the
  // largest possible length and use only the fixed fields.
  Ipv6Header inner;
  if (Ipv6Header::parse(quoted, Ipv6Header::kLength + 65535, inner) != nullptr) {
    ++stats_.rx_malformed_icmpv6;
    return;
  }
  if (!addresses_.address_state(inner.source)) return;  // not about a packet of ours
  if (icmp.type == Icmpv6Header::kPacketTooBig) {
    ++stats_.icmpv6_packet_too_big_received;
    // RFC 5927 §4.1 (Linux's tcp_v6_err checks before it updates the route): a Packet Too Big
    // about a TCP segment counts only if the segment is one of a connection's, with a sequence
    // number in flight, which a blind attacker must guess. Checked before the destination's path
    // MTU changes: the table is shared by every connection to it, so a forged error would shrink
    // them all. Quotes of other packets of ours (echo replies, errors) cannot be checked and
    // lower it as RFC 8201 §4 says (never below 1280, never raised).
    if (inner.next_header == kIpv6Tcp &&
        !(tcp_quote_validator_ &&
          tcp_quote_validator_(inner, quoted + Ipv6Header::kLength, copy - Ipv6Header::kLength))) {
      ++stats_.icmpv6_packet_too_big_unvalidated;
      BYPASS_LOG(Debug, "icmpv6", "ignored a Packet Too Big to %s: its TCP quote matches no segment in flight",
                 inner.destination.to_string().c_str());
      return;
    }
    const uint32_t mtu = path_mtu_.on_packet_too_big(inner.destination, icmp.mtu(), device_.mtu());
    BYPASS_LOG(Debug, "icmpv6", "path MTU to %s is %u (reported %u)", inner.destination.to_string().c_str(), mtu,
               icmp.mtu());
  }
  if (error_receiver_) error_receiver_(icmp, inner, quoted + Ipv6Header::kLength, copy - Ipv6Header::kLength);
}

void Icmpv6Layer::receive_router_message(const Ipv6Header& ip, const Icmpv6Header& icmp, const BufferList& message) {
  uint8_t raw[NeighborCache::kMaxMessage];
  const char* error = message.length() > sizeof(raw) ? "nd: router message longer than the buffer" : nullptr;
  if (!error) {
    message.copy_out(0, message.length(), raw);
    if (icmp.type == Icmpv6Header::kRouterSolicitation) {
      RouterSolicitation rs;
      error = RouterSolicitation::parse(raw, message.length(), rs);
      if (!error) error = validate_router_solicitation(ip, message.length(), rs);
    } else {
      RouterAdvertisement ra;
      error = RouterAdvertisement::parse(raw, message.length(), ra);
      if (!error) error = validate_router_advertisement(ip, message.length(), ra);
    }
  }
  if (error) {
    ++stats_.rx_malformed_nd;
    BYPASS_LOG(Debug, "nd", "dropped: %s", error);
  }
}

}  // namespace bypass::inet
