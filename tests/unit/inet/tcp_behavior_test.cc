// Flow control, loss recovery, timers and listener limits.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "stack/inet/congestion.h"
#include "stack/inet/wire/icmp.h"
#include "tests/unit/inet/harness.h"

namespace bypass::inet::test {
namespace {

TEST(TcpFlow, WindowScalingAndZeroWindowProbe) {
  InetSettings s;
  s.tcp.rcv_buffer = 64 * 1024;  // small receiver: the sender fills it quickly
  s.tcp.snd_buffer = 512 * 1024;
  TwoHosts hosts(21, s);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  EXPECT_EQ(client->receive_window_shift(), 1);  // 65536 >> 1 fits in 16 bits
  SegmentRecorder recorder(hosts);
  std::vector<SeenSegment>& seen = recorder.segments();
  BufferList data = pattern(0, 300 * 1024);
  size_t queued = client->send(data);
  EXPECT_EQ(queued, 300u * 1024);
  // Nobody reads: the window closes and the sender probes it.
  hosts.run_for(5s);
  EXPECT_EQ(client->peer_window(), 0u);
  // The buffer fills up to the scale granularity (2 bytes with shift 1).
  EXPECT_GE(server->readable_bytes(), 64u * 1024 - 2);
  EXPECT_LE(server->readable_bytes(), 64u * 1024);
  size_t probes = std::count_if(seen.begin(), seen.end(),
                                [](const SeenSegment& x) { return x.from == 0 && x.payload == 1; });
  EXPECT_GE(probes, 2u);
  EXPECT_TRUE(client->established());
  // Zero-window advertisements really are zero in the scaled field.
  bool saw_zero = std::any_of(seen.begin(), seen.end(),
                              [](const SeenSegment& x) { return x.from == 1 && x.header.window == 0; });
  EXPECT_TRUE(saw_zero);
  // Reading reopens the window; everything arrives intact.
  uint64_t received = 0;
  int64_t mismatch = -1;
  hosts.run_until([&] {
    BufferList got = server->read();
    if (!got.empty()) {
      int64_t bad = first_mismatch(got, received);
      if (bad >= 0 && mismatch < 0) mismatch = bad;
      received += got.length();
    }
    return received == 300u * 1024;
  }, 120s);
  EXPECT_EQ(received, 300u * 1024);
  EXPECT_EQ(mismatch, -1);
}

// A backlogged device (its queue full, refused frames held): new data waits in the send buffers,
// and goes out once the backlog cleared, connection by connection in the order they waited.
TEST(TcpFlow, NewDataWaitsWhileTheDeviceIsBacklogged) {
  TwoHosts hosts(58);
  auto [first, first_peer] = connect_pair(hosts, 80);
  auto [second, second_peer] = connect_pair(hosts, 81);
  hosts.run_for(1s);
  SegmentRecorder recorder(hosts);
  std::vector<SeenSegment>& seen = recorder.segments();
  auto data_ports = [&] {
    std::vector<uint16_t> ports;
    for (const SeenSegment& x : seen)
      if (x.from == 0 && x.payload > 0) ports.push_back(x.header.destination_port);
    return ports;
  };
  hosts.dev_a->set_backlogged(true);
  BufferList to_second = pattern(0, 1000), to_first = pattern(0, 1000);
  ASSERT_EQ(second->send(to_second), 1000u);  // the second connection waits first
  ASSERT_EQ(first->send(to_first), 1000u);
  // Data for the held connection: its delayed ACK would queue behind the same backlog, so the
  // held data carries it instead.
  BufferList answer = pattern(0, 100);
  ASSERT_EQ(first_peer->send(answer), 100u);
  hosts.run_for(200ms);
  EXPECT_EQ(first->readable_bytes(), 100u);
  EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [](const SeenSegment& x) { return x.from == 0; }), 0);
  hosts.a->begin_burst();  // still backlogged: nothing moves
  hosts.a->end_burst();
  EXPECT_TRUE(data_ports().empty());
  hosts.dev_a->set_backlogged(false);
  hosts.a->begin_burst();
  hosts.a->end_burst();
  EXPECT_EQ(data_ports(), (std::vector<uint16_t>{81, 80}));
  const SeenSegment& answered = seen.front();  // the peer's 100 bytes
  for (const SeenSegment& x : seen) {
    if (x.from == 0 && x.header.destination_port == 80) {
      EXPECT_EQ(x.header.ack, answered.header.seq + 100u);
    }
  }
  ASSERT_TRUE(hosts.run_until([&] { return first_peer->readable_bytes() == 1000 && second_peer->readable_bytes() == 1000; }, 1s));
  EXPECT_EQ(first_mismatch(first_peer->read(), 0), -1);
  EXPECT_EQ(first_mismatch(second_peer->read(), 0), -1);
}

TEST(TcpFlow, ClosedReceiveWindowStillTakesTheAcknowledgement) {
  // RFC 9293 section 3.10.7.4: with a zero receive window no segment is acceptable, "but special
  // allowance should be made to accept valid ACKs". Here the client's only segments that carry
  // its acknowledgement of the server's data are the ones it pushes into the server's closed
  // window (its window probes): the server must still learn that its data arrived. Dropping them
  // whole leaves the server's send buffer full for good when its application waits for that
  // room before it reads again (an echo server): both sides then retransmit until they give up.
  InetSettings s;
  s.tcp.rcv_buffer = 64 * 1024;
  s.tcp.snd_buffer = 512 * 1024;
  TwoHosts hosts(24, s);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  BufferList up = pattern(0, 300 * 1024);
  ASSERT_EQ(client->send(up), 300u * 1024);
  hosts.run_for(5s);  // the server never reads: its window closes and the client probes it
  ASSERT_EQ(client->peer_window(), 0u);
  // From now on the client's pure ACKs are lost; its probes still get through.
  SegmentRecorder recorder(hosts, [](const SeenSegment& x) { return x.from == 0 && x.payload == 0; });
  BufferList down = pattern(0, 32 * 1024);
  ASSERT_EQ(server->send(down), 32u * 1024);
  size_t delivered = 0;
  hosts.run_until([&] {
    delivered += client->read().length();
    return server->send_space() == s.tcp.snd_buffer;
  }, 300s);
  EXPECT_EQ(delivered, 32u * 1024);
  EXPECT_EQ(server->send_space(), s.tcp.snd_buffer) << "the server never saw its data acknowledged";
}

TEST(TcpFlow, LargeBufferUsesLargeShift) {
  InetSettings s;
  s.tcp.rcv_buffer = 16 << 20;
  TwoHosts hosts(22, s);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  EXPECT_EQ(client->receive_window_shift(), 9);
  EXPECT_EQ(server->send_window_shift(), 9);
  EXPECT_GT(server->peer_window(), 65535u);  // scaled window above the 16-bit field
}

TEST(TcpFlow, NoWindowScalingWhenPeerDoesNotOffer) {
  InetSettings off;
  off.tcp.window_scale = false;
  off.tcp.sack = false;
  off.tcp.timestamps = false;
  TwoHosts hosts(23, off);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  EXPECT_EQ(client->receive_window_shift(), 0);
  EXPECT_EQ(client->send_window_shift(), 0);
  EXPECT_FALSE(client->sack_enabled());
  EXPECT_FALSE(client->timestamps_enabled());
  EXPECT_EQ(client->send_mss(), 1460u);
  TransferResult r = transfer(hosts, client, server, 4 << 20, 600s);
  EXPECT_TRUE(r.complete);
}

TEST(TcpRecovery, AcksStillCountAfterBothSidesTimedOut) {
  // Each side holds all the other sent, but neither learned that its own data arrived: both time
  // out and resend from snd_una_. Their ACKs must still be acceptable to each other. Carrying the
  // rewound sequence number they lie left of the peer's window, get dropped and answered in kind:
  // the two ends trade ACKs without end and the transfer never completes.
  TwoHosts hosts(35);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  bool lose_acks = true;
  uint64_t segments_after = 0;
  constexpr uint64_t kStorm = 5000;
  hosts.wire.tap = [&](int, std::vector<uint8_t>& bytes) {
    TcpFrame frame;
    if (parse_tcp_frame(bytes.data(), bytes.size(), frame) != nullptr) return true;
    const bool carries_data = frame.payload_length() > 0;
    if (lose_acks) return carries_data;  // data gets through, every pure ACK is lost
    return ++segments_after <= kStorm;   // an ACK storm is cut short (and fails below)
  };
  const size_t kEach = 64 * 1024;
  const size_t snd_buffer = client->send_space();
  BufferList up = pattern(0, kEach), down = pattern(0, kEach);
  ASSERT_EQ(client->send(up), kEach);
  ASSERT_EQ(server->send(down), kEach);
  size_t got_up = 0, got_down = 0;
  auto read_both = [&] {
    got_up += server->read().length();
    got_down += client->read().length();
  };
  hosts.run_until([&] { read_both(); return client->timeouts() > 0 && server->timeouts() > 0; }, 10s);
  ASSERT_GT(client->timeouts(), 0u);
  ASSERT_GT(server->timeouts(), 0u);
  lose_acks = false;
  hosts.run_until([&] {
    read_both();
    return client->send_space() == snd_buffer && server->send_space() == snd_buffer;
  }, 60s);
  EXPECT_EQ(got_up, kEach);
  EXPECT_EQ(got_down, kEach);
  EXPECT_EQ(client->send_space(), snd_buffer) << "the client never learned its data arrived";
  EXPECT_EQ(server->send_space(), snd_buffer) << "the server never learned its data arrived";
  EXPECT_LT(segments_after, kStorm) << "the ends traded ACKs without end";
  hosts.wire.tap = nullptr;
}

TEST(TcpRecovery, SackRetransmitsOnlyTheHoles) {
  TwoHosts hosts(31);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  ASSERT_TRUE(client->sack_enabled());
  // Let cwnd grow first so the burst below is one flight.
  TransferResult warm = transfer(hosts, client, server, 4 << 20, 60s);
  ASSERT_TRUE(warm.complete);
  hosts.run_for(1s);
  std::set<uint32_t> dropped;
  uint32_t data_segments = 0;
  SegmentRecorder recorder(hosts, [&](const SeenSegment& x) {
    if (x.from != 0 || x.payload == 0) return false;
    ++data_segments;
    if ((data_segments == 5 || data_segments == 9 || data_segments == 20) &&
        dropped.insert(x.header.seq.raw()).second)
      return true;
    return false;
  });
  std::vector<SeenSegment>& seen = recorder.segments();
  uint64_t before = client->retransmitted_bytes();
  uint64_t timeouts = client->timeouts();
  BufferList burst = pattern(4 << 20, 60 * client->send_mss());
  client->send(burst);
  uint64_t got = 0;
  hosts.run_until([&] {
    got += server->read().length();
    return got == 60u * client->send_mss();
  }, 30s);
  EXPECT_EQ(got, 60u * client->send_mss());
  EXPECT_EQ(client->timeouts(), timeouts);  // recovered without a timeout
  EXPECT_EQ(client->retransmitted_bytes() - before, 3u * client->send_mss());
  std::multiset<uint32_t> sent_seqs;
  for (const SeenSegment& x : seen)
    if (x.from == 0 && x.payload > 0) sent_seqs.insert(x.header.seq.raw());
  for (uint32_t seq : dropped) EXPECT_EQ(sent_seqs.count(seq), 2u);
  size_t resent = 0;
  for (uint32_t seq : std::set<uint32_t>(sent_seqs.begin(), sent_seqs.end()))
    if (sent_seqs.count(seq) > 1) ++resent;
  EXPECT_EQ(resent, 3u);  // nothing but the holes went twice
  bool saw_sack = std::any_of(seen.begin(), seen.end(), [](const SeenSegment& x) {
    return x.from == 1 && x.header.options.sack_count > 0;
  });
  EXPECT_TRUE(saw_sack);
}

// A burst after a warm-up (cwnd is large, the RTT known), as the loss-recovery tests below send.
struct WarmPair {
  explicit WarmPair(uint64_t seed) : hosts(seed) {
    std::tie(client, server) = connect_pair(hosts);
    if (!client || !server) return;
    warm = transfer(hosts, client, server, 4 << 20, 60s).complete;
    hosts.run_for(1s);
  }
  // Sends `segments` full segments and runs until the server has read them all.
  bool burst(uint32_t segments, Duration limit = 30s) {
    const uint64_t total = uint64_t{segments} * client->send_mss();
    BufferList data = pattern(4 << 20, total);
    client->send(data);
    uint64_t got = 0;
    return hosts.run_until([&] {
      got += server->read().length();
      return got == total && client->send_space() == hosts.settings_a.tcp.snd_buffer;
    }, limit);
  }
  TwoHosts hosts;
  std::shared_ptr<TcpConnection> client, server;
  bool warm = false;
};

// RFC 8985 §7: the last two segments of a burst are lost. Nothing follows them to draw SACKs, so
// without a probe only the RTO would find them; the probe (a resend of the last segment) draws
// a SACK, RACK marks the other lost, and both are repaired well before the 200 ms RTO.
TEST(TcpRecovery, TailLossProbeRepairsATailLossBeforeTheRto) {
  WarmPair w(33);
  ASSERT_TRUE(w.warm);
  uint32_t data_segments = 0;
  SegmentRecorder recorder(w.hosts, [&](const SeenSegment& x) {
    return x.from == 0 && x.payload > 0 && (++data_segments == 19 || data_segments == 20);
  });
  const uint64_t timeouts = w.client->timeouts(), probes = w.hosts.a->stats().tcp_loss_probes;
  const TimePoint start = w.hosts.timers.now();
  ASSERT_TRUE(w.burst(20));
  EXPECT_EQ(w.client->timeouts(), timeouts) << "the tail waited for the retransmission timeout";
  EXPECT_EQ(w.hosts.a->stats().tcp_loss_probes - probes, 1u);
  EXPECT_LT(w.hosts.timers.now() - start, 100ms);
}

// RFC 8985 §7.2 with RFC 9293 §3.8.6.3: a receiver need ACK only every second full-sized segment,
// so a flight of one and a half segments that nothing answers (a request whose reply is slow)
// is acknowledged by the peer's delayed-ACK timer, 40 ms on. The probe timeout must wait for it:
// with 2 SRTT (here the 10 ms floor) a needless probe went out first.
TEST(TcpRecovery, NoLossProbeBeforeTheReceiversDelayedAck) {
  TwoHosts hosts(37);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  const uint32_t mss = client->send_mss();
  const auto all_acked = [&] { return client->send_space() == hosts.settings_a.tcp.snd_buffer; };
  // Two full segments, ACKed at once: an RTT sample of the wire's 100 us.
  BufferList warm = pattern(0, 2 * mss);
  client->send(warm);
  ASSERT_TRUE(hosts.run_until(all_acked, 1s));
  const uint64_t probes = hosts.a->stats().tcp_loss_probes, resent = client->retransmitted_bytes();
  const uint64_t delayed_acks = hosts.b->stats().tcp_delayed_acks_sent, pure_acks = hosts.b->stats().tcp_pure_acks_sent;
  BufferList request = pattern(2 * mss, mss + mss / 2);
  client->send(request);
  ASSERT_TRUE(hosts.run_until(all_acked, 1s));
  EXPECT_EQ(hosts.b->stats().tcp_delayed_acks_sent - delayed_acks, 1u) << "the flight was not held by a delayed ACK";
  EXPECT_EQ(hosts.b->stats().tcp_pure_acks_sent - pure_acks, 1u);  // that one ACK, nothing else
  EXPECT_EQ(hosts.a->stats().tcp_loss_probes - probes, 0u) << "a probe went out before the delayed ACK";
  EXPECT_EQ(client->retransmitted_bytes(), resent);
}

// RFC 6675 §5.1 / RFC 2018 §8: a timeout does not erase what the peer SACKed. The first and the
// tenth segment of a burst are lost with every resend until the second RTO (F-RTO's resend after
// the first included); the other eighteen were SACKed, so after the timeouts only the two holes
// go again (go-back-N also resent what follows the tenth while cwnd regrew).
TEST(TcpRecovery, ScoreboardSurvivesTheRetransmissionTimeout) {
  WarmPair w(34);
  ASSERT_TRUE(w.warm);
  std::optional<SeqNumber> first;
  const uint64_t timeouts = w.client->timeouts();
  SegmentRecorder recorder(w.hosts, [&](const SeenSegment& x) {
    if (x.from != 0 || x.payload == 0) return false;
    if (!first) first = x.header.seq;
    const bool hole = x.header.seq == *first || x.header.seq == *first + 9 * w.client->send_mss();
    return hole && w.client->timeouts() < timeouts + 2;  // lost until the second RTO
  });
  std::vector<SeenSegment>& seen = recorder.segments();
  ASSERT_TRUE(w.burst(20));
  ASSERT_EQ(w.client->timeouts(), timeouts + 2);
  std::map<uint32_t, int> sends;
  for (const SeenSegment& x : seen)
    if (x.from == 0 && x.payload > 0) ++sends[x.header.seq.raw()];
  EXPECT_EQ(sends.size(), 20u);
  for (const auto& [seq, count] : sends) {
    const bool hole = seq == *first || seq == *first + 9 * w.client->send_mss();
    EXPECT_EQ(count, hole ? count : 1) << "SACKed segment " << (seq - *first) / w.client->send_mss()
                                       << " sent again";
  }
}

// RFC 5682: the ACKs are only late (the return path's delay jumps above the RTO), no segment is
// lost. The two ACKs after the timeout acknowledge segments that were never resent: the timeout
// was spurious and cwnd and ssthresh are restored.
TEST(TcpRecovery, FrtoUndoesASpuriousTimeout) {
  WarmPair w(36);
  ASSERT_TRUE(w.warm);
  const uint32_t cwnd = w.client->cwnd(), ssthresh = w.client->ssthresh();
  ASSERT_GT(cwnd, 8 * w.client->send_mss());
  const uint64_t timeouts = w.client->timeouts();
  w.hosts.wire.faults[1].delay = 300ms;  // server -> client: every ACK arrives after the RTO
  BufferList data = pattern(4 << 20, 100 * w.client->send_mss());
  w.client->send(data);
  ASSERT_TRUE(w.hosts.run_until([&] { return w.client->timeouts() > timeouts; }, 1s));
  // New data for F-RTO's step 2b (two new segments on the first ACK after the timeout).
  BufferList more = pattern((4 << 20) + 100 * w.client->send_mss(), 100 * w.client->send_mss());
  w.client->send(more);
  ASSERT_TRUE(w.hosts.run_until([&] {
    w.server->read();
    return w.hosts.a->stats().tcp_spurious_timeouts > 0 || w.client->timeouts() > timeouts + 1;
  }, 10s)) << w.client->describe();
  EXPECT_EQ(w.client->timeouts(), timeouts + 1) << w.client->describe();
  EXPECT_EQ(w.hosts.a->stats().tcp_spurious_timeouts, 1u);
  EXPECT_GE(w.client->cwnd(), cwnd) << "the spurious timeout's cwnd of one segment was not undone";
  EXPECT_EQ(w.client->ssthresh(), ssthresh);
}

TEST(TcpRecovery, RtoBacksOffExponentiallyAndGivesUp) {
  InetSettings s;
  s.tcp.rto_max = 3s;
  s.tcp.max_retransmissions = 6;
  TwoHosts hosts(41, s);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  EXPECT_EQ(client->rto(), 200ms);  // the floor: the measured RTT is far smaller
  SegmentRecorder recorder(hosts, [](const SeenSegment&) { return true; });  // black hole
  std::vector<SeenSegment>& seen = recorder.segments();
  BufferList data = pattern(0, 100);
  client->send(data);
  ASSERT_TRUE(hosts.run_until([&] { return client->state() == TcpState::Closed; }, 60s));
  EXPECT_EQ(client->error(), TcpError::TimedOut);
  std::vector<TimePoint> sends;
  for (const SeenSegment& x : seen)
    if (x.from == 0 && x.payload == 100) sends.push_back(x.at);
  ASSERT_EQ(sends.size(), 7u);  // original + 6 retransmissions
  std::vector<Duration> expected{200ms, 400ms, 800ms, 1600ms, 3s, 3s};
  for (size_t i = 1; i < sends.size(); ++i) {
    Duration gap = sends[i] - sends[i - 1];
    EXPECT_GE(gap, expected[i - 1]) << "gap " << i;
    EXPECT_LE(gap, expected[i - 1] + 5ms) << "gap " << i;
  }
}

// A timeout resends what was sent, never more (RFC 6298 §5.4; RFC 5682 §2.1 step 1 resends the
// first unacknowledged segment): with less than one SMSS in flight and more data queued behind a
// peer window smaller than a segment, the resend stops at SND.MAX. Found by the inet stack fuzzer:
// the resend ran on into unsent data past the peer's window without counting it as sent, RACK
// held those octets in flight, and once the rest was acknowledged the connection waited in SACK
// recovery for good with nothing outstanding.
TEST(TcpRecovery, TimeoutResendsOnlyOctetsAlreadySent) {
  InetSettings s;
  s.tcp.rcv_buffer = 1024;  // the server's window is less than one SMSS
  TwoHosts hosts(44, s);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  bool dropped = false;
  SegmentRecorder recorder(hosts, [&](const SeenSegment& x) {
    if (x.from == 0 && x.payload > 0 && !dropped) return dropped = true;  // the first data segment
    return false;
  });
  std::vector<SeenSegment>& seen = recorder.segments();
  constexpr size_t kTotal = 16 << 10;
  BufferList data = pattern(0, kTotal);
  client->send(data);
  BufferList received;
  ASSERT_TRUE(hosts.run_until([&] {
    received.append(server->read());
    return received.length() == kTotal;
  }, 60s)) << received.length() << " of " << kTotal << ": " << client->describe();
  EXPECT_EQ(first_mismatch(received, 0), -1);
  EXPECT_GE(client->timeouts(), 1u);
  SeqNumber sent_to;
  bool any = false;
  for (const SeenSegment& x : seen) {
    if (x.from != 0 || x.payload == 0) continue;
    const SeqNumber end = x.header.seq + static_cast<uint32_t>(x.payload);
    if (any && x.header.seq < sent_to) {
      EXPECT_TRUE(end <= sent_to) << "a resend ran " << end - sent_to << " octets past what had been sent";
    }
    if (!any || end > sent_to) sent_to = end;
    any = true;
  }
}

TEST(TcpRecovery, LostSynAckIsRetransmitted) {
  TwoHosts hosts(43);
  bool dropped = false;
  SegmentRecorder recorder(hosts, [&](const SeenSegment& x) {
    if (x.from == 1 && x.header.has(kTcpSyn) && !dropped) return dropped = true;
    return false;
  });
  auto listener = hosts.b->tcp().listen(80);
  auto client = hosts.a->tcp().connect(ip_of(2), 80);
  std::shared_ptr<TcpConnection> server;
  ASSERT_TRUE(hosts.run_until([&] {
    if (!server) server = listener->accept();
    return server && client->established();
  }, 10s));
  EXPECT_TRUE(dropped);
}

TEST(TcpTimers, DelayedAckWaitsForSecondSegmentOrTimeout) {
  TwoHosts hosts(51);
  auto [client, server] = connect_pair(hosts);
  hosts.run_for(1s);
  SegmentRecorder recorder(hosts);
  std::vector<SeenSegment>& seen = recorder.segments();
  BufferList small = pattern(0, 10);
  client->send(small);
  hosts.run_for(200ms);
  auto acks = [&] {
    std::vector<SeenSegment> out;
    for (auto& x : seen)
      if (x.from == 1 && x.payload == 0) out.push_back(x);
    return out;
  };
  ASSERT_EQ(acks().size(), 1u);
  Duration delay = acks()[0].at - seen[0].at;
  EXPECT_GE(delay, 40ms);  // delayed by the configured 40 ms
  EXPECT_LE(delay, 45ms);
  seen.clear();
  BufferList two = pattern(10, 2 * client->send_mss());
  client->send(two);
  hosts.run_for(10ms);
  ASSERT_GE(acks().size(), 1u);  // two full segments: acknowledged without waiting
  EXPECT_LT(acks()[0].at - seen[0].at, 1ms);
}

// RFC 9293 §3.8.6.3 (SHLD-19): "at least every second full-sized segment or 2*RMSS bytes of new
// data". Short segments (an application writing less than an MSS at a time, Nagle off) reach
// 2*RMSS after a few; the ACK goes out then, not when the delayed-ACK timer fires.
TEST(TcpTimers, DelayedAckAcknowledgesEveryTwoSegmentsWorthOfShortSegments) {
  TwoHosts hosts(57);
  auto [client, server] = connect_pair(hosts);
  client->set_nagle(false);
  hosts.run_for(1s);
  SegmentRecorder recorder(hosts);
  std::vector<SeenSegment>& seen = recorder.segments();
  const size_t piece = client->send_mss() * 6 / 10;  // 0.6 MSS: the fourth piece passes 2 MSS
  uint64_t offset = 0;
  std::vector<TimePoint> sent_at;
  for (int i = 0; i < 4; ++i) {
    BufferList data = pattern(offset, piece);
    offset += piece;
    ASSERT_EQ(client->send(data), piece);
    hosts.run_for(1ms);
  }
  hosts.run_for(5ms);  // well before the 40 ms delayed-ACK timer
  std::vector<SeenSegment> data_segments, acks;
  for (const SeenSegment& x : seen) (x.from == 0 ? data_segments : acks).push_back(x);
  ASSERT_EQ(data_segments.size(), 4u);  // Nagle off: each piece went out at once
  ASSERT_EQ(acks.size(), 1u);           // 1.8 MSS waited, 2.4 MSS did not
  EXPECT_EQ(acks[0].header.ack, data_segments[3].header.seq + static_cast<uint32_t>(piece));
  EXPECT_LT(acks[0].at - data_segments[3].at, 1ms);
}

TEST(TcpTimers, NagleHoldsSmallSegmentsWhileUnacked) {
  InetSettings s;
  s.tcp.nagle = true;
  TwoHosts hosts(52, s);
  auto [client, server] = connect_pair(hosts);
  hosts.run_for(1s);
  SegmentRecorder recorder(hosts);
  std::vector<SeenSegment>& seen = recorder.segments();
  for (int i = 0; i < 5; ++i) {
    BufferList b = pattern(i * 10, 10);
    client->send(b);
  }
  auto data_segments = [&] {
    return std::count_if(seen.begin(), seen.end(), [](auto& x) { return x.from == 0 && x.payload > 0; });
  };
  EXPECT_EQ(data_segments(), 1);  // the rest wait for the ACK (RFC 9293 §3.7.4)
  hosts.run_until([&] { return server->readable_bytes() == 50; }, 1s);
  EXPECT_EQ(server->readable_bytes(), 50u);
  EXPECT_EQ(data_segments(), 2);  // coalesced into one
}

// The socket's TCP_NODELAY: each connection has its own Nagle switch, whatever tcp.nagle says.
TEST(TcpTimers, NagleSwitchIsPerConnection) {
  InetSettings s;
  s.tcp.nagle = true;
  TwoHosts hosts(54, s);
  auto [held, held_peer] = connect_pair(hosts, 80);
  auto [nodelay, nodelay_peer] = connect_pair(hosts, 81);
  ASSERT_TRUE(held->nagle());
  nodelay->set_nagle(false);
  hosts.run_for(1s);
  SegmentRecorder recorder(hosts);
  std::vector<SeenSegment>& seen = recorder.segments();
  for (int i = 0; i < 5; ++i) {
    BufferList a = pattern(i * 10, 10);
    held->send(a);
    BufferList b = pattern(i * 10, 10);
    nodelay->send(b);
  }
  auto data_segments_to = [&](uint16_t port) {
    return std::count_if(seen.begin(), seen.end(),
                         [port](auto& x) { return x.from == 0 && x.payload > 0 && x.header.destination_port == port; });
  };
  EXPECT_EQ(data_segments_to(80), 1);  // Nagle holds the rest until the ACK (RFC 9293 §3.7.4)
  EXPECT_EQ(data_segments_to(81), 5);  // no delay: each small write goes out at once
  hosts.run_until([&] { return held_peer->readable_bytes() == 50 && nodelay_peer->readable_bytes() == 50; }, 1s);
  EXPECT_EQ(held_peer->readable_bytes(), 50u);
  EXPECT_EQ(nodelay_peer->readable_bytes(), 50u);
}

TEST(TcpTimers, TurningNagleOffSendsHeldData) {
  InetSettings s;
  s.tcp.nagle = true;
  s.tcp.delayed_ack = true;
  s.tcp.delayed_ack_timeout = 200ms;  // the first segment's ACK stays away long enough to look
  TwoHosts hosts(55, s);
  auto [client, server] = connect_pair(hosts);
  hosts.run_for(1s);
  SegmentRecorder recorder(hosts);
  std::vector<SeenSegment>& seen = recorder.segments();
  for (int i = 0; i < 3; ++i) {
    BufferList b = pattern(i * 10, 10);
    client->send(b);
  }
  auto data_segments = [&] {
    return std::count_if(seen.begin(), seen.end(), [](auto& x) { return x.from == 0 && x.payload > 0; });
  };
  hosts.run_for(10ms);
  EXPECT_EQ(data_segments(), 1);
  client->set_nagle(false);
  EXPECT_EQ(data_segments(), 2);  // the 20 held bytes leave in one segment, without waiting
  hosts.run_for(10ms);
  EXPECT_EQ(server->readable_bytes(), 30u);
}

TEST(TcpTimers, KeepaliveDetectsDeadPeer) {
  InetSettings s;
  s.tcp.keepalive = true;
  s.tcp.keepalive_idle = 10s;
  s.tcp.keepalive_interval = 1s;
  s.tcp.keepalive_probes = 3;
  TwoHosts hosts(53, s);
  auto [client, server] = connect_pair(hosts);
  // With the peer alive, probes are answered and the connection stays up.
  hosts.run_for(35s);
  EXPECT_TRUE(client->established());
  EXPECT_TRUE(server->established());
  hosts.wire.cut = true;
  ASSERT_TRUE(hosts.run_until([&] { return client->state() == TcpState::Closed; }, 30s));
  EXPECT_EQ(client->error(), TcpError::TimedOut);
}

TEST(TcpListen, SynBacklogOverflowUsesCookies) {
  InetSettings s;
  s.tcp.syn_backlog = 2;
  TwoHosts hosts(61, s);
  hosts.a->arp().learn(ip_of(2), mac_of(2));
  hosts.b->arp().learn(ip_of(1), mac_of(1));
  auto listener = hosts.b->tcp().listen(80);
  std::vector<std::shared_ptr<TcpConnection>> clients;
  for (int i = 0; i < 6; ++i) clients.push_back(hosts.a->tcp().connect(ip_of(2), 80));
  std::vector<std::shared_ptr<TcpConnection>> servers;
  ASSERT_TRUE(hosts.run_until([&] {
    while (auto c = listener->accept()) servers.push_back(c);
    return servers.size() == 6 &&
           std::all_of(clients.begin(), clients.end(), [](auto& c) { return c->established(); });
  }, 5s));
  EXPECT_EQ(hosts.b->stats().tcp_syn_cookies_sent, 4u);
  EXPECT_EQ(hosts.b->stats().tcp_syn_cookies_accepted, 4u);
  // Cookie connections carry data both ways (no window scaling: they fall back to 64 KiB).
  for (size_t i = 0; i < clients.size(); ++i) {
    auto server = *std::find_if(servers.begin(), servers.end(), [&](auto& c) {
      return c->tuple().remote_port == clients[i]->tuple().local_port;
    });
    TransferResult r = transfer(hosts, clients[i], server, 256 * 1024, 60s);
    EXPECT_TRUE(r.complete) << i;
  }
}

TEST(TcpListen, SynBacklogOverflowWithoutCookiesDrops) {
  InetSettings s;
  s.tcp.syn_backlog = 2;
  s.tcp.syn_cookies = false;
  TwoHosts hosts(62, s);
  hosts.a->arp().learn(ip_of(2), mac_of(2));
  hosts.b->arp().learn(ip_of(1), mac_of(1));
  auto listener = hosts.b->tcp().listen(80);
  std::vector<std::shared_ptr<TcpConnection>> clients;
  for (int i = 0; i < 5; ++i) clients.push_back(hosts.a->tcp().connect(ip_of(2), 80));
  hosts.run_for(100ms);
  EXPECT_EQ(hosts.b->stats().tcp_syn_dropped_backlog, 3u);
  EXPECT_EQ(listener->acceptable(), 2u);
  // The dropped clients retry their SYN and get in once the backlog drains.
  ASSERT_TRUE(hosts.run_until([&] {
    return std::all_of(clients.begin(), clients.end(), [](auto& c) { return c->established(); });
  }, 10s));
}

TEST(TcpListen, ForgedCookieAckIsReset) {
  TwoHosts hosts(63);
  auto listener = hosts.b->tcp().listen(80);
  hosts.b->arp().learn(ip_of(1), mac_of(1));
  SegmentRecorder recorder(hosts);
  std::vector<SeenSegment>& seen = recorder.segments();
  // A bare ACK to the listener that does not return a valid cookie (RFC 4987 §3.6 check fails):
  // answered with <SEQ=SEG.ACK><CTL=RST> (RFC 9293 §3.10.7.2), no connection created.
  TcpHeader ack;
  ack.source_port = 40000;
  ack.destination_port = 80;
  ack.seq = 1000;
  ack.ack = 0x12345678;
  ack.flags = kTcpAck;
  ack.window = 1000;
  hosts.b->receive(craft_tcp(ip_of(1), mac_of(1), ip_of(2), mac_of(2), ack, "data"));
  hosts.run_for(10ms);
  EXPECT_EQ(hosts.b->stats().tcp_syn_cookies_accepted, 0u);
  EXPECT_EQ(hosts.b->tcp().connection_count(), 0u);
  EXPECT_EQ(listener->acceptable(), 0u);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0].header.has(kTcpRst));
  EXPECT_EQ(seen[0].header.seq, 0x12345678u);
}

// The accept benchmark's stall: its client cycles through the ephemeral ports faster than the
// server's TIME-WAIT (2 MSL) ends, and a SYN for a tuple in TIME-WAIT was answered with a challenge
// ACK, so every reused port waited for a reset and a retransmitted SYN (1 s) or for TIME-WAIT.
// RFC 1122 §4.2.2.13: a SYN beyond the old incarnation's sequence space reopens at once.
TEST(TcpListen, NewSynReopensTimeWaitAndOldDuplicateDoesNot) {
  InetSettings s;
  s.tcp.msl = 30s;
  TwoHosts hosts(65, s);
  auto listener = hosts.b->tcp().listen(80);
  auto client = hosts.a->tcp().connect(ip_of(2), 80, 40000);
  std::shared_ptr<TcpConnection> server;
  ASSERT_TRUE(hosts.run_until([&] {
    if (!server) server = listener->accept();
    return server && client->established();
  }, 5s));
  const SeqNumber client_first_iss = client->initial_send_sequence();
  server->close();  // the server closes first: it holds the TIME-WAIT
  ASSERT_TRUE(hosts.run_until([&] { return client->end_of_stream(); }, 5s));
  client->close();
  ASSERT_TRUE(hosts.run_until([&] { return client->state() == TcpState::Closed; }, 5s));
  ASSERT_EQ(server->state(), TcpState::TimeWait);
  const SeqNumber old_server_iss = server->initial_send_sequence();

  // An old duplicate of the first SYN: not beyond what the old incarnation received. (Its
  // challenge ACK is kept from the client, whose reset would end the TIME-WAIT: RFC 5961 §4.)
  hosts.wire.cut = true;
  TcpHeader syn;
  syn.source_port = 40000;
  syn.destination_port = 80;
  syn.seq = client_first_iss;
  syn.flags = kTcpSyn;
  syn.window = 1000;
  hosts.b->receive(craft_tcp(ip_of(1), mac_of(1), ip_of(2), mac_of(2), syn));
  hosts.run_for(10ms);
  EXPECT_EQ(server->state(), TcpState::TimeWait);
  EXPECT_EQ(hosts.b->stats().tcp_time_wait_reopened, 0u);
  EXPECT_EQ(listener->acceptable(), 0u);
  EXPECT_EQ(hosts.b->tcp().connection_count(), 1u);
  hosts.wire.cut = false;

  // A new connection on the same tuple, well inside 2 MSL.
  hosts.run_for(100ms);
  const TimePoint reconnect_at = hosts.timers.now();
  auto again = hosts.a->tcp().connect(ip_of(2), 80, 40000);
  ASSERT_TRUE(again);
  std::shared_ptr<TcpConnection> server_again;
  ASSERT_TRUE(hosts.run_until([&] {
    if (!server_again) server_again = listener->accept();
    return server_again && again->established();
  }, 5s));
  EXPECT_LT(hosts.timers.now() - reconnect_at, 10ms);  // no retransmission, no waiting out 2 MSL
  EXPECT_EQ(hosts.b->stats().tcp_time_wait_reopened, 1u);
  EXPECT_EQ(server->state(), TcpState::Closed);
  EXPECT_EQ(again->retransmitted_segments(), 0u);
  // The new incarnation's sequence space starts beyond the old one's.
  EXPECT_TRUE(server_again->initial_send_sequence() > old_server_iss + 65535u);
  TransferResult r = transfer(hosts, again, server_again, 64 * 1024, 10s);
  EXPECT_TRUE(r.complete);
}

TEST(TcpListen, EphemeralPortFilterIsHonoured) {
  TwoHosts hosts(64);
  hosts.a->tcp().set_port_filter([](const FourTuple& t) { return t.local_port % 4 == 1; });
  auto listener = hosts.b->tcp().listen(80);
  for (int i = 0; i < 20; ++i) {
    auto c = hosts.a->tcp().connect(ip_of(2), 80);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->tuple().local_port % 4, 1);
  }
}

TEST(TcpPath, FragmentationNeededLowersMss) {
  TwoHosts hosts(71);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  uint32_t before = client->send_mss();
  SegmentRecorder recorder(hosts);
  std::vector<SeenSegment>& seen = recorder.segments();
  BufferList data = pattern(0, 20000);
  client->send(data);
  ASSERT_FALSE(seen.empty());
  const SeenSegment& first = seen[0];
  // ICMP type 3 code 4 from the peer quoting our segment, next-hop MTU 1200 (RFC 1191).
  // The quote: the IPv4 header and the first 8 bytes of the segment (ports and sequence number).
  std::vector<uint8_t> quoted(Ipv4Header::kMinLength + tcp_field::Seq::kEnd, 0);
  Ipv4Header inner;
  inner.total_length = 1500;
  inner.protocol = static_cast<uint8_t>(IpProtocol::Tcp);
  inner.source = ip_of(1);
  inner.destination = ip_of(2);
  inner.emit(quoted.data(), true);
  const TcpView quoted_tcp(quoted.data() + Ipv4Header::kMinLength, tcp_field::Seq::kEnd);
  quoted_tcp.set_src_port(first.header.source_port);
  quoted_tcp.set_dst_port(first.header.destination_port);
  quoted_tcp.set_seq_number(first.header.seq);
  BufferList body;
  body.append_copy(quoted.data(), quoted.size());
  constexpr size_t kIcmpAt = EthernetHeader::kLength + Ipv4Header::kMinLength;
  std::vector<uint8_t> frame(kIcmpAt + IcmpHeader::kLength + quoted.size());
  EthernetHeader{mac_of(1), mac_of(2), static_cast<uint16_t>(EtherType::Ipv4)}.emit(frame.data());
  Ipv4Header ip;
  ip.total_length = static_cast<uint16_t>(Ipv4Header::kMinLength + IcmpHeader::kLength + quoted.size());
  ip.protocol = static_cast<uint8_t>(IpProtocol::Icmp);
  ip.source = ip_of(2);
  ip.destination = ip_of(1);
  ip.emit(frame.data() + EthernetHeader::kLength, true);
  IcmpHeader{IcmpHeader::kDestinationUnreachable, IcmpHeader::kFragmentationNeeded, 0, 1200}
      .emit(frame.data() + kIcmpAt, body);
  std::memcpy(frame.data() + kIcmpAt + IcmpHeader::kLength, quoted.data(), quoted.size());
  Packet p;
  p.data.append_copy(frame.data(), frame.size());
  hosts.a->receive(std::move(p));
  EXPECT_EQ(client->send_mss(), 1200u - 40 - 12);
  EXPECT_LT(client->send_mss(), before);
  uint64_t got = 0;
  hosts.run_until([&] { got += server->read().length(); return got == 20000; });
  EXPECT_EQ(got, 20000u);
}

TEST(TcpOffload, ChecksumOffloadLeavesPseudoHeaderSum) {
  TwoHosts hosts(81);
  hosts.dev_a->caps_.tx_ipv4_checksum = true;
  hosts.dev_a->caps_.tx_tcp_checksum = true;
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  TransferResult r = transfer(hosts, client, server, 2 << 20, 60s);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(hosts.b->stats().tcp_bad_checksum, 0u);
  EXPECT_EQ(hosts.b->stats().rx_malformed_ipv4, 0u);
}

TEST(Congestion, CubicReducesByBetaAndRegrowsTowardWmax) {
  Cubic cubic(1000);
  TimePoint now{0};
  for (int i = 0; i < 200; ++i) cubic.on_ack(1000, now, 10ms);  // slow start
  uint32_t before = cubic.cwnd();
  cubic.on_congestion_event(before, now);
  EXPECT_NEAR(cubic.cwnd(), before * 0.7, 1000);  // RFC 9438 §4.6 beta 0.7
  EXPECT_DOUBLE_EQ(cubic.w_max_segments(), before / 1000.0);
  // Grow for a while with one window of ACKs per 10 ms RTT: concave approach to W_max.
  uint32_t last = cubic.cwnd();
  for (int rtt = 0; rtt < 300; ++rtt) {
    now += 10ms;
    uint32_t window = cubic.cwnd();
    for (uint32_t acked = 0; acked < window; acked += 1000) cubic.on_ack(1000, now, 10ms);
    EXPECT_GE(cubic.cwnd(), last);
    last = cubic.cwnd();
  }
  EXPECT_GT(cubic.cwnd(), before);  // past W_max into the convex region
  cubic.on_timeout(cubic.cwnd(), now);
  EXPECT_EQ(cubic.cwnd(), 1000u);
}

// A receiver that coalesces (GRO) acknowledges up to 64 KiB at once: slow start counts all of it
// (as Linux does), not RFC 3465's 2*SMSS per ACK, or it would grow by 2 segments per 44.
TEST(Congestion, SlowStartCountsAStretchAckOfACoalescedUnit) {
  NewReno reno(1460);
  const uint32_t initial = reno.cwnd();
  reno.on_ack(44 * 1460, TimePoint{0}, 1ms);
  EXPECT_EQ(reno.cwnd(), initial + 44 * 1460);
  reno.on_ack(200 * 1460, TimePoint{0}, 1ms);  // beyond any coalesced unit: 64 KiB at most
  EXPECT_EQ(reno.cwnd(), initial + 44 * 1460 + 64 * 1024);
}

TEST(Congestion, NewRenoHalvesAndGrowsLinearly) {
  NewReno reno(1000);
  EXPECT_EQ(reno.cwnd(), 10000u);  // RFC 6928 initial window
  reno.on_congestion_event(40000, TimePoint{0});
  EXPECT_EQ(reno.ssthresh(), 20000u);
  EXPECT_EQ(reno.cwnd(), 20000u);
  for (int i = 0; i < 20; ++i) reno.on_ack(1000, TimePoint{0}, 1ms);  // one window of ACKs
  EXPECT_EQ(reno.cwnd(), 21000u);
  reno.on_timeout(21000, TimePoint{0});
  EXPECT_EQ(reno.cwnd(), 1000u);
  EXPECT_EQ(reno.ssthresh(), 10500u);
}

}  // namespace
}  // namespace bypass::inet::test
