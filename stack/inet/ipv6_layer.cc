#include "stack/inet/ipv6_layer.h"

#include <algorithm>

#include "base/log.h"

namespace bypass::inet {

namespace {

constexpr size_t kMaxPayload = 65535;  // no jumbograms (RFC 2675)

bool is_extension_header(uint8_t next_header) {
  return next_header == kIpv6HopByHop || next_header == kIpv6DestinationOptions || next_header == kIpv6Routing ||
         next_header == kIpv6Fragment;
}

// True when the first `prefix_length` bits of `a` and `b` agree.
bool same_prefix(const Ipv6Address& a, const Ipv6Address& b, uint8_t prefix_length) {
  const size_t whole = std::min<size_t>(prefix_length, 128) / 8;
  if (std::memcmp(a.bytes.data(), b.bytes.data(), whole) != 0) return false;
  const unsigned rest = prefix_length % 8;
  if (rest == 0 || whole == Ipv6Address::kLength) return true;
  const auto mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a.bytes[whole] & mask) == (b.bytes[whole] & mask);
}

// RFC 8200 §4.5 (RFC 7112 §5): a first fragment must hold the whole header chain, through the
// upper-layer header, so that nothing on the path or here has to reassemble to find the ports.
// `next_header` names what `data` (the fragmentable part's first bytes) starts with. Chains beyond
// the bytes looked at, and protocols this stack does not know, are given the benefit of the doubt.
bool holds_header_chain(uint8_t next_header, const BufferList& data) {
  constexpr size_t kTcpMinimumHeader = 20;  // RFC 9293 §3.1
  constexpr size_t kEightByteHeader = 8;    // ICMPv6 (RFC 4443 §2.1), UDP (RFC 768)
  uint8_t bytes[256];
  const size_t length = std::min(data.length(), sizeof(bytes));
  data.copy_out(0, length, bytes);
  size_t at = 0;
  for (size_t headers = 0; headers <= Ipv6Extensions::kMaxHeaders; ++headers) {
    switch (next_header) {
      case kIpv6HopByHop:
      case kIpv6DestinationOptions:
      case kIpv6Routing:
        if (at + 8 > data.length()) return false;
        if (at + 8 > length) return true;
        next_header = ipv6_extension_field::NextHeader::get(bytes + at);
        at += (size_t{ipv6_extension_field::HeaderExtLength::get(bytes + at)} + 1) * 8;
        break;
      case kIpv6Tcp:
        return at + kTcpMinimumHeader <= data.length();
      case kIpv6Icmpv6:
      case kIpv6Udp:
        return at + kEightByteHeader <= data.length();
      default:
        return true;
    }
  }
  return true;
}

}  // namespace

Ipv6Layer::Ipv6Layer(const InetSettings& settings, TimerService& timers, PacketDevice& device,
                     NeighborCache& neighbors, Ipv6AddressSet& addresses, InetStats& stats)
    : settings_(settings), device_(device), neighbors_(neighbors), addresses_(addresses), stats_(stats), reassembler_(settings, timers, stats),
      path_mtu_(settings, timers), icmp_(settings, timers, device, *this, neighbors, addresses, path_mtu_, stats),
      scratch_(new uint8_t[Ipv6Header::kLength + kMaxPayload]) {
  // RFC 8200 §4.5: a reassembly that times out with its first fragment in is reported to the
  // source with Time Exceeded, code 1, quoting that fragment.
  reassembler_.set_timeout_hook([this](const BufferList& first_fragment) {
    uint8_t raw[Ipv6Header::kLength];
    first_fragment.copy_out(0, sizeof(raw), raw);
    Ipv6Header header;
    if (Ipv6Header::parse(raw, first_fragment.length(), header) != nullptr) return;
    icmp_.send_error({Icmpv6Header::kTimeExceeded, Icmpv6Header::kReassemblyTimeExceeded, 0, 0}, header,
                     first_fragment);
  });
}

bool Ipv6Layer::accepts_destination(const Ipv6Address& destination) const {
  return addresses_.is_preferred(destination) || addresses_.listens_to(destination);
}

bool Ipv6Layer::next_hop(const Ipv6Address& destination, Ipv6Address& hop) const {
  // RFC 4861 §5.2: on-link are the destinations within our prefix, and link-local and multicast
  // ones by definition; the rest go to the default router.
  if (destination.is_multicast() || destination.is_link_local_unicast() ||
      same_prefix(destination, settings_.ipv6.address, settings_.ipv6.prefix_length)) {
    hop = destination;
    return true;
  }
  if (settings_.ipv6.gateway.is_unspecified()) return false;
  hop = settings_.ipv6.gateway;
  return true;
}

bool Ipv6Layer::send_from(const Ipv6Address& source, const Ipv6Address& destination, uint8_t next_header,
                          Packet&& frame, bool allow_fragment) {
  Ipv6Address hop;
  // Without an address of our own (IPv6 off) nothing leaves: :: is only ever a DAD source.
  if (settings_.ipv6.address.is_unspecified() || !next_hop(destination, hop)) {
    ++stats_.ipv6_tx_no_route;
    return false;
  }
  // RFC 4862 §5.4: a tentative address is not a source until DAD has passed, a duplicated one
  // never.
  if (!addresses_.is_preferred(source)) {
    ++stats_.ipv6_tx_no_source;
    return false;
  }
  const size_t payload = frame.data.length() - kIpv6FrameHeadroom;
  Ipv6Header header;
  header.next_header = next_header;
  header.hop_limit = settings_.ipv6.hop_limit;
  header.source = source;
  header.destination = destination;
  const uint32_t mtu = path_mtu(destination);
  // A TCP segment the device cuts (TxOffload::segment_payload, at the SMSS of the path MTU) may
  // exceed the MTU up to the device's limit, as over IPv4.
  const bool cut_by_device = frame.tx.segment_payload != 0 && payload <= kMaxPayload &&
                             Ipv6Header::kLength + payload <= device_.capabilities().tx_large_segment_bytes;
  if (Ipv6Header::kLength + payload > mtu && !cut_by_device) {
    if (!allow_fragment || payload > kMaxPayload) {
      ++stats_.ipv6_tx_too_big;
      return false;
    }
    return send_fragmented(header, hop, std::move(frame), mtu);
  }
  header.payload_length = static_cast<uint16_t>(payload);
  header.emit(reinterpret_cast<uint8_t*>(frame.data.segments().front().data()) + EthernetHeader::kLength);
  frame.tx.l2_length = EthernetHeader::kLength;
  frame.tx.l3_length = Ipv6Header::kLength;
  neighbors_.send_ipv6(hop, std::move(frame));
  return true;
}

bool Ipv6Layer::send_fragmented(const Ipv6Header& header, const Ipv6Address& hop, Packet&& frame, uint32_t mtu) {
  // RFC 8200 §4.5: the unfragmentable part is the fixed header alone (nothing else is sent), each
  // fragment fits the path MTU and carries a multiple of 8 bytes except the last, all under one
  // identification. (RFC 7739 would have it unpredictable; a counter is what §4.5 describes.)
  BufferList payload = frame.data.sub(kIpv6FrameHeadroom, frame.data.length() - kIpv6FrameHeadroom);
  const size_t chunk = (mtu - Ipv6Header::kLength - Ipv6FragmentHeader::kLength) & ~size_t{7};
  const uint32_t identification = next_identification_++;
  for (size_t offset = 0; offset < payload.length(); offset += chunk) {
    const size_t length = std::min(chunk, payload.length() - offset);
    Ipv6Header fragment_ip = header;
    fragment_ip.next_header = kIpv6Fragment;
    fragment_ip.payload_length = static_cast<uint16_t>(Ipv6FragmentHeader::kLength + length);
    Ipv6FragmentHeader fragment;
    fragment.next_header = header.next_header;
    fragment.offset_bytes = static_cast<uint16_t>(offset);
    fragment.more_fragments = offset + length < payload.length();
    fragment.identification = identification;
    BufferSegment head = BufferSegment::allocate(kIpv6FrameHeadroom + Ipv6FragmentHeader::kLength);
    auto* bytes = reinterpret_cast<uint8_t*>(head.data());
    fragment_ip.emit(bytes + EthernetHeader::kLength);
    fragment.emit(bytes + kIpv6FrameHeadroom);
    Packet piece;
    piece.data.append(std::move(head));
    piece.data.append(payload.sub(offset, length));
    piece.tx.l2_length = EthernetHeader::kLength;
    piece.tx.l3_length = Ipv6Header::kLength + Ipv6FragmentHeader::kLength;
    neighbors_.send_ipv6(hop, std::move(piece));
  }
  return true;
}

void Ipv6Layer::receive(Packet&& packet, const MacAddress& link_source) {
  uint8_t raw[Ipv6Header::kLength];
  Ipv6Header header;
  const char* error = "ipv6: packet shorter than the 40-byte header";
  if (packet.data.length() >= sizeof(raw)) {
    packet.data.copy_out(0, sizeof(raw), raw);
    error = Ipv6Header::parse(raw, packet.data.length(), header);
  }
  // RFC 4291 §2.7: multicast addresses are never sources.
  if (!error && header.source.is_multicast()) error = "ipv6: multicast source address";
  if (error) {
    ++stats_.rx_malformed_ipv6;
    BYPASS_LOG(Debug, "ipv6", "dropped: %s", error);
    return;
  }
  if (addresses_.address_state(header.destination) == AddressState::Tentative && !addresses_.ipv6_disabled()) {
    // RFC 4862 §5.4: packets to a tentative address are silently discarded, except the Neighbor
    // Solicitations and Advertisements Duplicate Address Detection listens for. Those have no
    // extension headers here (an ND message behind one is dropped too; RFC 6980 forbids the
    // Fragment header, and nobody sends others with ND).
    uint8_t type = 0;
    if (header.next_header == kIpv6Icmpv6 && header.payload_length >= 1)
      packet.data.copy_out(Ipv6Header::kLength, 1, &type);
    if (type != Icmpv6Header::kNeighborSolicitation && type != Icmpv6Header::kNeighborAdvertisement) {
      ++stats_.rx_ipv6_to_tentative;
      return;
    }
  } else if (!accepts_destination(header.destination)) {
    ++stats_.rx_ipv6_not_for_us;  // a host does not forward (RFC 8200 §1 "node", "host")
    return;
  }
  packet.data.truncate(Ipv6Header::kLength + header.payload_length);  // drop Ethernet padding
  process(header, std::move(packet), false, link_source);
}

const uint8_t* Ipv6Layer::contiguous(const BufferList& packet) {
  const auto segments = packet.segments();
  if (!segments.empty() && segments.front().length() >= packet.length())
    return reinterpret_cast<const uint8_t*>(segments.front().data());
  packet.copy_out(0, packet.length(), scratch_.get());  // at most 40 + 65535 bytes
  return scratch_.get();
}

void Ipv6Layer::process(const Ipv6Header& header, Packet&& packet, bool reassembled,
                        const MacAddress& link_source) {
  uint8_t protocol = header.next_header;
  size_t offset = Ipv6Header::kLength;
  size_t protocol_field = 6;  // Next Header's offset in the fixed header
  // Fast path: an upper-layer header right after the fixed one needs no walk and no copy.
  if (is_extension_header(protocol)) {
    Ipv6Extensions extensions;
    const uint8_t* bytes = contiguous(packet.data);
    if (const char* error = walk_ipv6_extensions(bytes, packet.data.length(), header, extensions)) {
      ++stats_.rx_malformed_ipv6;
      BYPASS_LOG(Debug, "ipv6", "dropped: %s", error);
      // The pointer of a reassembled packet's problem would point into a packet nobody sent.
      if (extensions.has_parameter_problem && !reassembled)
        icmp_.send_error(Icmpv6Header::parameter_problem(extensions.parameter_problem), header, packet.data);
      return;
    }
    if (extensions.has_fragment && !extensions.fragment.is_atomic()) {
      if (reassembled) {
        ++stats_.rx_malformed_ipv6;  // RFC 8200 §4.1: one Fragment header per packet
        return;
      }
      return reassemble(header, extensions, std::move(packet));
    }
    protocol = extensions.upper_protocol;
    offset = extensions.upper_offset;
    protocol_field = extensions.upper_protocol_field;
  }
  if (protocol != kIpv6Tcp && protocol != kIpv6Icmpv6 && protocol != kIpv6NoNextHeader) {
    // RFC 8200 §4: an unrecognized Next Header is answered with a Parameter Problem, code 1,
    // pointing at it (in the packet as sent, so not for a reassembled one).
    ++stats_.rx_unsupported_next_header;
    if (!reassembled)
      icmp_.send_error(Icmpv6Header::parameter_problem({Ipv6ParameterProblem::kUnrecognizedNextHeader,
                                                        static_cast<uint32_t>(protocol_field)}),
                       header, packet.data);
    return;
  }
  deliver(header, protocol, offset, std::move(packet), link_source);
}

void Ipv6Layer::reassemble(const Ipv6Header& header, const Ipv6Extensions& extensions, Packet&& packet) {
  const size_t data_offset = extensions.upper_offset;
  BufferList data = packet.data.sub(data_offset, packet.data.length() - data_offset);
  if (extensions.fragment.offset_bytes == 0 && !holds_header_chain(extensions.fragment.next_header, data)) {
    ++stats_.rx_malformed_ipv6;
    icmp_.send_error(Icmpv6Header::parameter_problem({Ipv6ParameterProblem::kIncompleteHeaderChain, 0}), header,
                     packet.data);
    return;
  }
  auto whole = reassembler_.add(header, extensions.fragment, std::move(data), packet.data);
  if (!whole) return;
  // RFC 8200 §4.5: the reassembled packet is the first fragment's unfragmentable part followed by
  // the fragmentable part. Its extension headers were processed with each fragment, so a fixed
  // header naming the fragmentable part's first header stands for it; the walk then reads the
  // headers that were inside the fragmentable part, if any.
  Ipv6Header synthetic = header;
  synthetic.next_header = whole->next_header;
  synthetic.payload_length = static_cast<uint16_t>(whole->payload.length());  // <= 65535: the walk checked
  BufferSegment head = BufferSegment::allocate(Ipv6Header::kLength);
  synthetic.emit(reinterpret_cast<uint8_t*>(head.data()));
  Packet assembled;
  assembled.data.append(std::move(head));
  assembled.data.append(std::move(whole->payload));
  assembled.rx_reassembled = true;
  process(synthetic, std::move(assembled), true, MacAddress{});
}

void Ipv6Layer::deliver(Ipv6Header header, uint8_t protocol, size_t offset, Packet&& packet,
                        const MacAddress& link_source) {
  packet.data.trim_front(offset);
  header.next_header = protocol;
  header.payload_length = static_cast<uint16_t>(packet.data.length());
  switch (protocol) {
    case kIpv6Icmpv6:
      return icmp_.receive(header, std::move(packet), link_source);
    case kIpv6Tcp:
      if (tcp_receiver_) return tcp_receiver_(header, std::move(packet));
      break;  // TCP over IPv6 is not wired yet
    default:
      break;  // kIpv6NoNextHeader (RFC 8200 §4.7: nothing follows), or an unknown protocol
  }
  ++stats_.rx_unsupported_next_header;
}

}  // namespace bypass::inet
