#include "stack/inet/nd_frames.h"

namespace bypass::inet {

namespace {

// RFC 4861 §7.1: ND messages leave with hop limit 255 so a receiver can tell they are on-link.
constexpr uint8_t kNdHopLimit = 255;

template <class Message>
Packet frame_of(const Ipv6Address& source, const Ipv6Address& destination, const Message& message) {
  const size_t icmp_length = message.emitted_length();
  BufferSegment seg = BufferSegment::allocate(EthernetHeader::kLength + Ipv6Header::kLength + icmp_length);
  auto* bytes = reinterpret_cast<uint8_t*>(seg.data());
  Ipv6Header ip;
  ip.payload_length = static_cast<uint16_t>(icmp_length);
  ip.next_header = kIpv6Icmpv6;
  ip.hop_limit = kNdHopLimit;
  ip.source = source;
  ip.destination = destination;
  ip.emit(bytes + EthernetHeader::kLength);
  message.emit(bytes + EthernetHeader::kLength + Ipv6Header::kLength, source, destination);
  Packet frame;
  frame.data.append(std::move(seg));
  return frame;
}

}  // namespace

Packet nd_frame(const Ipv6Address& source, const Ipv6Address& destination, const NeighborSolicitation& message) {
  return frame_of(source, destination, message);
}

Packet nd_frame(const Ipv6Address& source, const Ipv6Address& destination, const NeighborAdvertisement& message) {
  return frame_of(source, destination, message);
}

NeighborAdvertisement advertisement_of_ours(const Ipv6Address& target, const MacAddress& mac, bool solicited) {
  NeighborAdvertisement na;
  na.solicited = solicited;
  na.override_flag = true;
  na.target = target;
  na.options.target_link_layer = mac;
  return na;
}

}  // namespace bypass::inet
