// Loss recovery in virtual time: 100 MiB over the seeded faulty wire at 1 %, 5 % and 10 % random
// loss. Prints timeouts, retransmitted bytes and goodput per loss rate (the table issue 13 asks
// for) and bounds the timeouts, which the go-back-N recovery of before RFC 6675 §5.1 / RFC 8985
// could not meet (7,121 timeouts at 10 % loss).
#include <cstdio>

#include "stack/inet/tcp_rack.h"
#include "tests/unit/inet/harness.h"

namespace bypass::inet::test {
namespace {

struct LossRow {
  double loss = 0;
  bool complete = false;
  uint64_t timeouts = 0, retransmitted_bytes = 0, fast_retransmits = 0;
  double seconds = 0;
  double goodput_mbit() const { return seconds > 0 ? (100.0 * 8 * (1 << 20)) / seconds / 1e6 : 0; }
};

// The fault mix of TcpLossTransfer (tcp_transfer_test.cc) so the numbers compare with the issue's:
// drop p, reorder p/2, duplicate p/4 and corrupt p/4, in both directions, seed 7.
LossRow move_100_mib(double loss) {
  TwoHosts hosts(7);
  auto [client, server] = connect_pair(hosts);
  LossRow row;
  row.loss = loss;
  if (!client || !server) return row;
  for (Faults& f : hosts.wire.faults) {
    f.drop = loss;
    f.reorder = loss / 2;
    f.duplicate = loss / 4;
    f.corrupt = loss / 4;
  }
  const TimePoint start = hosts.timers.now();
  const TransferResult r = transfer(hosts, client, server, 100ull << 20, 7200s);
  row.complete = r.complete && r.mismatch_at == -1;
  row.seconds = std::chrono::duration<double>(hosts.timers.now() - start).count();
  row.timeouts = client->timeouts();
  row.retransmitted_bytes = client->retransmitted_bytes();
  row.fast_retransmits = hosts.a->stats().tcp_fast_retransmits;
  return row;
}

TEST(TcpLossTable, HundredMebibytesAtOneFiveAndTenPercentLoss) {
  std::printf("%6s %9s %16s %16s %12s %14s\n", "loss", "timeouts", "retransmitted B", "fast retransmits",
              "virtual s", "goodput Mbit/s");
  for (double loss : {0.01, 0.05, 0.10}) {
    const LossRow row = move_100_mib(loss);
    std::printf("%5.0f%% %9llu %16llu %16llu %12.3f %14.1f\n", loss * 100,
                static_cast<unsigned long long>(row.timeouts),
                static_cast<unsigned long long>(row.retransmitted_bytes),
                static_cast<unsigned long long>(row.fast_retransmits), row.seconds, row.goodput_mbit());
    EXPECT_TRUE(row.complete) << "100 MiB at " << loss * 100 << " % loss did not arrive intact";
  }
}

// Issue 13's goal: timeouts at 10 % loss under a tenth of the 7,121 that go-back-N took. The run is
// seeded, so the count is exact; the bound leaves room for unrelated changes to shift it.
TEST(TcpLossTable, TimeoutsAtTenPercentLossUnderATenthOfGoBackN) {
  const LossRow row = move_100_mib(0.10);
  ASSERT_TRUE(row.complete);
  EXPECT_LT(row.timeouts, 712u) << "retransmission timeouts moving 100 MiB at 10 % loss";
  // Recovery must not buy fewer timeouts with needless retransmissions: the wire loses about
  // 12.5 % of the data frames (drop + corrupt), so well under a third of the data goes twice.
  EXPECT_LT(row.retransmitted_bytes, (100ull << 20) / 3);
}

// ---- RACK (RFC 8985 §6.2) on its own: the record of sent segments, one ACK, one rule ----

TimePoint at_us(int64_t us) { return TimePoint{std::chrono::microseconds(us)}; }

// Three segments sent 100 us apart; the third is SACKed 1 ms after it left. The first two were
// overtaken, yet count as lost only once RACK.rtt plus the reordering window (min RTT / 4) has
// passed since each was sent.
TEST(Rack, MarksLostOnlyAfterTheReorderingWindow) {
  RackTlp rack;
  SackScoreboard scoreboard;
  rack.on_transmit(1000, 2000, at_us(0));
  rack.on_transmit(2000, 3000, at_us(100));
  rack.on_transmit(3000, 4000, at_us(200));
  TcpOptions sack;
  sack.sack_blocks[0] = {3000, 4000};
  sack.sack_count = 1;
  ASSERT_TRUE(scoreboard.update(sack, 1000, 4000));
  rack.on_ack(1000, scoreboard, at_us(1200));  // RACK.rtt = 1000 us, min RTT 1000 us: window 250 us
  EXPECT_EQ(rack.detect_loss(at_us(1200), false), std::chrono::microseconds(150))
      << "the second segment may still arrive until 100 + 1000 + 250 us";
  EXPECT_FALSE(rack.has_lost()) << "the first segment waits out its window too (until 1250 us)";
  EXPECT_EQ(rack.detect_loss(at_us(1250), false), std::chrono::microseconds(100));
  ASSERT_TRUE(rack.has_lost());
  EXPECT_EQ(rack.first_lost()->start, 1000u);
  rack.detect_loss(at_us(1350), false);
  EXPECT_EQ(rack.pipe(), 0u) << "neither lost nor SACKed octets are in flight";
}

// A retransmission that is lost again: a segment sent after it is delivered, so RACK marks the
// retransmission lost as well (DupThresh counting cannot: it marks each segment once).
TEST(Rack, FindsALostRetransmission) {
  RackTlp rack;
  SackScoreboard scoreboard;
  rack.on_transmit(1000, 2000, at_us(0));
  rack.on_transmit(2000, 3000, at_us(10));
  rack.mark_lost(1000);
  rack.on_transmit(1000, 2000, at_us(5000));  // the retransmission
  EXPECT_FALSE(rack.has_lost());
  rack.on_transmit(3000, 4000, at_us(5010));  // new data after it
  TcpOptions sack;
  sack.sack_blocks[0] = {2000, 4000};
  sack.sack_count = 1;
  scoreboard.update(sack, 1000, 4000);
  rack.on_ack(1000, scoreboard, at_us(6000));
  rack.detect_loss(at_us(7000), true);
  ASSERT_TRUE(rack.has_lost());
  EXPECT_EQ(rack.first_lost()->start, 1000u);
  EXPECT_TRUE(rack.first_lost()->retransmitted);
}

}  // namespace
}  // namespace bypass::inet::test
