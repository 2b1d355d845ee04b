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

// What the wire lets an RTT sample be. Samples come from RFC 7323 timestamp echoes on a 1 ms
// clock, so each is the segment's true round trip give or take one tick; the true round trip is
// at least both one-way delays and at most that plus a reordering delay each way plus the
// receiver's delayed-ACK timeout.
struct RttBounds {
  Duration min_sample, max_sample;
};
RttBounds rtt_bounds(const Faults& out, const Faults& back, const TcpSettings& tcp) {
  constexpr Duration kTick = 1ms;
  const Duration least = out.delay + back.delay;
  const Duration most = least + out.reorder_extra + back.reorder_extra + tcp.delayed_ack_timeout;
  return {least > kTick ? least - kTick : Duration::zero(), most + kTick};
}

// SRTT is a running mean of samples (RFC 6298 §2.3), so it lies within the samples' bounds; RTO is
// max(rto_min, SRTT + 4 RTTVAR) with RTTVAR at most the largest sample, doubled by each timeout
// not yet followed by a fresh sample (§5.5); a transfer's end sees at most three such.
void expect_rtt_and_rto_within(const TcpConnection& c, const RttBounds& b, const TcpSettings& tcp) {
  EXPECT_GE(c.srtt(), b.min_sample) << "SRTT below what the wire allows";
  EXPECT_LE(c.srtt(), b.max_sample) << "SRTT above what the wire allows";
  const Duration rto_base = std::max<Duration>(tcp.rto_min, 5 * b.max_sample);
  EXPECT_GE(c.rto(), tcp.rto_min);
  EXPECT_LE(c.rto(), 8 * rto_base) << "RTO inflated beyond three backoffs of what the samples allow";
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
  const uint64_t frames_before = hosts.wire.frames[0] + hosts.wire.frames[1];
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
  EXPECT_EQ(r.received, c.bytes);
  EXPECT_EQ(r.mismatch_at, -1) << "the bytes differ from the pattern sent";
  expect_rtt_and_rto_within(*client, rtt_bounds(hosts.wire.faults[0], hosts.wire.faults[1], base.tcp), base.tcp);
  // A retransmission timeout needs a frame lost (dropped or corrupted, data or ACK): never more
  // timeouts than that. The wire's losses are random, so a 1.5x margin over their expectation.
  const uint64_t frames = hosts.wire.frames[0] + hosts.wire.frames[1] - frames_before;
  const double lost = (c.loss + c.loss / 4) * static_cast<double>(frames);
  EXPECT_LE(static_cast<double>(client->timeouts()), 1.5 * lost)
      << frames << " frames on the wire, about " << lost << " lost";
  if (c.loss > 0) {
    EXPECT_GT(client->retransmitted_bytes(), 0u);
    EXPECT_GT(hosts.a->stats().tcp_fast_retransmits, 0u);
    EXPECT_GT(hosts.b->stats().tcp_bad_checksum + hosts.a->stats().tcp_bad_checksum +
                                hosts.a->stats().rx_malformed_ipv4 + hosts.b->stats().rx_malformed_ipv4,
              0u);
  }
}

// On a wire whose round trip is well above the timestamp clock's tick, SRTT must find it.
TEST(TcpTransfer, SrttTracksTheWireDelay) {
  TwoHosts hosts(3);
  for (Faults& f : hosts.wire.faults) f.delay = 5ms;
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  TransferResult r = transfer(hosts, client, server, 8ull << 20, 600s);
  ASSERT_TRUE(r.complete) << "received " << r.received << ", mismatch at " << r.mismatch_at;
  const InetSettings defaults;
  const RttBounds b = rtt_bounds(hosts.wire.faults[0], hosts.wire.faults[1], defaults.tcp);
  expect_rtt_and_rto_within(*client, b, defaults.tcp);
  EXPECT_EQ(client->timeouts(), 0u);
  std::printf("wire round trip 10 ms: srtt %lld us, rto %lld ms\n", static_cast<long long>(client->srtt().count() / 1000),
              static_cast<long long>(client->rto().count() / 1000000));
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
