// Byte-exact bulk transfers across the faulty wire.
#include <cstdio>

#include "tests/unit/inet/harness.h"

namespace bypass::inet::test {
namespace {

TEST(TcpTransfer, HandshakeNegotiatesOptions) {
  TwoHosts hosts;
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  EXPECT_EQ(client->state(), TcpState::Established);
  EXPECT_EQ(server->state(), TcpState::Established);
  EXPECT_TRUE(client->timestamps_enabled());
  EXPECT_TRUE(client->sack_enabled());
  EXPECT_EQ(client->receive_window_shift(), 5);  // 1 MiB buffer needs a shift of 5
  EXPECT_EQ(client->send_window_shift(), 5);
  EXPECT_EQ(client->send_mss(), 1500u - 40 - 12);  // timestamps take 12 bytes
}

struct LossCase {
  double loss;
  uint64_t bytes;
  CongestionAlgorithm algorithm;
  bool sack;
};

class TcpLossTransfer : public ::testing::TestWithParam<LossCase> {};

TEST_P(TcpLossTransfer, ByteExact) {
  const LossCase& c = GetParam();
  InetSettings base;
  base.tcp.congestion = c.algorithm;
  base.tcp.sack = c.sack;
  TwoHosts hosts(7, base);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  for (Faults& f : hosts.wire.faults) {
    f.drop = c.loss;
    f.reorder = c.loss / 2;
    f.duplicate = c.loss / 4;
    f.corrupt = c.loss / 4;
  }
  TimePoint start = hosts.timers.now();
  TransferResult r = transfer(hosts, client, server, c.bytes, 3600s);
  std::printf("virtual %.3f s, retransmitted %llu bytes, %llu fast retransmits, %llu timeouts, "
              "cwnd %u, srtt %lld us, rto %lld ms\n",
              std::chrono::duration<double>(hosts.timers.now() - start).count(),
              static_cast<unsigned long long>(client->retransmitted_bytes()),
              static_cast<unsigned long long>(hosts.a->stats().tcp_fast_retransmits),
              static_cast<unsigned long long>(client->timeouts()), client->cwnd(),
              static_cast<long long>(client->srtt().count() / 1000),
              static_cast<long long>(client->rto().count() / 1000000));
  EXPECT_TRUE(r.complete) << "received " << r.received << " of " << c.bytes << ", mismatch at "
                          << r.mismatch_at << ", client state " << to_string(client->state());
  if (c.loss > 0) {
    EXPECT_GT(client->retransmitted_bytes(), 0u);
    EXPECT_GT(hosts.a->stats().tcp_fast_retransmits, 0u);
    EXPECT_GT(hosts.b->stats().tcp_bad_checksum + hosts.a->stats().tcp_bad_checksum +
                                hosts.a->stats().rx_malformed_ipv4 + hosts.b->stats().rx_malformed_ipv4,
              0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Loss, TcpLossTransfer,
    ::testing::Values(LossCase{0.0, 100ull << 20, CongestionAlgorithm::NewReno, true},
                      LossCase{0.01, 100ull << 20, CongestionAlgorithm::NewReno, true},
                      LossCase{0.10, 100ull << 20, CongestionAlgorithm::NewReno, true},
                      LossCase{0.01, 16ull << 20, CongestionAlgorithm::NewReno, false},
                      LossCase{0.10, 4ull << 20, CongestionAlgorithm::NewReno, false},
                      LossCase{0.01, 32ull << 20, CongestionAlgorithm::Cubic, true},
                      LossCase{0.10, 4ull << 20, CongestionAlgorithm::Cubic, true}),
    [](const ::testing::TestParamInfo<LossCase>& info) {
      return std::string(info.param.algorithm == CongestionAlgorithm::Cubic ? "Cubic" : "NewReno") +
             (info.param.sack ? "Sack" : "NoSack") + "Loss" +
             std::to_string(static_cast<int>(info.param.loss * 100)) + "pct" +
             std::to_string(info.param.bytes >> 20) + "MiB";
    });

}  // namespace
}  // namespace bypass::inet::test
