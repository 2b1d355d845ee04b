// TCP over IPv6 (RFC 9293 over RFC 8200): two stacks with both families on the in-memory wire.
// Handshake and bulk transfer, options in the SYN, both families on one listening port, RST and
// checksum handling, Packet Too Big (RFC 8201, validated as RFC 5927 asks), SYN cookies.
#include <algorithm>
#include <cstring>

#include "stack/inet/tuple_table.h"
#include "tests/unit/inet/harness.h"
#include "tests/unit/inet/ipv6_frames.h"

namespace bypass::inet::test {
namespace {

InetSettings dual_stack(InetSettings s = {}) {
  s.ipv6.address = v6("2001:db8::");  // TwoHosts makes it 2001:db8::1 (a) and 2001:db8::2 (b)
  return s;
}

// Whether the TCP checksum of `frame` verifies (RFC 8200 §8.1 pseudo-header).
bool checksum_ok(const std::vector<uint8_t>& bytes, const TcpFrame& frame) {
  BufferList segment;
  segment.append_copy(bytes.data() + frame.tcp_offset, frame.tcp_length);
  return tcp_checksum(frame.source.v6(), frame.destination.v6(), segment) == 0;
}

// The IPv6 TCP segment in `bytes`, if that is what it holds.
std::optional<TcpFrame> tcp6(const std::vector<uint8_t>& bytes) {
  TcpFrame frame;
  if (parse_tcp_frame(bytes.data(), bytes.size(), frame) != nullptr || !frame.ipv6) return std::nullopt;
  return frame;
}

// a connects to b:`port` over IPv6; {client, server} once both are established.
std::pair<std::shared_ptr<TcpConnection>, std::shared_ptr<TcpConnection>> connect6(TwoHosts& hosts,
                                                                                   uint16_t port = 80) {
  auto listener = hosts.b->tcp().listen(port);
  if (!listener) return {};
  auto client = hosts.a->tcp().connect(hosts.settings_b.ipv6.address, port);
  if (!client) return {};
  std::shared_ptr<TcpConnection> server;
  hosts.run_until([&] {
    if (!server) server = listener->accept();
    return server && client->established();
  }, 60s);
  hosts.b->tcp().stop_listening(listener);
  return {client, server};
}

void inject(InetStack& stack, const Bytes& frame) {
  Packet packet;
  packet.data.append(BufferSegment::copy_of(frame.data(), frame.size()));
  stack.receive(std::move(packet));
}

// A Packet Too Big from b's address to a, quoting an IPv6/TCP header of a's connection `c`
// with sequence number `seq` (RFC 4443 §3.2).
Bytes packet_too_big(TwoHosts& hosts, const TcpConnection& c, SeqNumber seq, uint32_t mtu, uint16_t port_offset = 0) {
  Bytes tcp(TcpHeader::kMinLength);
  const TcpView view(tcp.data(), tcp.size());
  view.set_src_port(static_cast<uint16_t>(c.tuple().local_port + port_offset));
  view.set_dst_port(c.tuple().remote_port);
  view.set_seq_number(seq);
  view.set_header_length(TcpHeader::kMinLength);
  view.set_flags(kTcpAck);
  tcp.resize(1200);  // a quote of a full-sized segment: header and the start of its payload
  const Ipv6Address& a = hosts.settings_a.ipv6.address;
  const Ipv6Address& b = hosts.settings_b.ipv6.address;
  Bytes quoted = ipv6(a, b, kIpv6Tcp, tcp);
  return ethernet(mac_of(1), mac_of(2), ipv6(b, a, kIpv6Icmpv6, icmpv6(b, a, Icmpv6Header::kPacketTooBig, 0, mtu, quoted)));
}

TEST(IpAddressTest, FamiliesFormsAndOrder) {
  const IpAddress v4 = ip_of(7);
  const IpAddress six = v6("2001:db8::7");
  EXPECT_TRUE(v4.is_v4());
  EXPECT_TRUE(six.is_v6());
  EXPECT_EQ(v4.v4(), ip_of(7));
  EXPECT_EQ(six.v6(), v6("2001:db8::7"));
  EXPECT_NE(IpAddress(ip_of(7)), IpAddress(v6("::7")));
  EXPECT_EQ(IpAddress(v6("::ffff:10.0.0.7")), v4);  // the mapped form is the IPv4 address
  EXPECT_EQ(endpoint_to_string(v4, 80), "10.0.0.7:80");
  EXPECT_EQ(endpoint_to_string(six, 80), "[2001:db8::7]:80");
  EXPECT_EQ(endpoint_to_string(IpAddress(v6("2001:db8:0:0:1:0:0:1")), 1), "[2001:db8::1:0:0:1]:1");  // RFC 5952 §4.2.3
  EXPECT_LT(IpAddress(ip_of(1)), IpAddress(ip_of(2)));
  EXPECT_LT(IpAddress(v6("2001:db8::1")), IpAddress(v6("2001:db8::2")));
  const FourTuple t4{ip_of(1), 80, ip_of(2), 1000}, t6{v6("2001:db8::1"), 80, v6("2001:db8::2"), 1000};
  EXPECT_FALSE(t4.is_v6());
  EXPECT_TRUE(t6.is_v6());
  EXPECT_EQ(t6.to_string(), "[2001:db8::1]:80 [2001:db8::2]:1000");
  EXPECT_NE(FourTupleHash{}(t6), FourTupleHash{}(FourTuple{v6("2001:db8::1"), 80, v6("2001:db9::2"), 1000}));
}

// One table holds both families; an IPv4 tuple and the IPv6 one with the same low 32 bits never
// meet, and backward-shift deletion keeps every key reachable.
TEST(IpAddressTest, TupleTableHoldsBothFamilies) {
  TupleTable<int> table(8);
  auto v4_tuple = [](uint32_t n) { return FourTuple{ip_of(1), 80, Ipv4Address{0x0a000000u + n}, static_cast<uint16_t>(n)}; };
  auto v6_tuple = [](uint32_t n) {
    Ipv6Address remote = v6("2001:db8::");
    store_be32(remote.bytes.data() + 12, 0x0a000000u + n);
    return FourTuple{v6("2001:db8::1"), 80, remote, static_cast<uint16_t>(n)};
  };
  for (uint32_t n = 0; n < 500; ++n) {
    ASSERT_TRUE(table.insert(v4_tuple(n), static_cast<int>(n)));
    ASSERT_TRUE(table.insert(v6_tuple(n), -static_cast<int>(n) - 1));
  }
  EXPECT_EQ(table.size(), 1000u);
  for (uint32_t n = 0; n < 500; n += 2) EXPECT_TRUE(table.erase(v4_tuple(n)));
  for (uint32_t n = 0; n < 500; ++n) {
    const int* four = table.find(v4_tuple(n));
    const int* six = table.find(v6_tuple(n));
    ASSERT_NE(six, nullptr);
    EXPECT_EQ(*six, -static_cast<int>(n) - 1);
    if (n % 2) {
      ASSERT_NE(four, nullptr);
      EXPECT_EQ(*four, static_cast<int>(n));
    } else {
      EXPECT_EQ(four, nullptr);
    }
  }
}

TEST(TcpIpv6Test, HandshakeAndFourMebibytesEachWay) {
  TwoHosts hosts(101, dual_stack());
  SegmentRecorder recorder(hosts);
  auto [client, server] = connect6(hosts);
  ASSERT_TRUE(client && server && client->established() && server->established());
  EXPECT_TRUE(client->tuple().is_v6());
  EXPECT_EQ(client->tuple().remote_ip, IpAddress(hosts.settings_b.ipv6.address));
  EXPECT_EQ(server->tuple().remote_ip, IpAddress(hosts.settings_a.ipv6.address));
  EXPECT_EQ(client->tuple().to_string().front(), '[');
  // MTU 1500 - 40 IPv6 - 20 TCP - 12 timestamps.
  EXPECT_EQ(client->send_mss(), 1500u - 60u - 12u);
  TransferResult up = transfer(hosts, client, server, 4 << 20, 120s);
  EXPECT_TRUE(up.complete);
  EXPECT_EQ(up.mismatch_at, -1);
  TransferResult down = transfer(hosts, server, client, 4 << 20, 120s);
  EXPECT_TRUE(down.complete);
  EXPECT_EQ(down.mismatch_at, -1);
  EXPECT_EQ(hosts.a->stats().tcp_bad_checksum + hosts.b->stats().tcp_bad_checksum, 0u);
  size_t data_segments = 0;
  for (const SeenSegment& s : recorder.segments()) {
    EXPECT_TRUE(s.ipv6);
    EXPECT_LE(s.ip_length, 1500u);
    EXPECT_LE(s.payload, 1440u);
    data_segments += s.payload > 0;
  }
  EXPECT_GT(data_segments, 2u * (4u << 20) / 1440u);
  // Nothing went over IPv4.
  EXPECT_EQ(hosts.a->tcp().connection_count(), 1u);
  EXPECT_EQ(hosts.b->stats().rx_malformed_tcp, 0u);
}

TEST(TcpIpv6Test, TransferSurvivesALossyDuplicatingReorderingWire) {
  TwoHosts hosts(102, dual_stack());
  auto [client, server] = connect6(hosts);
  ASSERT_TRUE(client && server);
  for (Faults& f : hosts.wire.faults) {
    f.drop = 0.02;
    f.duplicate = 0.02;
    f.reorder = 0.05;
  }
  TransferResult up = transfer(hosts, client, server, 4 << 20, 600s);
  EXPECT_TRUE(up.complete);
  EXPECT_EQ(up.mismatch_at, -1);
  TransferResult down = transfer(hosts, server, client, 1 << 20, 600s);
  EXPECT_TRUE(down.complete);
  EXPECT_EQ(down.mismatch_at, -1);
  EXPECT_GT(client->retransmitted_segments(), 0u);
}

// The SYN over IPv6 carries what the SYN over IPv4 does, but MSS = MTU - 60 (RFC 8200 §5).
TEST(TcpIpv6Test, SynOptionsMatchIpv4ButForTheMss) {
  auto first_syns = [](bool over_v6) {
    TwoHosts hosts(103, dual_stack());
    std::vector<TcpHeader> syns;
    SegmentRecorder recorder(hosts);
    auto listener = hosts.b->tcp().listen(80);
    auto client = over_v6 ? hosts.a->tcp().connect(hosts.settings_b.ipv6.address, 80)
                          : hosts.a->tcp().connect(ip_of(2), 80);
    hosts.run_until([&] { return client->established(); }, 5s);
    for (const SeenSegment& s : recorder.segments())
      if (s.header.has(kTcpSyn)) syns.push_back(s.header);
    return syns;
  };
  const auto four = first_syns(false), six = first_syns(true);
  ASSERT_EQ(four.size(), 2u);  // SYN, SYN-ACK
  ASSERT_EQ(six.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(four[i].options.mss && six[i].options.mss);
    EXPECT_EQ(*four[i].options.mss, 1460u);
    EXPECT_EQ(*six[i].options.mss, 1440u);
    EXPECT_EQ(four[i].options.window_scale, six[i].options.window_scale);
    EXPECT_TRUE(six[i].options.window_scale.has_value());
    EXPECT_EQ(four[i].options.sack_permitted, six[i].options.sack_permitted);
    EXPECT_TRUE(six[i].options.sack_permitted);
    EXPECT_EQ(four[i].options.timestamp.has_value(), six[i].options.timestamp.has_value());
    EXPECT_TRUE(six[i].options.timestamp.has_value());
    EXPECT_EQ(four[i].window, six[i].window);
    EXPECT_EQ(four[i].flags, six[i].flags);
  }
}

TEST(TcpIpv6Test, OneListenerTakesBothFamiliesAtOnce) {
  TwoHosts hosts(104, dual_stack());
  auto listener = hosts.b->tcp().listen(80);
  ASSERT_TRUE(listener);
  auto c4 = hosts.a->tcp().connect(ip_of(2), 80);
  auto c6 = hosts.a->tcp().connect(hosts.settings_b.ipv6.address, 80);
  ASSERT_TRUE(c4 && c6);
  std::vector<std::shared_ptr<TcpConnection>> servers;
  ASSERT_TRUE(hosts.run_until([&] {
    while (auto c = listener->accept()) servers.push_back(c);
    return servers.size() == 2 && c4->established() && c6->established();
  }, 10s));
  auto s4 = servers[0]->tuple().is_v6() ? servers[1] : servers[0];
  auto s6 = servers[0]->tuple().is_v6() ? servers[0] : servers[1];
  EXPECT_FALSE(s4->tuple().is_v6());
  EXPECT_TRUE(s6->tuple().is_v6());
  EXPECT_EQ(s4->tuple().remote_ip, IpAddress(ip_of(1)));
  EXPECT_EQ(s6->tuple().remote_ip, IpAddress(hosts.settings_a.ipv6.address));
  EXPECT_EQ(c4->send_mss() - c6->send_mss(), 20u);
  EXPECT_TRUE(transfer(hosts, c4, s4, 256 << 10, 30s).complete);
  EXPECT_TRUE(transfer(hosts, c6, s6, 256 << 10, 30s).complete);
  EXPECT_TRUE(transfer(hosts, s6, c6, 256 << 10, 30s).complete);
  // The diagnostics snapshot shows both, IPv6 in brackets.
  const auto infos = hosts.b->tcp().connections();
  ASSERT_EQ(infos.size(), 2u);
  EXPECT_EQ(std::count_if(infos.begin(), infos.end(), [](const ConnectionInfo& i) { return i.tuple.is_v6(); }), 1);
}

// RFC 9293 §3.10.7.1: a SYN to a closed port gets <SEQ=0><ACK=SEG.SEQ+1><CTL=RST,ACK>.
TEST(TcpIpv6Test, SynToAClosedPortIsReset) {
  TwoHosts hosts(105, dual_stack());
  std::vector<bool> sums;
  hosts.wire.tap = [&](int, std::vector<uint8_t>& bytes) {
    if (auto frame = tcp6(bytes)) sums.push_back(checksum_ok(bytes, *frame));
    return true;
  };
  SegmentRecorder recorder(hosts);  // after the tap above, which it keeps
  std::vector<SeenSegment>& seen = recorder.segments();
  auto client = hosts.a->tcp().connect(hosts.settings_b.ipv6.address, 81);
  ASSERT_TRUE(client);
  ASSERT_TRUE(hosts.run_until([&] { return client->state() == TcpState::Closed; }, 5s));
  EXPECT_EQ(client->error(), TcpError::Refused);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].from, 1);
  EXPECT_EQ(seen[1].header.flags, kTcpRst | kTcpAck);
  EXPECT_EQ(seen[1].header.ack, seen[0].header.seq + 1);
  EXPECT_EQ(seen[1].header.seq, 0u);
  EXPECT_TRUE(sums[0]);
  EXPECT_TRUE(sums[1]);
  EXPECT_EQ(hosts.b->stats().tcp_rst_sent, 1u);
  EXPECT_EQ(hosts.b->stats().tcp_dropped_no_connection, 1u);
}

TEST(TcpIpv6Test, BadChecksumIsDroppedCountedAndRecovered) {
  TwoHosts hosts(106, dual_stack());
  auto [client, server] = connect6(hosts);
  ASSERT_TRUE(client && server);
  int corrupted = 0;
  hosts.wire.tap = [&](int from, std::vector<uint8_t>& bytes) {
    const auto frame = tcp6(bytes);
    if (from == 0 && corrupted < 3 && frame && frame->payload_length() > 0) {
      bytes.back() ^= 0x5a;  // payload changed, checksum not
      ++corrupted;
    }
    return true;
  };
  const uint64_t before = hosts.b->stats().tcp_bad_checksum;
  TransferResult r = transfer(hosts, client, server, 256 << 10, 30s);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.mismatch_at, -1);
  EXPECT_EQ(corrupted, 3);
  EXPECT_EQ(hosts.b->stats().tcp_bad_checksum - before, 3u);
}

// Also with large segments (the device cuts them, TSO or software): after the report they are cut
// at the lowered SMSS, so every frame fits the path MTU again.
TEST(TcpIpv6Test, PacketTooBigInTheWindowLowersTheMssAndResends) {
  for (const bool large_segments : {false, true}) {
    SCOPED_TRACE(large_segments ? "large segments" : "MTU-sized segments");
    TwoHosts hosts(107, dual_stack());
    for (PipeDevice* dev : {hosts.dev_a.get(), hosts.dev_b.get()}) {
      dev->caps_.tx_tcp_checksum = large_segments;
      dev->caps_.tx_large_segment_bytes = large_segments ? 65535 : 0;
    }
    auto [client, server] = connect6(hosts);
    ASSERT_TRUE(client && server);
    const uint32_t before = client->send_mss();
    // A router on the path with MTU 1280: it drops what is larger and reports it once per packet.
    bool reported = false;
    std::vector<TcpFrame> after;
    hosts.wire.tap = [&](int from, std::vector<uint8_t>& bytes) {
      const auto frame = tcp6(bytes);
      if (from != 0 || !frame) return true;
      if (frame->ip_length() <= 1280) {
        if (reported) after.push_back(*frame);
        return true;
      }
      if (!reported) {
        reported = true;
        const Bytes ptb = packet_too_big(hosts, *client, frame->header.seq, 1280);
        hosts.timers.schedule(10us, [&hosts, ptb] { inject(*hosts.a, ptb); });
      }
      return false;
    };
    TransferResult r = transfer(hosts, client, server, 2 << 20, 120s);
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.mismatch_at, -1);
    EXPECT_TRUE(reported);
    EXPECT_LT(client->send_mss(), before);
    EXPECT_EQ(client->send_mss(), 1280u - 60u - 12u);
    EXPECT_GT(after.size(), 100u);
    EXPECT_EQ(hosts.a->stats().icmpv6_packet_too_big_received, 1u);
    EXPECT_EQ(hosts.dev_a->large_segments > 0, large_segments);
  }
}

// connect6, then 20000 bytes sent and held on a cut wire, so SND.UNA < SND.NXT when errors arrive.
std::pair<std::shared_ptr<TcpConnection>, std::shared_ptr<TcpConnection>> connect6_with_flight(TwoHosts& hosts) {
  auto connection = connect6(hosts);
  if (!connection.first) return connection;
  hosts.wire.cut = true;
  BufferList data = pattern(0, 20000);
  connection.first->send(data);
  hosts.run_for(1ms);
  return connection;
}

TEST(TcpIpv6Test, PacketTooBigOutsideTheWindowIsIgnored) {
  TwoHosts hosts(108, dual_stack());
  auto [client, server] = connect6_with_flight(hosts);
  ASSERT_TRUE(client && server);
  const uint32_t mss = client->send_mss();
  const uint64_t resent = client->retransmitted_segments();
  const SeqNumber una = client->initial_send_sequence() + 1;
  const Ipv6Address& b = hosts.settings_b.ipv6.address;
  // Beyond SND.NXT, and before SND.UNA: both ignored (RFC 5927 §4.1), the destination's path MTU
  // included (the table is shared by every connection to b: checked before it changes).
  inject(*hosts.a, packet_too_big(hosts, *client, una + 1'000'000, 1280));
  inject(*hosts.a, packet_too_big(hosts, *client, una - 5000, 1280));
  EXPECT_EQ(hosts.a->stats().icmpv6_packet_too_big_received, 2u);
  EXPECT_EQ(hosts.a->stats().icmpv6_packet_too_big_unvalidated, 2u);
  EXPECT_EQ(hosts.a->ipv6().path_mtu(b), 1500u);
  EXPECT_EQ(client->send_mss(), mss);
  EXPECT_EQ(client->retransmitted_segments(), resent);
  // A tuple with no connection: ignored too.
  inject(*hosts.a, packet_too_big(hosts, *client, una, 1280, 1));
  EXPECT_EQ(hosts.a->stats().icmpv6_packet_too_big_unvalidated, 3u);
  EXPECT_EQ(hosts.a->ipv6().path_mtu(b), 1500u);
  EXPECT_EQ(client->send_mss(), mss);
  EXPECT_EQ(client->retransmitted_segments(), resent);
  // The same error quoting SND.UNA is taken: smaller segments, the flight resent.
  inject(*hosts.a, packet_too_big(hosts, *client, una, 1280));
  EXPECT_EQ(hosts.a->stats().icmpv6_packet_too_big_unvalidated, 3u);
  EXPECT_EQ(hosts.a->ipv6().path_mtu(b), 1280u);
  EXPECT_EQ(client->send_mss(), 1280u - 60u - 12u);
  EXPECT_GT(client->retransmitted_segments(), resent);
}

// A Packet Too Big about another packet to the same destination (here another connection's)
// lowers the destination's path MTU (ipv6_path_mtu.h) without telling this connection, whose
// full-sized flight the router dropped without a word (its own Packet Too Big lost or rate
// limited). Its loss probe and RTO retransmissions must follow the lowered path MTU too: sized to
// the old SMSS, Ipv6Layer refused each (ipv6_tx_too_big) and only the second RTO, going back N
// through output(), got data through (found by dpdk_netns_ipv6_gateway).
TEST(TcpIpv6Test, RetransmissionsFollowAPathMtuLearnedFromAnotherPacket) {
  TwoHosts hosts(109, dual_stack());
  auto [client, server] = connect6(hosts);
  ASSERT_TRUE(client && server);
  const uint32_t full_mss = client->send_mss();
  ASSERT_GT(full_mss + 60u + 12u, 1280u);
  // A router with MTU 1280 towards b that drops larger packets and reports none of them.
  int dropped = 0;
  hosts.wire.tap = [&](int from, std::vector<uint8_t>& bytes) {
    const auto frame = tcp6(bytes);
    if (from != 0 || !frame || frame->ip_length() <= 1280) return true;
    ++dropped;
    return false;
  };
  constexpr size_t kBytes = 6 * 1400;
  BufferList data = pattern(0, kBytes);
  ASSERT_EQ(client->send(data), kBytes);
  hosts.run_for(10us);
  ASSERT_GT(dropped, 0);
  ASSERT_EQ(client->send_mss(), full_mss);  // the flight went out full-sized
  // Another connection to b with a full-sized segment in flight gets the Packet Too Big: it
  // validates there (RFC 5927 §4.1) and lowers b's path MTU for both.
  auto [other, other_server] = connect6(hosts, 7001);
  ASSERT_TRUE(other && other_server);
  BufferList other_data = pattern(0, 1400);
  ASSERT_EQ(other->send(other_data), 1400u);
  hosts.run_for(10us);
  inject(*hosts.a, packet_too_big(hosts, *other, other->initial_send_sequence() + 1, 1280));
  ASSERT_EQ(hosts.a->stats().icmpv6_packet_too_big_unvalidated, 0u);
  ASSERT_EQ(hosts.a->ipv6().path_mtu(hosts.settings_b.ipv6.address), 1280u);
  BufferList received;
  server->set_event_handler([&](int) { received.append(server->read()); });
  ASSERT_TRUE(hosts.run_until([&] { return received.length() == kBytes; }, 30s));
  server->set_event_handler(nullptr);
  EXPECT_EQ(first_mismatch(received, 0), -1);
  EXPECT_EQ(client->send_mss(), 1280u - 60u - 12u);
  // Nothing was refused for its size, and the loss probe repaired the flight before any RTO.
  EXPECT_EQ(hosts.a->stats().ipv6_tx_too_big, 0u);
  EXPECT_EQ(client->timeouts(), 0u);
}

// RFC 8201 §4: a reported MTU below 1280 means 1280, and a Packet Too Big never raises the path
// MTU, not even a validated one about the connection's own segment.
TEST(TcpIpv6Test, PacketTooBigIsClampedTo1280AndNeverRaisesTheMss) {
  TwoHosts hosts(109, dual_stack());
  auto [client, server] = connect6_with_flight(hosts);
  ASSERT_TRUE(client && server);
  const SeqNumber una = client->initial_send_sequence() + 1;
  const Ipv6Address& b = hosts.settings_b.ipv6.address;
  inject(*hosts.a, packet_too_big(hosts, *client, una, 600));
  EXPECT_EQ(hosts.a->ipv6().path_mtu(b), 1280u);
  EXPECT_EQ(client->send_mss(), 1280u - 60u - 12u);
  for (const uint32_t larger : {1400u, 1500u, 9000u}) {
    inject(*hosts.a, packet_too_big(hosts, *client, una, larger));
    EXPECT_EQ(hosts.a->ipv6().path_mtu(b), 1280u) << larger;
    EXPECT_EQ(client->send_mss(), 1280u - 60u - 12u) << "raised by a Packet Too Big reporting " << larger;
  }
  EXPECT_EQ(hosts.a->stats().icmpv6_packet_too_big_received, 4u);
  EXPECT_EQ(hosts.a->stats().icmpv6_packet_too_big_unvalidated, 0u);
}

TEST(TcpIpv6Test, DestinationUnreachablePortEndsAConnectionAttempt) {
  TwoHosts hosts(109, dual_stack());
  hosts.wire.cut = true;  // b never answers
  auto client = hosts.a->tcp().connect(hosts.settings_b.ipv6.address, 80);
  ASSERT_TRUE(client);
  hosts.run_for(1ms);
  const Ipv6Address& a = hosts.settings_a.ipv6.address;
  const Ipv6Address& b = hosts.settings_b.ipv6.address;
  auto unreachable = [&](uint8_t code, SeqNumber seq) {
    Bytes tcp(20);
    store_be16(tcp.data(), client->tuple().local_port);
    store_be16(tcp.data() + 2, 80);
    store_be32(tcp.data() + 4, seq.raw());
    return ethernet(mac_of(1), mac_of(2),
                    ipv6(b, a, kIpv6Icmpv6, icmpv6(b, a, Icmpv6Header::kDestinationUnreachable, code, 0,
                                                   ipv6(a, b, kIpv6Tcp, tcp))));
  };
  const SeqNumber iss = client->initial_send_sequence();
  inject(*hosts.a, unreachable(Icmpv6Header::kNoRoute, iss));  // soft (RFC 4443 §3.1 code 0)
  EXPECT_EQ(client->state(), TcpState::SynSent);
  inject(*hosts.a, unreachable(Icmpv6Header::kPortUnreachable, iss + 100));  // not in flight
  EXPECT_EQ(client->state(), TcpState::SynSent);
  inject(*hosts.a, unreachable(Icmpv6Header::kPortUnreachable, iss));  // hard
  EXPECT_EQ(client->state(), TcpState::Closed);
  EXPECT_EQ(client->error(), TcpError::Unreachable);
}

TEST(TcpIpv6Test, SynCookiesWhenTheBacklogIsFull) {
  InetSettings s = dual_stack();
  s.tcp.syn_backlog = 2;
  TwoHosts hosts(110, s);
  auto listener = hosts.b->tcp().listen(80);
  std::vector<std::shared_ptr<TcpConnection>> clients;
  for (int i = 0; i < 6; ++i) clients.push_back(hosts.a->tcp().connect(hosts.settings_b.ipv6.address, 80));
  std::vector<std::shared_ptr<TcpConnection>> servers;
  ASSERT_TRUE(hosts.run_until([&] {
    while (auto c = listener->accept()) servers.push_back(c);
    return servers.size() == 6 &&
           std::all_of(clients.begin(), clients.end(), [](auto& c) { return c->established(); });
  }, 5s));
  EXPECT_GE(hosts.b->stats().tcp_syn_cookies_sent, 1u);
  EXPECT_EQ(hosts.b->stats().tcp_syn_cookies_accepted, hosts.b->stats().tcp_syn_cookies_sent);
  size_t cookie_connections = 0;
  for (size_t i = 0; i < clients.size(); ++i) {
    auto server = *std::find_if(servers.begin(), servers.end(), [&](auto& c) {
      return c->tuple().remote_port == clients[i]->tuple().local_port;
    });
    EXPECT_TRUE(server->tuple().is_v6());
    // A cookie encodes 1440 as the largest table entry not above it (1360), no timestamps.
    cookie_connections += !server->timestamps_enabled();
    TransferResult r = transfer(hosts, clients[i], server, 128 * 1024, 60s);
    EXPECT_TRUE(r.complete) << i;
  }
  EXPECT_EQ(cookie_connections, hosts.b->stats().tcp_syn_cookies_accepted);
}

TEST(TcpIpv6Test, NoIpv6AddressMeansNoRoute) {
  TwoHosts hosts(111);  // IPv4 only
  EXPECT_EQ(hosts.a->tcp().connect(v6("2001:db8::2"), 80), nullptr);
  EXPECT_EQ(hosts.a->stats().tx_no_route, 1u);
  TwoHosts dual(112, dual_stack());
  EXPECT_EQ(dual.a->tcp().connect(Ipv6Address::all_nodes(), 80), nullptr);  // not unicast
}

TEST(TcpIpv6Test, AcknowledgedDataConfirmsTheNeighbour) {
  TwoHosts hosts(113, dual_stack());
  auto [client, server] = connect6(hosts);
  ASSERT_TRUE(client && server);
  const Ipv6Address& b = hosts.settings_b.ipv6.address;
  // Long idle: the neighbour goes STALE (RFC 4861 §7.3.3); acknowledged data makes it REACHABLE
  // without a probe.
  hosts.run_for(120s);
  EXPECT_NE(hosts.a->neighbors().state(b), NeighborState::Reachable);
  ASSERT_TRUE(transfer(hosts, client, server, 64 << 10, 10s).complete);
  EXPECT_EQ(hosts.a->neighbors().state(b), NeighborState::Reachable);
}

}  // namespace
}  // namespace bypass::inet::test
