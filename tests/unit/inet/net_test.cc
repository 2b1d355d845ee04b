// Link and network layers of one stack: ARP (pending queue, retries, expiry, replication),
// IPv4 validation, routing, reassembly, and ICMP.
#include <gtest/gtest.h>

#include <vector>

#include "stack/inet/inet_stack.h"
#include "stack/inet/wire/arp.h"
#include "stack/inet/wire/checksum.h"
#include "stack/inet/wire/ethernet.h"
#include "stack/inet/wire/icmp.h"
#include "stack/inet/wire/ipv4.h"
#include "tests/support/tcp_frame.h"

namespace bypass::inet {
namespace {

using namespace std::chrono_literals;
using test::parse_tcp_frame;
using test::TcpFrame;
// Where an IPv4 packet's payload starts in a frame: after Ethernet and a header without options.
constexpr size_t kIpv4Headers = EthernetHeader::kLength + Ipv4Header::kMinLength;

const MacAddress kOurMac{{2, 0, 0, 0, 0, 1}};
const MacAddress kPeerMac{{2, 0, 0, 0, 0, 2}};
const Ipv4Address kOurIp = Ipv4Address::from_octets(10, 0, 0, 1);
const Ipv4Address kPeerIp = Ipv4Address::from_octets(10, 0, 0, 2);

class RecordingDevice : public PacketDevice {
 public:
  void transmit(Packet&& frame) override { sent.push_back(frame.data.to_string()); }
  uint16_t mtu() const override { return 1500; }
  MacAddress mac() const override { return kOurMac; }
  std::vector<std::string> sent;
};

std::vector<uint8_t> ethernet(MacAddress dst, MacAddress src, EtherType type,
                              const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> frame(EthernetHeader::kLength);
  EthernetHeader{dst, src, static_cast<uint16_t>(type)}.emit(frame.data());
  frame.insert(frame.end(), payload.begin(), payload.end());
  return frame;
}

std::vector<uint8_t> ipv4(Ipv4Address src, Ipv4Address dst, uint8_t protocol,
                          const std::vector<uint8_t>& payload, uint16_t id = 1,
                          uint16_t flags_fragment = 0) {
  std::vector<uint8_t> packet(Ipv4Header::kMinLength);
  Ipv4Header h;
  h.total_length = static_cast<uint16_t>(Ipv4Header::kMinLength + payload.size());
  h.identification = id;
  h.flags_fragment = flags_fragment;
  h.protocol = protocol;
  h.source = src;
  h.destination = dst;
  h.emit(packet.data(), true);
  packet.insert(packet.end(), payload.begin(), payload.end());
  return packet;
}

std::vector<uint8_t> icmp_echo(uint32_t rest, const std::vector<uint8_t>& data) {
  BufferList body;
  body.append(BufferSegment::copy_of(data.data(), data.size()));
  std::vector<uint8_t> message(IcmpHeader::kLength);
  IcmpHeader{IcmpHeader::kEchoRequest, 0, 0, rest}.emit(message.data(), body);
  message.insert(message.end(), data.begin(), data.end());
  return message;
}

std::vector<uint8_t> arp(uint16_t op, MacAddress sender_mac, Ipv4Address sender_ip,
                         MacAddress target_mac, Ipv4Address target_ip) {
  std::vector<uint8_t> packet(ArpPacket::kLength);
  ArpPacket{op, sender_mac, sender_ip, target_mac, target_ip}.emit(packet.data());
  return packet;
}

class NetTest : public ::testing::Test {
 protected:
  explicit NetTest(InetSettings settings = defaults()) : settings_(settings) {
    stack_ = std::make_unique<InetStack>(settings_, device_, timers_, 42);
  }
  static InetSettings defaults() {
    InetSettings s;
    s.address = kOurIp;
    s.arp_pending_per_address = 4;
    s.ip_reassembly_max_datagrams = 2;
    return s;
  }
  void inject(const std::vector<uint8_t>& frame) {
    Packet p;
    p.data.append(BufferSegment::copy_of(frame.data(), frame.size()));
    stack_->receive(std::move(p));
  }
  void learn_peer() {
    inject(ethernet(kOurMac, kPeerMac, EtherType::Arp,
                    arp(ArpPacket::kReply, kPeerMac, kPeerIp, kOurMac, kOurIp)));
  }
  // Parse the i-th sent frame's Ethernet header.
  EthernetHeader eth_of(size_t i) {
    EthernetHeader h;
    EXPECT_EQ(EthernetHeader::parse(reinterpret_cast<const uint8_t*>(device_.sent.at(i).data()),
                                    device_.sent.at(i).size(), h), nullptr);
    return h;
  }
  ArpPacket arp_of(size_t i) {
    ArpPacket p;
    EXPECT_EQ(ArpPacket::parse(reinterpret_cast<const uint8_t*>(device_.sent.at(i).data()) + EthernetHeader::kLength,
                               device_.sent.at(i).size() - EthernetHeader::kLength, p), nullptr);
    return p;
  }

  InetSettings settings_;
  RecordingDevice device_;
  VirtualTimerService timers_;
  std::unique_ptr<InetStack> stack_;
};

TEST_F(NetTest, GratuitousArpAtStart) {
  stack_->start();
  ASSERT_EQ(device_.sent.size(), 1u);
  EXPECT_TRUE(eth_of(0).destination.is_broadcast());
  ArpPacket p = arp_of(0);
  EXPECT_EQ(p.operation, ArpPacket::kRequest);
  EXPECT_EQ(p.sender_ip, kOurIp);
  EXPECT_EQ(p.target_ip, kOurIp);  // RFC 5227 announcement
}

TEST_F(NetTest, RepliesToRequestAndLearnsRequester) {
  std::vector<std::pair<Ipv4Address, MacAddress>> learned;
  stack_->arp().set_learn_hook([&](Ipv4Address ip, MacAddress mac) { learned.emplace_back(ip, mac); });
  inject(ethernet(MacAddress::broadcast(), kPeerMac, EtherType::Arp,
                  arp(ArpPacket::kRequest, kPeerMac, kPeerIp, {}, kOurIp)));
  ASSERT_EQ(device_.sent.size(), 1u);
  EXPECT_EQ(eth_of(0).destination, kPeerMac);
  ArpPacket reply = arp_of(0);
  EXPECT_EQ(reply.operation, ArpPacket::kReply);
  EXPECT_EQ(reply.sender_mac, kOurMac);
  EXPECT_EQ(reply.target_ip, kPeerIp);
  EXPECT_EQ(stack_->arp().lookup(kPeerIp), kPeerMac);
  ASSERT_EQ(learned.size(), 1u);  // reported for replication to the other workers
  // A request for someone else is neither answered nor cached.
  inject(ethernet(MacAddress::broadcast(), {{2, 0, 0, 0, 0, 3}}, EtherType::Arp,
                  arp(ArpPacket::kRequest, {{2, 0, 0, 0, 0, 3}}, Ipv4Address::from_octets(10, 0, 0, 3),
                      {}, Ipv4Address::from_octets(10, 0, 0, 4))));
  EXPECT_EQ(device_.sent.size(), 1u);
  EXPECT_FALSE(stack_->arp().lookup(Ipv4Address::from_octets(10, 0, 0, 3)));
}

TEST_F(NetTest, ReplicaLearnsFromAnotherWorker) {
  RecordingDevice other_device;
  InetStack replica(settings_, other_device, timers_, 43);
  stack_->arp().set_learn_hook([&](Ipv4Address ip, MacAddress mac) { replica.arp().learn(ip, mac); });
  learn_peer();
  EXPECT_EQ(replica.arp().lookup(kPeerIp), kPeerMac);
}

// DpdkWorker::share_arp hands every ARP packet a worker receives to the other workers' replicas:
// they learn the sender, but only the receiving worker answers (one request, one reply) and counts.
TEST_F(NetTest, SharedArpRequestIsLearnedNotAnswered) {
  const std::vector<uint8_t> request = arp(ArpPacket::kRequest, kPeerMac, kPeerIp, {}, kOurIp);
  BufferList payload;
  payload.append_copy(std::string(request.begin(), request.end()));
  stack_->arp().learn_from_shared(payload);
  EXPECT_EQ(stack_->arp().lookup(kPeerIp), kPeerMac);
  EXPECT_TRUE(device_.sent.empty()) << "a replica answered a request another worker answers";
  EXPECT_EQ(stack_->stats().arp_replies_sent, 0u);
  BufferList cut;
  cut.append_copy(std::string(request.begin(), request.begin() + 20));
  stack_->arp().learn_from_shared(cut);  // counted by the receiving worker, not again here
  EXPECT_EQ(stack_->stats().rx_malformed_arp, 0u);
}

TEST_F(NetTest, PendingQueueIsBoundedAndFlushedInOrder) {
  for (uint16_t port = 1; port <= 6; ++port) ASSERT_TRUE(stack_->tcp().connect(kPeerIp, 1000, port));
  ASSERT_EQ(device_.sent.size(), 1u);  // one ARP request, SYNs waiting
  EXPECT_EQ(stack_->arp().pending_packets(), 4u);
  EXPECT_EQ(stack_->stats().arp_pending_dropped, 2u);
  learn_peer();
  ASSERT_EQ(device_.sent.size(), 5u);
  for (size_t i = 1; i < 5; ++i) {
    EXPECT_EQ(eth_of(i).destination, kPeerMac);
    TcpFrame tcp;
    ASSERT_EQ(parse_tcp_frame(reinterpret_cast<const uint8_t*>(device_.sent[i].data()), device_.sent[i].size(), tcp),
              nullptr);
    EXPECT_EQ(tcp.header.source_port, i);  // TCP source ports 1..4, in order
  }
  EXPECT_EQ(stack_->arp().pending_packets(), 0u);
}

TEST_F(NetTest, ResolutionTimesOutAndDropsQueue) {
  ASSERT_TRUE(stack_->tcp().connect(kPeerIp, 1000, 5));
  timers_.advance(500ms);
  EXPECT_EQ(stack_->stats().arp_requests_sent, 1u);
  // Requests at 0, 1, 2, 3 s; at 4 s resolution fails (the SYN, retransmitted at 1 s and 3 s,
  // was queued again meanwhile, and is dropped too).
  timers_.advance(4s);
  EXPECT_EQ(stack_->stats().arp_requests_sent, 1u + settings_.arp_max_retries);
  EXPECT_EQ(stack_->stats().arp_resolution_failed, 1u);
  EXPECT_EQ(stack_->stats().arp_pending_dropped, 3u);
  EXPECT_EQ(stack_->arp().pending_packets(), 0u);
}

TEST_F(NetTest, CacheEntriesExpire) {
  learn_peer();
  EXPECT_TRUE(stack_->arp().lookup(kPeerIp));
  timers_.advance(settings_.arp_timeout + 1s);
  EXPECT_FALSE(stack_->arp().lookup(kPeerIp));
}

TEST_F(NetTest, MalformedFramesAreCounted) {
  inject({1, 2, 3});
  EXPECT_EQ(stack_->stats().rx_malformed_ethernet, 1u);
  inject(ethernet(kOurMac, kPeerMac, EtherType::Arp, {0, 1, 8, 0}));
  EXPECT_EQ(stack_->stats().rx_malformed_arp, 1u);
  inject(ethernet({{2, 0, 0, 0, 0, 9}}, kPeerMac, EtherType::Ipv4, {}));
  EXPECT_EQ(stack_->stats().rx_not_for_us, 1u);
  inject(ethernet(kOurMac, kPeerMac, static_cast<EtherType>(0x86dd), {0}));
  EXPECT_EQ(stack_->stats().rx_unsupported_ethertype, 1u);
  auto packet = ipv4(kPeerIp, kOurIp, 1, icmp_echo(1, {1, 2, 3}));
  packet[10] ^= 0xff;  // header checksum
  inject(ethernet(kOurMac, kPeerMac, EtherType::Ipv4, packet));
  packet = ipv4(kPeerIp, kOurIp, 1, icmp_echo(1, {1, 2, 3}));
  packet.resize(30);  // truncated below total length
  inject(ethernet(kOurMac, kPeerMac, EtherType::Ipv4, packet));
  EXPECT_EQ(stack_->stats().rx_malformed_ipv4, 2u);
  inject(ethernet(kOurMac, kPeerMac, EtherType::Ipv4,
                  ipv4(kPeerIp, Ipv4Address::from_octets(10, 0, 0, 7), 1, icmp_echo(1, {}))));
  EXPECT_EQ(stack_->stats().rx_ipv4_not_for_us, 1u);
  auto echo = icmp_echo(1, {1, 2, 3});
  echo[2] ^= 1;
  inject(ethernet(kOurMac, kPeerMac, EtherType::Ipv4, ipv4(kPeerIp, kOurIp, 1, echo)));
  EXPECT_EQ(stack_->stats().rx_malformed_icmp, 1u);
  inject(ethernet(kOurMac, kPeerMac, EtherType::Ipv4, ipv4(kPeerIp, kOurIp, 17, {0, 0, 0, 0})));
  EXPECT_EQ(stack_->stats().rx_unsupported_protocol, 1u);
  EXPECT_TRUE(device_.sent.empty());
}

TEST_F(NetTest, EchoReplyMirrorsRequest) {
  learn_peer();
  std::vector<uint8_t> data(100);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
  inject(ethernet(kOurMac, kPeerMac, EtherType::Ipv4, ipv4(kPeerIp, kOurIp, 1, icmp_echo(0x77770005, data))));
  ASSERT_EQ(device_.sent.size(), 1u);
  const std::string& frame = device_.sent[0];
  auto* ip = reinterpret_cast<const uint8_t*>(frame.data()) + EthernetHeader::kLength;
  Ipv4Header h;
  ASSERT_EQ(Ipv4Header::parse(ip, frame.size() - EthernetHeader::kLength, true, h), nullptr);
  EXPECT_EQ(h.destination, kPeerIp);
  BufferList message;
  message.append_copy(frame.data() + kIpv4Headers, frame.size() - kIpv4Headers);
  IcmpHeader reply;
  ASSERT_EQ(IcmpHeader::parse(message, reply), nullptr);
  EXPECT_EQ(reply.type, IcmpHeader::kEchoReply);
  EXPECT_EQ(reply.rest, 0x77770005u);
  EXPECT_EQ(message.to_string().substr(8), std::string(data.begin(), data.end()));
}

TEST_F(NetTest, RoutesOffSubnetThroughGateway) {
  EXPECT_FALSE(stack_->tcp().connect(Ipv4Address::from_octets(192, 168, 9, 9), 80));
  EXPECT_EQ(stack_->stats().tx_no_route, 1u);
  InetSettings with_gateway = settings_;
  with_gateway.gateway = Ipv4Address::from_octets(10, 0, 0, 254);
  RecordingDevice device;
  InetStack routed(with_gateway, device, timers_, 7);
  ASSERT_TRUE(routed.tcp().connect(Ipv4Address::from_octets(192, 168, 9, 9), 80));
  ASSERT_EQ(device.sent.size(), 1u);
  ArpPacket request;
  ASSERT_EQ(ArpPacket::parse(reinterpret_cast<const uint8_t*>(device.sent[0].data()) + EthernetHeader::kLength, ArpPacket::kLength, request), nullptr);
  EXPECT_EQ(request.target_ip, with_gateway.gateway);  // resolving the next hop, not the destination
}

// Splits an ICMP echo request into fragments of `chunk` bytes (a multiple of 8).
std::vector<std::vector<uint8_t>> fragments(uint16_t id, const std::vector<uint8_t>& l4, size_t chunk) {
  std::vector<std::vector<uint8_t>> out;
  for (size_t off = 0; off < l4.size(); off += chunk) {
    size_t n = std::min(chunk, l4.size() - off);
    bool more = off + n < l4.size();
    std::vector<uint8_t> part(l4.begin() + off, l4.begin() + off + n);
    uint16_t ff = static_cast<uint16_t>((more ? Ipv4Header::kFlagMoreFragments : 0) | (off / 8));
    out.push_back(ethernet(kOurMac, kPeerMac, EtherType::Ipv4, ipv4(kPeerIp, kOurIp, 1, part, id, ff)));
  }
  return out;
}

class Reassembly : public NetTest {
 protected:
  void SetUp() override {
    learn_peer();
    data_.resize(3000);
    for (size_t i = 0; i < data_.size(); ++i) data_[i] = static_cast<uint8_t>(i * 13);
    frags_ = fragments(9, icmp_echo(0x10001, data_), 1200);
    ASSERT_EQ(frags_.size(), 3u);
  }
  // The 3008-byte reply exceeds the 1500-byte MTU, so it leaves as fragments (RFC 791 §3.2).
  bool replied_with_data() {
    if (device_.sent.size() != 3) return false;
    std::string message;
    for (size_t i = 0; i < device_.sent.size(); ++i) {
      const std::string& frame = device_.sent[i];
      Ipv4Header h;
      if (Ipv4Header::parse(reinterpret_cast<const uint8_t*>(frame.data()) + EthernetHeader::kLength, frame.size() - EthernetHeader::kLength,
                            true, h))
        return false;
      if (h.fragment_offset_bytes() != message.size() || h.more_fragments() != (i < 2)) return false;
      message += frame.substr(kIpv4Headers, h.payload_length());
    }
    BufferList reply;
    reply.append_copy(message);
    IcmpHeader icmp;
    if (IcmpHeader::parse(reply, icmp) || icmp.type != IcmpHeader::kEchoReply) return false;
    return message.substr(8) == std::string(data_.begin(), data_.end());
  }
  std::vector<uint8_t> data_;
  std::vector<std::vector<uint8_t>> frags_;
};

TEST_F(Reassembly, InOrder) {
  for (auto& f : frags_) inject(f);
  EXPECT_TRUE(replied_with_data());
  EXPECT_EQ(stack_->stats().reassembly_completed, 1u);
  EXPECT_EQ(stack_->ipv4().reassembler().datagrams_in_progress(), 0u);
}

TEST_F(Reassembly, OutOfOrderWithDuplicate) {
  inject(frags_[2]);
  inject(frags_[0]);
  inject(frags_[0]);
  EXPECT_TRUE(device_.sent.empty());
  inject(frags_[1]);
  EXPECT_TRUE(replied_with_data());
}

TEST_F(Reassembly, IncompleteDatagramTimesOut) {
  inject(frags_[0]);
  inject(frags_[2]);
  EXPECT_EQ(stack_->ipv4().reassembler().bytes_in_progress(), 1200u + (3008u - 2400u));
  timers_.advance(settings_.ip_reassembly_timeout + 1s);
  EXPECT_EQ(stack_->stats().reassembly_timeouts, 1u);
  EXPECT_EQ(stack_->ipv4().reassembler().datagrams_in_progress(), 0u);
  EXPECT_EQ(stack_->ipv4().reassembler().bytes_in_progress(), 0u);
  inject(frags_[1]);  // too late: starts a new datagram that also never completes
  EXPECT_TRUE(device_.sent.empty());
}

TEST_F(Reassembly, LimitsAndOverlapsDrop) {
  // Only two datagrams may be in progress.
  inject(fragments(1, icmp_echo(1, data_), 1200)[0]);
  inject(fragments(2, icmp_echo(1, data_), 1200)[0]);
  inject(fragments(3, icmp_echo(1, data_), 1200)[0]);
  EXPECT_EQ(stack_->ipv4().reassembler().datagrams_in_progress(), 2u);
  EXPECT_EQ(stack_->stats().reassembly_dropped, 1u);
  timers_.advance(settings_.ip_reassembly_timeout + 1s);
  // Overlap: a fragment at offset 8 over the first one drops the whole datagram.
  inject(frags_[0]);
  auto overlapping = fragments(9, icmp_echo(0x10001, data_), 1200)[1];
  const Ipv4View ip(overlapping.data() + EthernetHeader::kLength, overlapping.size() - EthernetHeader::kLength);
  ip.set_flags_fragment(Ipv4Header::kFlagMoreFragments | 1);
  ip.set_checksum(0);
  ip.set_checksum(internet_checksum(ip.data(), Ipv4Header::kMinLength));
  inject(overlapping);
  EXPECT_EQ(stack_->stats().reassembly_dropped, 2u);
  EXPECT_EQ(stack_->ipv4().reassembler().datagrams_in_progress(), 0u);
  // A non-final fragment whose length is not a multiple of 8 is rejected.
  auto odd = fragments(10, icmp_echo(1, data_), 1201);
  inject(odd[0]);
  EXPECT_EQ(stack_->stats().reassembly_dropped, 3u);
  EXPECT_TRUE(device_.sent.empty());
}

}  // namespace
}  // namespace bypass::inet
