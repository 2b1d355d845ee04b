#include "stack/inet/inet_stack.h"

#include "base/log.h"
#include "stack/inet/wire/ethernet.h"

namespace bypass::inet {

InetStack::InetStack(const InetSettings& settings, PacketDevice& device, TimerService& timers,
                     uint64_t secret_seed)
    : settings_(settings), device_(device), timers_(timers),
      arp_(settings_, timers, device, stats_),
      ipv4_(settings_, timers, device, arp_, stats_),
      addresses_(settings_, timers, device, stats_),
      neighbors_(settings_, timers, device, addresses_, stats_),
      ipv6_(settings_, timers, device, neighbors_, addresses_, stats_),
      tcp_(settings_, timers, ipv4_, ipv6_, neighbors_, device, stats_, secret_seed),
      echo_(ipv4_, timers, stats_) {
  ipv4_.set_echo_reply_receiver([this](const Ipv4Header& ip, const IcmpHeader& icmp, const BufferList& message) {
    echo_.on_reply(ip, icmp, message);
  });
  ipv4_.set_tcp_receiver([this](const Ipv4Header& ip, Packet&& packet) {
    tcp_.receive(ip, std::move(packet));
  });
  ipv4_.set_unreachable_receiver([this](uint8_t code, uint16_t mtu, const Ipv4Header& quoted,
                                        const uint8_t* l4, size_t l4_length) {
    tcp_.on_unreachable(code, mtu, quoted, l4, l4_length);
  });
  // TCP over IPv6 (RFC 8200 §8): segments, and ICMPv6 errors about ours (Packet Too Big,
  // Destination Unreachable), as over IPv4.
  ipv6_.set_tcp_receiver([this](const Ipv6Header& ip, Packet&& packet) { tcp_.receive(ip, std::move(packet)); });
  ipv6_.icmp().set_error_receiver([this](const Icmpv6Header& error, const Ipv6Header& quoted,
                                         const uint8_t* after_header, size_t length) {
    tcp_.on_icmpv6_error(error, quoted, after_header, length);
  });
  ipv6_.icmp().set_tcp_quote_validator([this](const Ipv6Header& quoted, const uint8_t* after_header, size_t length) {
    return tcp_.quote_in_flight(quoted, after_header, length);
  });
}

InetStack::~InetStack() = default;

void InetStack::start() {
  arp_.announce();
  // IPv6: Duplicate Address Detection of our addresses (RFC 4862 §5.4), each announced once it
  // has passed.
  if (ipv6_enabled()) addresses_.start_duplicate_address_detection();
}

bool InetStack::is_ipv6_group(const MacAddress& destination) const {
  return ipv6_enabled() && ipv6_.accepts_link_group(destination);
}

void InetStack::receive(Packet&& frame) {
  ++stats_.rx_frames;
  uint8_t raw[EthernetHeader::kLength];
  EthernetHeader eth;
  const char* error = "ethernet: frame shorter than the 14-byte header";
  if (frame.data.length() >= EthernetHeader::kLength) {
    frame.data.copy_out(0, sizeof(raw), raw);
    error = EthernetHeader::parse(raw, sizeof(raw), eth);
  }
  if (error) {
    ++stats_.rx_malformed_ethernet;
    BYPASS_LOG(Debug, "ethernet", "dropped: %s", error);
    return;
  }
  if (eth.destination != device_.mac() && !eth.destination.is_broadcast() && !is_ipv6_group(eth.destination)) {
    ++stats_.rx_not_for_us;
    return;
  }
  frame.data.trim_front(EthernetHeader::kLength);
  switch (static_cast<EtherType>(eth.ethertype)) {
    case EtherType::Ipv4:
      return ipv4_.receive(std::move(frame));
    case EtherType::Arp:
      return arp_.receive(frame.data);
    case EtherType::Ipv6:
      if (ipv6_enabled()) return ipv6_.receive(std::move(frame), eth.source);
      break;
    default:
      break;
  }
  ++stats_.rx_unsupported_ethertype;
}

}  // namespace bypass::inet
