// Test helpers for the IPv6 layer tests: one stack with IPv6 on a recording device, frame
// builders for what a peer sends, and a parsed view of what the stack sent.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stack/inet/inet_stack.h"
#include "stack/inet/wire/checksum.h"
#include "stack/inet/wire/ethernet.h"
#include "stack/inet/wire/icmpv6.h"
#include "stack/inet/wire/ipv6.h"

namespace bypass::inet::test {

using namespace std::chrono_literals;
using Bytes = std::vector<uint8_t>;

inline const MacAddress kOurMac{{2, 0, 0, 0, 0, 1}};
inline const MacAddress kPeerMac{{2, 0, 0, 0, 0, 2}};
inline const MacAddress kOtherMac{{2, 0, 0, 0, 0, 3}};
inline Ipv6Address v6(const char* text) { return *Ipv6Address::from_string(text); }
inline const Ipv6Address kOurIp = v6("2001:db8::1");
inline const Ipv6Address kPeerIp = v6("2001:db8::2");
// Ours from kOurMac 02:00:00:00:00:01 by modified EUI-64 (RFC 4291 App. A: u bit inverted, ff:fe
// inserted), and a peer's.
inline const Ipv6Address kOurLinkLocal = v6("fe80::ff:fe00:1");
inline const Ipv6Address kPeerLinkLocal = v6("fe80::ff:fe00:2");

class RecordingDevice : public PacketDevice {
 public:
  void transmit(Packet&& frame) override {
    const std::string s = frame.data.to_string();
    sent.emplace_back(s.begin(), s.end());
  }
  uint16_t mtu() const override { return mtu_; }
  MacAddress mac() const override { return kOurMac; }
  std::vector<Bytes> sent;
  uint16_t mtu_ = 1500;
};

inline Bytes ethernet(MacAddress dst, MacAddress src, const Bytes& payload, EtherType type = EtherType::Ipv6) {
  Bytes frame(EthernetHeader::kLength);
  EthernetHeader{dst, src, static_cast<uint16_t>(type)}.emit(frame.data());
  frame.insert(frame.end(), payload.begin(), payload.end());
  return frame;
}

inline Bytes ipv6(const Ipv6Address& src, const Ipv6Address& dst, uint8_t next_header, const Bytes& payload,
                  uint8_t hop_limit = 64) {
  Bytes packet(Ipv6Header::kLength);
  Ipv6Header h;
  h.payload_length = static_cast<uint16_t>(payload.size());
  h.next_header = next_header;
  h.hop_limit = hop_limit;
  h.source = src;
  h.destination = dst;
  h.emit(packet.data());
  packet.insert(packet.end(), payload.begin(), payload.end());
  return packet;
}

// An ICMPv6 message with a correct checksum for (src, dst).
inline Bytes icmpv6(const Ipv6Address& src, const Ipv6Address& dst, uint8_t type, uint8_t code, uint32_t rest,
                    const Bytes& body) {
  BufferList b;
  b.append_copy(body.data(), body.size());
  Bytes message(Icmpv6Header::kLength);
  Icmpv6Header{type, code, 0, rest}.emit(message.data(), src, dst, b);
  message.insert(message.end(), body.begin(), body.end());
  return message;
}

inline Bytes echo_request(const Ipv6Address& src, const Ipv6Address& dst, uint16_t id, uint16_t seq,
                          const Bytes& data) {
  return icmpv6(src, dst, Icmpv6Header::kEchoRequest, 0, uint32_t{id} << 16 | seq, data);
}

inline Bytes neighbor_solicitation(const Ipv6Address& src, const Ipv6Address& dst, const Ipv6Address& target,
                                   std::optional<MacAddress> source_mac) {
  NeighborSolicitation ns;
  ns.target = target;
  ns.options.source_link_layer = source_mac;
  Bytes message(ns.emitted_length());
  ns.emit(message.data(), src, dst);
  return message;
}

inline Bytes neighbor_advertisement(const Ipv6Address& src, const Ipv6Address& dst, const Ipv6Address& target,
                                    std::optional<MacAddress> target_mac, bool solicited, bool override_flag) {
  NeighborAdvertisement na;
  na.target = target;
  na.solicited = solicited;
  na.override_flag = override_flag;
  na.options.target_link_layer = target_mac;
  Bytes message(na.emitted_length());
  na.emit(message.data(), src, dst);
  return message;
}

inline Bytes fragment_header(uint8_t next_header, uint16_t offset, bool more, uint32_t id) {
  Bytes header(Ipv6FragmentHeader::kLength);
  Ipv6FragmentHeader f;
  f.next_header = next_header;
  f.offset_bytes = offset;
  f.more_fragments = more;
  f.identification = id;
  f.emit(header.data());
  return header;
}

inline Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A frame the stack sent, parsed: Ethernet, IPv6 and (if it is ICMPv6 right after the fixed
// header) the ICMPv6 header, with the checksum checked.
struct SentFrame {
  EthernetHeader eth;
  Ipv6Header ip;
  bool icmp_ok = false;
  Icmpv6Header icmp;
  Bytes l4;  // bytes after the fixed IPv6 header
  static SentFrame parse(const Bytes& frame) {
    SentFrame out;
    EXPECT_EQ(EthernetHeader::parse(frame.data(), frame.size(), out.eth), nullptr);
    EXPECT_EQ(out.eth.ethertype, static_cast<uint16_t>(EtherType::Ipv6));
    const uint8_t* ip = frame.data() + EthernetHeader::kLength;
    const size_t ip_length = frame.size() - EthernetHeader::kLength;
    EXPECT_EQ(Ipv6Header::parse(ip, ip_length, out.ip), nullptr);
    EXPECT_EQ(ip_length, Ipv6Header::kLength + out.ip.payload_length);
    out.l4.assign(ip + Ipv6Header::kLength, ip + ip_length);
    if (out.ip.next_header == kIpv6Icmpv6) {
      BufferList message;
      message.append_copy(out.l4.data(), out.l4.size());
      out.icmp_ok = Icmpv6Header::parse(message, out.ip.source, out.ip.destination, out.icmp) == nullptr;
    }
    return out;
  }
};

inline InetSettings ipv6_settings() {
  InetSettings s;
  s.address = Ipv4Address::from_octets(10, 0, 0, 1);
  s.ipv6.address = kOurIp;
  s.ipv6.nd_pending_per_address = 4;
  return s;
}

class Ipv6StackTest : public ::testing::Test {
 protected:
  explicit Ipv6StackTest(InetSettings settings = ipv6_settings()) : settings_(settings) { restart(); }
  // A new stack from settings_ whose addresses have passed Duplicate Address Detection (RFC 4862
  // §5.4): started, the virtual clock run through DAD, and what start-up sent and counted (probes,
  // announcements, the gratuitous ARP) forgotten, so each test sees only its own traffic.
  void restart() {
    stack_ = std::make_unique<InetStack>(settings_, device_, timers_, 42);
    stack_->start();
    timers_.advance(settings_.ipv6.nd_retrans_timer * settings_.ipv6.dad_transmits);
    EXPECT_EQ(stack_->ipv6().address_state(settings_.ipv6.address), AddressState::Preferred);
    device_.sent.clear();
    stack_->stats() = InetStats{};
  }
  void inject(const Bytes& frame) {
    Packet packet;
    packet.data.append(BufferSegment::copy_of(frame.data(), frame.size()));
    stack_->receive(std::move(packet));
  }
  // A peer's IPv6 packet to us in a frame to our MAC.
  void inject_ipv6(const Bytes& packet, MacAddress from = kPeerMac) { inject(ethernet(kOurMac, from, packet)); }
  // Makes the peer known (REACHABLE) without any frame, as another worker's replica would.
  void learn_peer() { stack_->neighbors().learn(kPeerIp, kPeerMac, true); }
  // Sends `payload_bytes` of an unassigned upper protocol (253, RFC 3692 experimentation) to `to`.
  bool send_to(const Ipv6Address& to, size_t payload_bytes = 8, bool allow_fragment = false) {
    Packet frame;
    frame.data.append(BufferSegment::allocate(kIpv6FrameHeadroom));
    Bytes payload(payload_bytes, 0xab);
    frame.data.append_copy(payload.data(), payload.size());
    return stack_->ipv6().send(to, 253, std::move(frame), allow_fragment);
  }
  SentFrame last() { return SentFrame::parse(device_.sent.back()); }

  InetSettings settings_;
  RecordingDevice device_;
  VirtualTimerService timers_;
  std::unique_ptr<InetStack> stack_;
};

}  // namespace bypass::inet::test
