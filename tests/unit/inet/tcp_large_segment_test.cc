// TCP in large segments: a device that cuts segments of up to 64 KiB (TSO, or software segmentation
// below the stack; DeviceCapabilities::tx_large_segment_bytes) gets them, the wire sees MSS-sized
// frames (cut by TcpSegmentCutter, as stack/dpdk cuts them), the bytes arrive exact under loss,
// reordering and duplication, and retransmissions stay one SMSS each.
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

struct FaultCase {
  double loss;
  bool sack;
  CongestionAlgorithm algorithm;
};
class TcpLargeSegmentFaults : public ::testing::TestWithParam<FaultCase> {};

TEST_P(TcpLargeSegmentFaults, ByteExactAndRetransmitOneSmssAtATime) {
  const FaultCase& c = GetParam();
  InetSettings base;
  base.tcp.sack = c.sack;
  base.tcp.congestion = c.algorithm;
  TwoHosts hosts(11, base);
  enable_large_segments(hosts);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
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
                      FaultCase{0.01, false, CongestionAlgorithm::NewReno}),
    [](const ::testing::TestParamInfo<FaultCase>& info) {
      return std::string(info.param.algorithm == CongestionAlgorithm::Cubic ? "Cubic" : "NewReno") +
             (info.param.sack ? "Sack" : "NoSack") + std::to_string(static_cast<int>(info.param.loss * 100)) + "pct";
    });

}  // namespace
}  // namespace bypass::inet::test
