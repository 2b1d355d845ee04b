// ICMP echo from the stack (RFC 792): requests leave with identifier, sequence and ping(8)'s data
// pattern; replies are matched on (peer, identifier, sequence), timed, and checked byte for byte;
// each request completes exactly once. Two stacks over the in-memory wire, on the virtual clock.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "stack/inet/wire/checksum.h"
#include "stack/inet/wire/icmp.h"
#include "tests/unit/inet/harness.h"

namespace bypass::inet::test {
namespace {

constexpr size_t kEth = EthernetHeader::kLength;
constexpr size_t kIp = Ipv4Header::kMinLength;

// Records every completion of one request; a second completion is a bug the tests catch.
struct Completions {
  std::vector<EchoResult> results;
  IcmpEcho::Callback callback() {
    return [this](const EchoResult& r) { results.push_back(r); };
  }
};

bool is_echo(const std::vector<uint8_t>& frame, uint8_t type) {
  if (frame.size() < kEth + kIp + IcmpHeader::kLength) return false;
  const EthernetView ethernet(frame.data(), frame.size());
  const Ipv4View ip(ethernet.payload(), frame.size() - kEth);
  return ethernet.ethertype() == static_cast<uint16_t>(EtherType::Ipv4) &&
         ip.protocol() == static_cast<uint8_t>(IpProtocol::Icmp) && IcmpView(ip.payload(), IcmpHeader::kLength).type() == type;
}

TEST(IcmpEchoTest, ReplyIsMatchedTimedAndChecked) {
  TwoHosts hosts;
  Completions done;
  ASSERT_EQ(hosts.a->echo().request(ip_of(2), 0x1234, 1, 56, 1s, done.callback()), "");
  EXPECT_EQ(hosts.a->echo().outstanding(), 1u);
  ASSERT_TRUE(hosts.run_until([&] { return !done.results.empty(); }, 5s));
  hosts.run_for(2s);  // the timeout must not fire a second completion
  ASSERT_EQ(done.results.size(), 1u);
  const EchoResult& r = done.results[0];
  EXPECT_EQ(r.outcome, EchoResult::Outcome::Reply);
  EXPECT_EQ(r.peer, ip_of(2));
  EXPECT_EQ(r.identifier, 0x1234);
  EXPECT_EQ(r.sequence, 1);
  EXPECT_EQ(r.bytes, IcmpHeader::kLength + 56);  // "64 bytes from", as ping(8) counts
  EXPECT_EQ(r.ttl, 64);
  EXPECT_TRUE(r.data_intact);
  // ARP request + reply, then echo request + reply: four one-way delays of 50 us each.
  EXPECT_EQ(r.rtt, 200us);
  EXPECT_EQ(hosts.a->echo().outstanding(), 0u);
  EXPECT_EQ(hosts.a->stats().icmp_echo_requests_sent, 1u);
  EXPECT_EQ(hosts.a->stats().icmp_echo_replies_received, 1u);
  EXPECT_EQ(hosts.b->stats().icmp_echo_replies_sent, 1u);

  // Resolved now: the next round trip is two delays.
  Completions second;
  ASSERT_EQ(hosts.a->echo().request(ip_of(2), 0x1234, 2, 0, 1s, second.callback()), "");
  ASSERT_TRUE(hosts.run_until([&] { return !second.results.empty(); }, 5s));
  EXPECT_EQ(second.results[0].rtt, 100us);
  EXPECT_EQ(second.results[0].bytes, IcmpHeader::kLength);
}

TEST(IcmpEchoTest, RequestCarriesIdentifierSequenceAndPingPattern) {
  TwoHosts hosts;
  std::optional<std::vector<uint8_t>> request;
  hosts.wire.tap = [&](int from, std::vector<uint8_t>& bytes) {
    if (from == 0 && is_echo(bytes, IcmpHeader::kEchoRequest)) request = bytes;
    return true;
  };
  Completions done;
  ASSERT_EQ(hosts.a->echo().request(ip_of(2), 0xbeef, 0x0102, 20, 1s, done.callback()), "");
  ASSERT_TRUE(hosts.run_until([&] { return !done.results.empty(); }, 5s));
  ASSERT_TRUE(request.has_value());
  const uint8_t* icmp = request->data() + kEth + kIp;
  const IcmpView view(icmp, request->size() - kEth - kIp);
  EXPECT_EQ(view.code(), 0);
  EXPECT_EQ(view.echo_identifier(), 0xbeef);
  EXPECT_EQ(view.echo_sequence(), 0x0102);
  ASSERT_EQ(request->size(), kEth + kIp + IcmpHeader::kLength + 20);
  EXPECT_EQ(internet_checksum(icmp, IcmpHeader::kLength + 20), 0);
  for (size_t i = 0; i < 20; ++i) EXPECT_EQ(icmp[IcmpHeader::kLength + i], i + 8) << "data byte " << i;
}

TEST(IcmpEchoTest, NoReplyTimesOutOnceAndALateReplyIsUnmatched) {
  TwoHosts hosts;
  hosts.run_for(1ms);
  Completions warmup;  // resolve ARP first so only the echo itself is delayed
  ASSERT_EQ(hosts.a->echo().request(ip_of(2), 7, 1, 8, 1s, warmup.callback()), "");
  ASSERT_TRUE(hosts.run_until([&] { return !warmup.results.empty(); }, 5s));

  hosts.wire.faults[1].delay = 3s;  // replies arrive after the 1 s timeout
  Completions done;
  const auto sent_at = hosts.timers.now();
  ASSERT_EQ(hosts.a->echo().request(ip_of(2), 7, 2, 8, 1s, done.callback()), "");
  hosts.run_for(5s);
  ASSERT_EQ(done.results.size(), 1u);
  EXPECT_EQ(done.results[0].outcome, EchoResult::Outcome::Timeout);
  EXPECT_EQ(done.results[0].sequence, 2);
  EXPECT_EQ(done.results[0].peer, ip_of(2));
  EXPECT_GE(hosts.timers.now() - sent_at, 1s);
  EXPECT_EQ(hosts.a->stats().icmp_echo_replies_unmatched, 1u);
  EXPECT_EQ(hosts.a->echo().outstanding(), 0u);
}

TEST(IcmpEchoTest, ConcurrentRequestsMatchTheirOwnReplies) {
  TwoHosts hosts;
  hosts.wire.faults[1].reorder = 0.5;  // replies overtake each other
  std::vector<Completions> done(8);
  for (uint16_t seq = 0; seq < done.size(); ++seq)
    ASSERT_EQ(hosts.a->echo().request(ip_of(2), 9, seq, seq * 10u, 2s, done[seq].callback()), "");
  ASSERT_TRUE(hosts.run_until([&] {
    for (auto& d : done)
      if (d.results.empty()) return false;
    return true;
  }, 10s));
  for (uint16_t seq = 0; seq < done.size(); ++seq) {
    ASSERT_EQ(done[seq].results.size(), 1u);
    EXPECT_EQ(done[seq].results[0].outcome, EchoResult::Outcome::Reply);
    EXPECT_EQ(done[seq].results[0].sequence, seq);
    EXPECT_EQ(done[seq].results[0].bytes, IcmpHeader::kLength + seq * 10u);
    EXPECT_TRUE(done[seq].results[0].data_intact);
  }
}

TEST(IcmpEchoTest, LargeRequestIsFragmentedAndReassembledBothWays) {
  TwoHosts hosts;
  Completions done;
  ASSERT_EQ(hosts.a->echo().request(ip_of(2), 1, 1, 4000, 2s, done.callback()), "");
  ASSERT_TRUE(hosts.run_until([&] { return !done.results.empty(); }, 5s));
  EXPECT_EQ(done.results[0].outcome, EchoResult::Outcome::Reply);
  EXPECT_EQ(done.results[0].bytes, IcmpHeader::kLength + 4000);
  EXPECT_TRUE(done.results[0].data_intact);
  EXPECT_EQ(hosts.b->stats().reassembly_completed, 1u);
  EXPECT_EQ(hosts.a->stats().reassembly_completed, 1u);
}

TEST(IcmpEchoTest, AlteredReplyDataIsReported) {
  TwoHosts hosts;
  hosts.wire.tap = [&](int from, std::vector<uint8_t>& bytes) {
    if (from == 1 && is_echo(bytes, IcmpHeader::kEchoReply) && bytes.size() > kEth + kIp + 8) {
      const IcmpView icmp(bytes.data() + kEth + kIp, bytes.size() - kEth - kIp);
      icmp.payload()[0] ^= 0xff;  // a peer that garbles the data but gets the checksum right
      icmp.set_checksum(0);
      icmp.set_checksum(internet_checksum(icmp.data(), icmp.size()));
    }
    return true;
  };
  Completions done;
  ASSERT_EQ(hosts.a->echo().request(ip_of(2), 1, 1, 32, 2s, done.callback()), "");
  ASSERT_TRUE(hosts.run_until([&] { return !done.results.empty(); }, 5s));
  EXPECT_EQ(done.results[0].outcome, EchoResult::Outcome::Reply);
  EXPECT_FALSE(done.results[0].data_intact);
}

TEST(IcmpEchoTest, RefusedRequestsNeverComplete) {
  TwoHosts hosts;
  Completions done;
  ASSERT_EQ(hosts.a->echo().request(ip_of(2), 1, 1, 8, 1s, done.callback()), "");
  EXPECT_EQ(hosts.a->echo().request(ip_of(2), 1, 1, 8, 1s, done.callback()),
            "identifier and sequence number already outstanding");
  // 192.168.1.1 is outside 10.0.0.0/24 and the hosts have no gateway.
  EXPECT_EQ(hosts.a->echo().request(Ipv4Address::from_octets(192, 168, 1, 1), 1, 2, 8, 1s, done.callback()),
            "no route (outside the netmask and no gateway)");
  EXPECT_NE(hosts.a->echo().request(ip_of(2), 1, 3, IcmpEcho::kMaxDataBytes + 1, 1s, done.callback()), "");
  hosts.run_for(3s);
  ASSERT_EQ(done.results.size(), 1u);  // only the first request
  EXPECT_EQ(done.results[0].sequence, 1);
}

TEST(IcmpEchoTest, MalformedOrForeignRepliesAreCountedNotMatched) {
  TwoHosts hosts;
  Completions done;
  ASSERT_EQ(hosts.a->echo().request(ip_of(2), 5, 5, 8, 1s, done.callback()), "");
  ASSERT_TRUE(hosts.run_until([&] { return !done.results.empty(); }, 5s));
  // A reply nobody asked for (other identifier) and one with a broken checksum.
  for (int broken = 0; broken < 2; ++broken) {
    std::vector<uint8_t> message(IcmpHeader::kLength + 4, 0xab);
    BufferList body;
    body.append_copy(message.data() + IcmpHeader::kLength, 4);
    IcmpHeader{IcmpHeader::kEchoReply, 0, 0, uint32_t{6} << 16 | 5}.emit(message.data(), body);
    if (broken) message[IcmpHeader::kLength] ^= 1;
    std::vector<uint8_t> frame(kEth + kIp);
    EthernetHeader{mac_of(1), mac_of(2), static_cast<uint16_t>(EtherType::Ipv4)}.emit(frame.data());
    Ipv4Header ip;
    ip.total_length = static_cast<uint16_t>(kIp + message.size());
    ip.protocol = 1;
    ip.source = ip_of(2);
    ip.destination = ip_of(1);
    ip.emit(frame.data() + kEth, true);
    frame.insert(frame.end(), message.begin(), message.end());
    Packet packet;
    packet.data.append_copy(frame.data(), frame.size());
    hosts.a->receive(std::move(packet));
  }
  EXPECT_EQ(hosts.a->stats().icmp_echo_replies_unmatched, 1u);
  EXPECT_EQ(hosts.a->stats().rx_malformed_icmp, 1u);
  EXPECT_EQ(done.results.size(), 1u);
}

}  // namespace
}  // namespace bypass::inet::test
