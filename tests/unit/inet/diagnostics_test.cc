// Snapshots for operators (bypass-pmd stack arp / conns): ArpResolver::entries() and
// TcpLayer::connections(); and ARP resolution when the reply arrives inside the request's send.
#include <gtest/gtest.h>

#include "stack/inet/wire/arp.h"
#include "tests/unit/inet/harness.h"

namespace bypass::inet::test {
namespace {

TEST(ArpEntriesTest, IncompleteThenReachableThenExpired) {
  InetSettings base;
  base.arp_timeout = 10s;
  TwoHosts hosts(1, base);
  hosts.wire.cut = true;  // no replies yet: the line stays incomplete
  ASSERT_EQ(hosts.a->echo().request(ip_of(2), 1, 1, 8, 5s, [](const EchoResult&) {}), "");
  hosts.run_for(1500ms);  // the first retry has gone out
  auto entries = hosts.a->arp().entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].ip, ip_of(2));
  EXPECT_EQ(entries[0].state, ArpEntryInfo::State::Incomplete);
  EXPECT_EQ(entries[0].queued_packets, 1u);
  EXPECT_EQ(entries[0].requests_sent, 2);
  EXPECT_EQ(entries[0].age, 1500ms);
  EXPECT_TRUE(entries[0].mac.is_zero());

  hosts.wire.cut = false;
  hosts.run_for(1s);  // the next retry is answered
  entries = hosts.a->arp().entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].state, ArpEntryInfo::State::Reachable);
  EXPECT_EQ(entries[0].mac, mac_of(2));
  EXPECT_EQ(entries[0].queued_packets, 0u);
  EXPECT_LT(entries[0].age, 1s);
  EXPECT_EQ(hosts.a->stats().icmp_echo_replies_received, 1u);  // the queued request went out

  hosts.run_for(11s);
  entries = hosts.a->arp().entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].state, ArpEntryInfo::State::Expired);
  EXPECT_GT(entries[0].age, 10s);
  EXPECT_STREQ(to_string(entries[0].state), "expired");
}

TEST(ArpEntriesTest, SortedByAddress) {
  TwoHosts hosts;
  hosts.a->arp().learn(ip_of(9), mac_of(9));
  hosts.a->arp().learn(ip_of(3), mac_of(3));
  hosts.a->arp().learn(ip_of(5), mac_of(5));
  const auto entries = hosts.a->arp().entries();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].ip, ip_of(3));
  EXPECT_EQ(entries[1].ip, ip_of(5));
  EXPECT_EQ(entries[2].ip, ip_of(9));
  EXPECT_EQ(entries[2].mac, mac_of(9));
}

TEST(ArpEntriesTest, ResolveWithoutAPacket) {
  TwoHosts hosts;
  hosts.a->arp().resolve(ip_of(2));
  auto entries = hosts.a->arp().entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].state, ArpEntryInfo::State::Incomplete);
  EXPECT_EQ(entries[0].queued_packets, 0u);
  EXPECT_EQ(entries[0].requests_sent, 1);
  hosts.a->arp().resolve(ip_of(2));  // already being resolved: no second request
  EXPECT_EQ(hosts.a->stats().arp_requests_sent, 1u);
  ASSERT_TRUE(hosts.run_until([&] { return hosts.a->arp().lookup(ip_of(2)).has_value(); }, 1s));
  EXPECT_EQ(hosts.a->arp().entries()[0].state, ArpEntryInfo::State::Reachable);
  hosts.a->arp().resolve(ip_of(2));  // cached: nothing to do
  hosts.run_for(5s);
  EXPECT_EQ(hosts.a->stats().arp_requests_sent, 1u);
  EXPECT_EQ(hosts.a->arp().entries().size(), 1u);
}

// A device whose peer answers ARP requests before transmit() returns (a synchronous in-process
// wire): the resolver must not touch its pending line after send_request(), which the reply
// erases. Under AddressSanitizer the old code fails here with heap-use-after-free.
class AnsweringDevice : public PacketDevice {
 public:
  void transmit(Packet&& frame) override {
    std::string bytes = frame.data.to_string();
    sent.push_back(bytes);
    if (!stack || bytes.size() < EthernetHeader::kLength + ArpPacket::kLength ||
        EthernetView(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()).ethertype() !=
            static_cast<uint16_t>(EtherType::Arp))
      return;
    ArpPacket request;
    ASSERT_EQ(ArpPacket::parse(reinterpret_cast<const uint8_t*>(bytes.data()) + EthernetHeader::kLength,
                               ArpPacket::kLength, request), nullptr);
    if (request.operation != ArpPacket::kRequest || request.target_ip != ip_of(2)) return;
    std::vector<uint8_t> reply(EthernetHeader::kLength + ArpPacket::kLength);
    EthernetHeader{mac_of(1), mac_of(2), static_cast<uint16_t>(EtherType::Arp)}.emit(reply.data());
    ArpPacket{ArpPacket::kReply, mac_of(2), ip_of(2), mac_of(1), ip_of(1)}.emit(reply.data() +
                                                                              EthernetHeader::kLength);
    Packet packet;
    packet.data.append_copy(reply.data(), reply.size());
    stack->receive(std::move(packet));
  }
  uint16_t mtu() const override { return 1500; }
  MacAddress mac() const override { return mac_of(1); }
  InetStack* stack = nullptr;
  std::vector<std::string> sent;
};

TEST(ArpEntriesTest, ReplyInsideTheRequestSendLeavesNoPendingState) {
  InetSettings settings;
  settings.address = ip_of(1);
  VirtualTimerService timers;
  AnsweringDevice device;
  InetStack stack(settings, device, timers, 7);
  device.stack = &stack;
  const size_t timers_before = timers.pending();
  ASSERT_EQ(stack.echo().request(ip_of(2), 1, 1, 8, 1s, [](const EchoResult&) {}), "");
  // Sent: the ARP request, then the queued echo request as soon as the reply arrived.
  ASSERT_EQ(device.sent.size(), 2u);
  EthernetHeader eth;
  ASSERT_EQ(EthernetHeader::parse(reinterpret_cast<const uint8_t*>(device.sent[1].data()), device.sent[1].size(),
                                  eth), nullptr);
  EXPECT_EQ(eth.destination, mac_of(2));
  EXPECT_EQ(stack.arp().pending_packets(), 0u);
  const auto entries = stack.arp().entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].state, ArpEntryInfo::State::Reachable);
  // Only the echo timeout remains: no ARP retry timer was left behind for an erased line.
  EXPECT_EQ(timers.pending(), timers_before + 1);
  while (timers.run_next()) {
  }
  EXPECT_EQ(stack.stats().arp_requests_sent, 1u);
}

TEST(ConnectionsTest, SnapshotShowsBothEndsWithTheirCounters) {
  TwoHosts hosts;
  auto [client, server] = connect_pair(hosts, 8080);
  ASSERT_TRUE(client && server);
  const TransferResult sent = transfer(hosts, client, server, 100000, 30s);
  ASSERT_TRUE(sent.complete);
  hosts.run_for(1s);  // the last ACK reaches the sender
  auto a = hosts.a->tcp().connections();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].tuple.local_ip, ip_of(1));
  EXPECT_EQ(a[0].tuple.remote_ip, ip_of(2));
  EXPECT_EQ(a[0].tuple.remote_port, 8080);
  EXPECT_EQ(a[0].state, TcpState::Established);
  EXPECT_EQ(a[0].bytes_out, 100000u);
  EXPECT_EQ(a[0].bytes_in, 0u);
  EXPECT_GT(a[0].cwnd, 0u);
  EXPECT_GT(a[0].mss, 0u);
  EXPECT_GT(a[0].srtt, Duration::zero());
  EXPECT_GT(a[0].rto, Duration::zero());
  auto b = hosts.b->tcp().connections();
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].tuple.local_port, 8080);
  EXPECT_EQ(b[0].bytes_in, 100000u);
  EXPECT_EQ(b[0].bytes_out, 0u);
  EXPECT_EQ(b[0].retransmitted_segments, 0u);

  auto listener = hosts.b->tcp().listen(9000);
  auto other = hosts.b->tcp().listen(7);
  EXPECT_EQ(hosts.b->tcp().listening_ports(), (std::vector<uint16_t>{7, 9000}));

  client->close();
  hosts.run_for(1s);
  a = hosts.a->tcp().connections();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].state, TcpState::FinWait2);
  EXPECT_STREQ(to_string(a[0].state), "FIN-WAIT-2");
}

}  // namespace
}  // namespace bypass::inet::test
