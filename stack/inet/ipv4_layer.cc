#include "stack/inet/ipv4_layer.h"

#include "base/log.h"
#include "stack/inet/wire/icmp.h"

namespace bypass::inet {

Ipv4Layer::Ipv4Layer(const InetSettings& settings, TimerService& timers, PacketDevice& device,
                     ArpResolver& arp, InetStats& stats)
    : settings_(settings), device_(device), arp_(arp), stats_(stats),
      reassembler_(settings, timers, stats) {}

bool Ipv4Layer::next_hop(Ipv4Address destination, Ipv4Address& hop) const {
  uint32_t mask = settings_.netmask.value;
  if (destination.is_broadcast() ||
      (destination.value & mask) == (settings_.address.value & mask)) {
    hop = destination;
    return true;
  }
  if (settings_.gateway.is_zero()) return false;
  hop = settings_.gateway;  // RFC 1122 §3.3.1.1: off-subnet destinations go to a gateway
  return true;
}

bool Ipv4Layer::send(Ipv4Address destination, IpProtocol protocol, Packet&& frame,
                     bool dont_fragment) {
  Ipv4Address hop;
  if (!next_hop(destination, hop)) {
    ++stats_.tx_no_route;
    return false;
  }
  size_t ip_length = frame.data.length() - EthernetHeader::kLength;
  // A TCP segment the device cuts (TxOffload::segment_payload) may exceed the MTU up to its limit.
  const bool cut_by_device = frame.tx.segment_payload != 0 && ip_length <= 65535 &&
                             ip_length <= device_.capabilities().tx_large_segment_bytes;
  if (ip_length > device_.mtu() && !cut_by_device) {
    if (dont_fragment || ip_length > 65535) {
      ++stats_.tx_too_big;
      return false;
    }
    return send_fragmented(destination, hop, protocol, std::move(frame));
  }
  Ipv4Header header;
  header.total_length = static_cast<uint16_t>(ip_length);
  header.identification = next_identification_;
  // One identification per frame on the wire: the device numbers the pieces it cuts upwards from
  // this one (at most ip_length / segment_payload + 1 of them).
  next_identification_ = static_cast<uint16_t>(
      next_identification_ + (cut_by_device ? ip_length / frame.tx.segment_payload + 1 : 1));
  header.flags_fragment = dont_fragment ? Ipv4Header::kFlagDontFragment : 0;
  header.ttl = settings_.ttl;
  header.protocol = static_cast<uint8_t>(protocol);
  header.source = settings_.address;
  header.destination = destination;
  bool offload = device_.capabilities().tx_ipv4_checksum;
  auto* bytes = reinterpret_cast<uint8_t*>(frame.data.segments().front().data());
  header.emit(bytes + EthernetHeader::kLength, !offload);
  frame.tx.ipv4_checksum = offload;
  frame.tx.l2_length = EthernetHeader::kLength;
  frame.tx.l3_length = Ipv4Header::kMinLength;
  arp_.send_ipv4(hop, std::move(frame));
  return true;
}

bool Ipv4Layer::send_fragmented(Ipv4Address destination, Ipv4Address hop, IpProtocol protocol,
                                Packet&& frame) {
  // RFC 791 §3.2 "fragmentation": every fragment but the last carries a multiple of 8 bytes.
  BufferList payload = frame.data.sub(kFrameHeadroom, frame.data.length() - kFrameHeadroom);
  size_t chunk = (device_.mtu() - Ipv4Header::kMinLength) & ~size_t{7};
  uint16_t identification = next_identification_++;
  bool offload = device_.capabilities().tx_ipv4_checksum;
  for (size_t offset = 0; offset < payload.length(); offset += chunk) {
    size_t length = std::min(chunk, payload.length() - offset);
    bool last = offset + length == payload.length();
    Ipv4Header header;
    header.total_length = static_cast<uint16_t>(Ipv4Header::kMinLength + length);
    header.identification = identification;
    header.flags_fragment =
        static_cast<uint16_t>((last ? 0 : Ipv4Header::kFlagMoreFragments) | (offset / 8));
    header.ttl = settings_.ttl;
    header.protocol = static_cast<uint8_t>(protocol);
    header.source = settings_.address;
    header.destination = destination;
    BufferSegment head = BufferSegment::allocate(kFrameHeadroom);
    header.emit(reinterpret_cast<uint8_t*>(head.data()) + EthernetHeader::kLength, !offload);
    Packet fragment;
    fragment.data.append(std::move(head));
    fragment.data.append(payload.sub(offset, length));
    fragment.tx.ipv4_checksum = offload;
    fragment.tx.l2_length = EthernetHeader::kLength;
    fragment.tx.l3_length = Ipv4Header::kMinLength;
    arp_.send_ipv4(hop, std::move(fragment));
  }
  return true;
}

void Ipv4Layer::receive(Packet&& packet) {
  uint8_t raw[Ipv4Header::kMaxLength];
  size_t copy = std::min(packet.data.length(), sizeof(raw));
  packet.data.copy_out(0, copy, raw);
  Ipv4Header header;
  // `raw` holds min(length, 60) bytes; parse reads at most IHL*4 <= that many once it has checked
  // IHL against the full length.
  bool verify = packet.rx_ip_checksum == RxChecksum::Unknown;
  const char* error = packet.rx_ip_checksum == RxChecksum::Bad
                          ? "ipv4: bad header checksum (device)"
                          : Ipv4Header::parse(raw, packet.data.length(), verify, header);
  if (error) {
    ++stats_.rx_malformed_ipv4;
    BYPASS_LOG(Debug, "ipv4", "dropped: %s", error);
    return;
  }
  if (header.destination != settings_.address && !header.destination.is_broadcast()) {
    ++stats_.rx_ipv4_not_for_us;  // a host does not forward (RFC 1122 §3.3.1)
    return;
  }
  packet.data.truncate(header.total_length);  // drop Ethernet padding
  packet.data.trim_front(header.header_length);
  if (header.is_fragment()) {
    auto whole = reassembler_.add(header, std::move(packet.data));
    if (!whole) return;
    header.total_length = static_cast<uint16_t>(
        std::min<size_t>(65535, whole->length() + header.header_length));
    header.flags_fragment = 0;
    Packet assembled(std::move(*whole));
    assembled.rx_ip_checksum = RxChecksum::Good;  // each fragment's header was checked
    assembled.rx_reassembled = true;
    return deliver(header, std::move(assembled));
  }
  deliver(header, std::move(packet));
}

void Ipv4Layer::deliver(const Ipv4Header& header, Packet&& packet) {
  switch (static_cast<IpProtocol>(header.protocol)) {
    case IpProtocol::Tcp:
      if (tcp_receiver_) return tcp_receiver_(header, std::move(packet));
      break;
    case IpProtocol::Icmp:
      return receive_icmp(header, std::move(packet));
    default:
      break;
  }
  ++stats_.rx_unsupported_protocol;
}

void Ipv4Layer::receive_icmp(const Ipv4Header& header, Packet&& packet) {
  IcmpHeader icmp;
  if (const char* error = IcmpHeader::parse(packet.data, icmp)) {
    ++stats_.rx_malformed_icmp;
    BYPASS_LOG(Debug, "icmp", "dropped: %s", error);
    return;
  }
  if (icmp.type == IcmpHeader::kEchoRequest) {
    if (header.destination.is_broadcast()) return;  // RFC 1122 §3.2.2.6 allows ignoring these
    // RFC 792: the reply carries the request's identifier, sequence and data unchanged.
    BufferList body = packet.data.sub(IcmpHeader::kLength, packet.data.length() - IcmpHeader::kLength);
    BufferSegment head = BufferSegment::allocate(kFrameHeadroom + IcmpHeader::kLength);
    IcmpHeader reply{IcmpHeader::kEchoReply, 0, 0, icmp.rest};
    reply.emit(reinterpret_cast<uint8_t*>(head.data()) + kFrameHeadroom, body);
    Packet frame;
    frame.data.append(std::move(head));
    frame.data.append(std::move(body));
    ++stats_.icmp_echo_replies_sent;
    send(header.source, IpProtocol::Icmp, std::move(frame), false);
    return;
  }
  if (icmp.type == IcmpHeader::kEchoReply) {
    if (header.destination.is_broadcast()) return;  // our requests go to unicast addresses only
    if (echo_reply_) echo_reply_(header, icmp, packet.data);
    return;
  }
  if (icmp.type == IcmpHeader::kDestinationUnreachable) {
    ++stats_.icmp_unreachable_received;
    // Body: the original IPv4 header and at least its first 8 payload bytes (RFC 792).
    size_t body_length = packet.data.length() - IcmpHeader::kLength;
    uint8_t quoted[Ipv4Header::kMaxLength + 8];
    size_t copy = std::min(body_length, sizeof(quoted));
    packet.data.copy_out(IcmpHeader::kLength, copy, quoted);
    // The quoted total length refers to the original datagram, which is not all here: only the
    // fields needed are read, after the header and 8 bytes of its payload are known to be in.
    const Ipv4View quoted_ip(quoted, copy);
    if (quoted_ip.check_len() != nullptr || quoted_ip.header_length() + 8 > copy) {
      ++stats_.rx_malformed_icmp;
      return;
    }
    Ipv4Header inner;
    inner.header_length = static_cast<uint8_t>(quoted_ip.header_length());
    inner.protocol = quoted_ip.protocol();
    inner.source = quoted_ip.source();
    inner.destination = quoted_ip.destination();
    if (inner.source != settings_.address) return;
    if (unreachable_ && inner.protocol == static_cast<uint8_t>(IpProtocol::Tcp))
      unreachable_(icmp.code, static_cast<uint16_t>(icmp.rest & 0xffff), inner,
                   quoted + inner.header_length, copy - inner.header_length);
  }
}

}  // namespace bypass::inet
