// TCP in large segments: a device that cuts segments of up to 64 KiB (TSO, or software segmentation
// below the stack; DeviceCapabilities::tx_large_segment_bytes) gets them, the wire sees MSS-sized
// frames (cut by TcpSegmentCutter, as stack/dpdk cuts them), the bytes arrive exact under loss,
// reordering and duplication, and retransmissions stay one SMSS each; over IPv6 as over IPv4, with
// the family's offload fields (l3_length 40, the IPv6 payload length, the IPv6 pseudo-header sum).
#include <algorithm>
#include <cstdio>

#include "tests/unit/inet/harness.h"

namespace bypass::inet::test {
namespace {

void enable_large_segments(TwoHosts& hosts) {
  for (PipeDevice* dev : {hosts.dev_a.get(), hosts.dev_b.get()}) {
    dev->caps_.tx_tcp_checksum = true;
    dev->caps_.tx_large_segment_bytes = 65535;
  }
}

InetSettings dual_stack() {
  InetSettings s;
  s.ipv6.address = *Ipv6Address::from_string("2001:db8::");  // TwoHosts: 2001:db8::1 (a), ::2 (b)
  return s;
}

TEST(TcpLargeSegments, WithoutTheCapabilityEverySegmentFitsTheMtu) {
  TwoHosts hosts(5);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  TransferResult r = transfer(hosts, client, server, 4ull << 20, 600s);
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(hosts.dev_a->large_segments, 0u);
}

TEST(TcpLargeSegments, CutByTheDeviceByteExact) {
  TwoHosts hosts(5);
  enable_large_segments(hosts);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  const uint64_t bytes = 64ull << 20;
  const uint64_t segments_before = hosts.a->stats().tcp_segments_sent;
  const uint64_t frames_before = hosts.wire.frames[0];
  // The writer refills the send buffer in 256 KiB steps, as one woken by a dpdk poll loop would after
  // a burst of ACKs: refilled after every single ACK, the buffer would hold back all but two SMSS.
  TransferResult r = transfer(hosts, client, server, bytes, 600s, 256 * 1024);
  EXPECT_TRUE(r.complete) << "received " << r.received << ", mismatch at " << r.mismatch_at;
  EXPECT_EQ(r.mismatch_at, -1);
  const uint64_t segments = hosts.a->stats().tcp_segments_sent - segments_before;
  const uint64_t frames = hosts.wire.frames[0] - frames_before;
  std::printf("%llu segments from TCP became %llu frames on the wire (%llu large)\n",
              static_cast<unsigned long long>(segments), static_cast<unsigned long long>(frames),
              static_cast<unsigned long long>(hosts.dev_a->large_segments));
  // Once cwnd has opened, segments carry ~44 SMSS: far fewer than one per SMSS.
  EXPECT_LT(segments * 8, bytes / client->send_mss());
  EXPECT_GE(frames, bytes / client->send_mss());
  EXPECT_EQ(hosts.a->stats().tcp_bad_checksum + hosts.b->stats().tcp_bad_checksum, 0u);
  EXPECT_EQ(client->retransmitted_segments(), 0u);
}

// Over IPv6 the segments TCP hands down carry what DPDK's offloads expect of an IPv6 frame:
// l2/l3 lengths 14 and 40 (no extension headers), no IPv4 header checksum, the IPv6 payload length
// covering the whole segment, and the TCP checksum field seeded with the IPv6 pseudo-header sum
// (RFC 8200 §8.1), without the length for a segment the device cuts (rte_ipv6_phdr_cksum with
// RTE_MBUF_F_TX_TCP_SEG), with it for one it only sums. The wire sees MTU-sized frames, byte-exact.
TEST(TcpLargeSegments, OverIpv6WithTheFamilysOffloadFields) {
  TwoHosts hosts(7, dual_stack());
  enable_large_segments(hosts);
  const Ipv6Address a = hosts.settings_a.ipv6.address, b = hosts.settings_b.ipv6.address;
  uint64_t large = 0, summed = 0, largest = 0;
  uint16_t cut_at = 0;
  hosts.dev_a->inspect = [&](const Packet& frame) {
    std::vector<uint8_t> bytes(frame.data.length());
    frame.data.copy_out(0, bytes.size(), bytes.data());
    TcpFrame tcp;
    if (parse_tcp_frame(bytes.data(), bytes.size(), tcp) != nullptr || !tcp.ipv6) return;
    EXPECT_EQ(frame.tx.l2_length, EthernetHeader::kLength);
    EXPECT_EQ(frame.tx.l3_length, Ipv6Header::kLength);
    EXPECT_FALSE(frame.tx.ipv4_checksum);
    ASSERT_TRUE(frame.tx.tcp_checksum);
    const size_t tcp_length = bytes.size() - tcp.tcp_offset;
    EXPECT_EQ(tcp.tcp_length, tcp_length);  // the payload length field
    EXPECT_EQ(frame.tx.l4_length, tcp.header.header_length);
    const uint16_t field = tcp.header.checksum;
    if (frame.tx.segment_payload == 0) {
      ++summed;
      EXPECT_EQ(field, tcp_pseudo_header_sum(a, b, tcp_length));
      return;
    }
    ++large;
    cut_at = frame.tx.segment_payload;
    const size_t payload = tcp_length - frame.tx.l4_length;
    largest = std::max<uint64_t>(largest, payload);
    EXPECT_GT(payload, frame.tx.segment_payload);
    EXPECT_LE(40 + tcp_length, 65535u);
    EXPECT_EQ(field, tcp_pseudo_header_sum(a, b, 0));
  };
  auto [client, server] = connect_pair(hosts, IpAddress(b));
  ASSERT_TRUE(client && server);
  ASSERT_TRUE(client->tuple().is_v6());
  const uint64_t bytes = 16ull << 20;
  const uint64_t segments_before = hosts.a->stats().tcp_segments_sent;
  TransferResult r = transfer(hosts, client, server, bytes, 600s, 256 * 1024);
  EXPECT_TRUE(r.complete) << "received " << r.received << ", mismatch at " << r.mismatch_at;
  EXPECT_EQ(r.mismatch_at, -1);
  std::printf("IPv6: %llu large segments (largest %llu bytes, cut at %u), %llu summed by the device\n",
              static_cast<unsigned long long>(large), static_cast<unsigned long long>(largest), cut_at,
              static_cast<unsigned long long>(summed));
  EXPECT_GT(large, 0u);
  EXPECT_GT(summed, 0u);  // the handshake and ACKs: checksum offload alone
  EXPECT_EQ(cut_at, client->send_mss());
  EXPECT_EQ(client->send_mss(), 1500u - 40 - 20 - 12);  // SMSS of the IPv6 path, timestamps on
  // Most of the data went in segments of ~64 KiB (the datagram limit less 40 + 60 bytes of headers).
  EXPECT_GE(largest, (65535u - 100) / client->send_mss() * client->send_mss());
  EXPECT_LT((hosts.a->stats().tcp_segments_sent - segments_before) * 8, bytes / client->send_mss());
  EXPECT_EQ(hosts.a->stats().tcp_bad_checksum + hosts.b->stats().tcp_bad_checksum, 0u);
  EXPECT_EQ(hosts.a->stats().ipv6_tx_too_big, 0u);
}

struct FaultCase {
  double loss;
  bool sack;
  CongestionAlgorithm algorithm;
  bool ipv6 = false;
};
class TcpLargeSegmentFaults : public ::testing::TestWithParam<FaultCase> {};

TEST_P(TcpLargeSegmentFaults, ByteExactAndRetransmitOneSmssAtATime) {
  const FaultCase& c = GetParam();
  InetSettings base;
  base.tcp.sack = c.sack;
  base.tcp.congestion = c.algorithm;
  if (c.ipv6) base.ipv6 = dual_stack().ipv6;
  TwoHosts hosts(11, base);
  enable_large_segments(hosts);
  auto [client, server] =
      c.ipv6 ? connect_pair(hosts, IpAddress(hosts.settings_b.ipv6.address)) : connect_pair(hosts);
  ASSERT_TRUE(client && server);
  ASSERT_EQ(client->tuple().is_v6(), c.ipv6);
  for (Faults& f : hosts.wire.faults) {
    f.drop = c.loss;
    f.reorder = c.loss;
    f.duplicate = c.loss / 2;
  }
  const uint64_t bytes = 16ull << 20;
  TransferResult r = transfer(hosts, client, server, bytes, 3600s, 256 * 1024);
  EXPECT_TRUE(r.complete) << "received " << r.received << ", mismatch at " << r.mismatch_at << ", "
                          << client->describe();
  EXPECT_EQ(r.mismatch_at, -1);
  EXPECT_GT(hosts.dev_a->large_segments, 0u);
  ASSERT_GT(client->retransmitted_segments(), 0u);
  // Every retransmission is at most one SMSS (RFC 5681 §3.2, RFC 6675 §5): on average too.
  EXPECT_LE(client->retransmitted_bytes(), client->retransmitted_segments() * client->send_mss());
  std::printf("retransmitted %llu segments, %llu bytes (SMSS %u), %llu timeouts\n",
              static_cast<unsigned long long>(client->retransmitted_segments()),
              static_cast<unsigned long long>(client->retransmitted_bytes()), client->send_mss(),
              static_cast<unsigned long long>(client->timeouts()));
}

INSTANTIATE_TEST_SUITE_P(
    Faults, TcpLargeSegmentFaults,
    ::testing::Values(FaultCase{0.01, true, CongestionAlgorithm::NewReno},
                      FaultCase{0.05, true, CongestionAlgorithm::Cubic},
                      FaultCase{0.01, false, CongestionAlgorithm::NewReno},
                      FaultCase{0.01, true, CongestionAlgorithm::Cubic, true}),
    [](const ::testing::TestParamInfo<FaultCase>& info) {
      return std::string(info.param.algorithm == CongestionAlgorithm::Cubic ? "Cubic" : "NewReno") +
             (info.param.sack ? "Sack" : "NoSack") + std::to_string(static_cast<int>(info.param.loss * 100)) + "pct" +
             (info.param.ipv6 ? "Ipv6" : "");
    });

}  // namespace
}  // namespace bypass::inet::test
