// TCP state machine, RST/SYN/ACK validation (RFC 5961), TIME-WAIT, PAWS, options, timers.
#include <algorithm>
#include <map>

#include "tests/unit/inet/harness.h"
#include "tests/unit/inet/tcp_state_builder.h"

namespace bypass::inet::test {
namespace {

// Records every state a connection passes through while the hosts run.
class StateLog {
 public:
  void watch(const std::shared_ptr<TcpConnection>& c) { watched_.push_back({c, {c->state()}}); }
  void sample() {
    for (auto& [c, states] : watched_)
      if (states.back() != c->state()) states.push_back(c->state());
  }
  const std::vector<TcpState>& of(size_t i) const { return watched_.at(i).second; }

 private:
  std::vector<std::pair<std::shared_ptr<TcpConnection>, std::vector<TcpState>>> watched_;
};

bool run_logged(TwoHosts& hosts, StateLog& log, const std::function<bool()>& done,
                Duration limit = 120s) {
  return hosts.run_until([&] {
    log.sample();
    return done();
  }, limit);
}

// A frame from b (10.0.0.2) to a (10.0.0.1) carrying `h` and `payload`, checksummed.
Packet craft_to_a(const TcpHeader& h, const std::string& payload = {}) {
  return craft_tcp(ip_of(2), mac_of(2), ip_of(1), mac_of(1), h, payload);
}

InetSettings quick_settings() {
  InetSettings s;
  s.tcp.msl = 1s;
  return s;
}

TEST(TcpStates, ActiveAndPassiveOpen) {
  TwoHosts hosts;
  auto listener = hosts.b->tcp().listen(80);
  auto client = hosts.a->tcp().connect(ip_of(2), 80);
  ASSERT_TRUE(client);
  EXPECT_EQ(client->state(), TcpState::SynSent);
  StateLog log;
  log.watch(client);
  std::shared_ptr<TcpConnection> server;
  ASSERT_TRUE(run_logged(hosts, log, [&] {
    if (!server) server = listener->accept();
    return server && client->established();
  }));
  EXPECT_EQ(log.of(0), (std::vector<TcpState>{TcpState::SynSent, TcpState::Established}));
  EXPECT_EQ(server->state(), TcpState::Established);
  EXPECT_EQ(listener->half_open(), 0u);
  // A second listen on the same port is refused.
  EXPECT_FALSE(hosts.b->tcp().listen(80));
}

TEST(TcpStates, DescribeShowsSequenceStateRelativeToIss) {
  TwoHosts hosts;
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  BufferList data;
  data.append_copy(std::string(5000, 'x'));
  ASSERT_EQ(client->send(data), 5000u);
  client->shutdown_write();
  const std::string line = client->describe();
  // The SYN took sequence number 1; the data follows, then the FIN.
  EXPECT_NE(line.find("FIN-WAIT-1"), std::string::npos) << line;
  EXPECT_NE(line.find(" snd_una=1 "), std::string::npos) << line;
  EXPECT_NE(line.find(" send_end=5001 "), std::string::npos) << line;
  EXPECT_NE(line.find(" fin_queued=1 "), std::string::npos) << line;
  EXPECT_EQ(line.rfind(ip_of(1).to_string() + ":", 0), 0u) << line;
  size_t visited = 0;
  hosts.a->tcp().for_each_connection([&](const TcpConnection& c) {
    ++visited;
    EXPECT_EQ(&c, client.get());
  });
  EXPECT_EQ(visited, 1u);
  ASSERT_TRUE(hosts.run_until(
      [&] { return server->readable_bytes() == 5000 && client->state() == TcpState::FinWait2; }));
  EXPECT_NE(client->describe().find(" snd_una=5002 "), std::string::npos) << client->describe();
  EXPECT_NE(server->describe().find(" rcv_nxt=5002 readable=5000 "), std::string::npos) << server->describe();
}

TEST(TcpStates, GracefulCloseThroughTimeWait) {
  TwoHosts hosts(3, quick_settings());
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  StateLog log;
  log.watch(client);
  log.watch(server);
  client->close();
  EXPECT_EQ(client->state(), TcpState::FinWait1);
  ASSERT_TRUE(run_logged(hosts, log, [&] { return server->state() == TcpState::CloseWait &&
                                                  client->state() == TcpState::FinWait2; }));
  EXPECT_TRUE(server->end_of_stream());
  server->close();
  ASSERT_TRUE(run_logged(hosts, log, [&] { return server->state() == TcpState::Closed; }));
  EXPECT_EQ(client->state(), TcpState::TimeWait);
  EXPECT_EQ(log.of(0), (std::vector<TcpState>{TcpState::Established, TcpState::FinWait1,
                                              TcpState::FinWait2, TcpState::TimeWait}));
  EXPECT_EQ(log.of(1), (std::vector<TcpState>{TcpState::Established, TcpState::CloseWait,
                                              TcpState::LastAck, TcpState::Closed}));
  // TIME-WAIT lasts 2 * MSL.
  TimePoint entered = hosts.timers.now();
  ASSERT_TRUE(run_logged(hosts, log, [&] { return client->state() == TcpState::Closed; }));
  EXPECT_GE(hosts.timers.now() - entered, 2 * 1s - 10ms);
  EXPECT_EQ(client->error(), TcpError::None);
  EXPECT_EQ(hosts.a->tcp().connection_count(), 0u);
  EXPECT_EQ(hosts.b->tcp().connection_count(), 0u);
}

// The bulk benchmark's stall (issue 13): its server replied, closed and exited while the reply and
// FIN still sat in a full TX ring, so the client retransmitted its FIN until it gave up. A process
// may stop its stack only once unfinished_connections() is zero: it counts a connection until both
// directions are closed (TIME-WAIT or gone), including while the wire holds its frames.
TEST(TcpStates, UnfinishedUntilClosedInBothDirections) {
  TwoHosts hosts(5, quick_settings());
  auto listener = hosts.b->tcp().listen(80);
  auto client = hosts.a->tcp().connect(ip_of(2), 80);
  ASSERT_TRUE(client);
  EXPECT_EQ(hosts.a->tcp().unfinished_connections(), 1u);  // SYN-SENT
  std::shared_ptr<TcpConnection> server;
  ASSERT_TRUE(hosts.run_until([&] {
    if (!server) server = listener->accept();
    return server && client->established();
  }));
  EXPECT_EQ(hosts.b->tcp().unfinished_connections(), 1u);

  // The client streams and closes; the server reads to the end.
  BufferList request = pattern(0, 20000);
  ASSERT_EQ(client->send(request), 20000u);
  client->shutdown_write();
  BufferList got;
  ASSERT_TRUE(hosts.run_until([&] {
    got.append(server->read());
    return server->end_of_stream() && client->state() == TcpState::FinWait2;
  }));
  EXPECT_EQ(got.length(), 20000u);
  EXPECT_EQ(hosts.a->tcp().unfinished_connections(), 1u);  // FIN-WAIT-2: the peer's FIN is to come

  // The server answers and closes while nothing it sends gets through (a full ring).
  hosts.wire.tap = [](int from, std::vector<uint8_t>&) { return from != 1; };
  BufferList reply = pattern(0, 8);
  ASSERT_EQ(server->send(reply), 8u);
  server->close();
  EXPECT_EQ(server->state(), TcpState::LastAck);
  hosts.run_for(300ms);
  EXPECT_EQ(hosts.b->tcp().unfinished_connections(), 1u);
  EXPECT_EQ(hosts.a->tcp().unfinished_connections(), 1u);
  EXPECT_EQ(client->readable_bytes(), 0u);

  // Once the frames flow, the reply and FIN arrive and are acknowledged: both ends are finished.
  hosts.wire.tap = nullptr;
  ASSERT_TRUE(hosts.run_until([&] { return hosts.b->tcp().unfinished_connections() == 0; }));
  EXPECT_EQ(server->state(), TcpState::Closed);
  EXPECT_EQ(hosts.b->tcp().connection_count(), 0u);
  EXPECT_EQ(client->readable_bytes(), 8u);
  EXPECT_EQ(client->state(), TcpState::TimeWait);
  EXPECT_EQ(hosts.a->tcp().unfinished_connections(), 0u);
  EXPECT_EQ(hosts.a->tcp().connection_count(), 1u);  // TIME-WAIT stays in the table, finished
}

TEST(TcpStates, SimultaneousOpen) {
  TwoHosts hosts;
  hosts.a->arp().learn(ip_of(2), mac_of(2));
  hosts.b->arp().learn(ip_of(1), mac_of(1));
  auto x = hosts.a->tcp().connect(ip_of(2), 6000, 5000);
  auto y = hosts.b->tcp().connect(ip_of(1), 5000, 6000);
  ASSERT_TRUE(x && y);
  StateLog log;
  log.watch(x);
  log.watch(y);
  ASSERT_TRUE(run_logged(hosts, log, [&] { return x->established() && y->established(); }));
  std::vector<TcpState> expected{TcpState::SynSent, TcpState::SynReceived, TcpState::Established};
  EXPECT_EQ(log.of(0), expected);
  EXPECT_EQ(log.of(1), expected);
  BufferList hello;
  hello.append_copy("hello");
  EXPECT_EQ(x->send(hello), 5u);
  ASSERT_TRUE(hosts.run_until([&] { return y->readable_bytes() == 5; }));
  EXPECT_EQ(y->read().to_string(), "hello");
}

// RFC 9293 §3.10.4: a close in SYN-RECEIVED is "queued for processing after entering ESTABLISHED
// state". Here the ACK that establishes x carries the peer's FIN too: the queued close must send
// x's FIN on entering ESTABLISHED (FIN-WAIT-1, then CLOSING on the peer's FIN), not leave x in
// CLOSE-WAIT for good with its FIN never sent, as the inet fuzzer found.
TEST(TcpStates, CloseInSynReceivedWhenTheEstablishingAckCarriesFin) {
  TwoHosts hosts(5, quick_settings());
  const Tcb tcb = Tcb::in(TcpState::SynReceived);
  PeerByHand peer(hosts, tcb);
  const auto& x = peer.connection;
  ASSERT_EQ(x->state(), TcpState::SynReceived);
  x->shutdown_write();
  TcpHeader h = peer.segment(kTcpAck | kTcpFin, tcb.rcv_nxt);  // acknowledges our SYN
  peer.send(h);
  EXPECT_EQ(x->state(), TcpState::Closing) << x->describe();
  hosts.run_for(1ms);
  ASSERT_TRUE(std::any_of(peer.seen.begin(), peer.seen.end(), [&](const SeenSegment& s) {
    return s.header.has(kTcpFin) && s.header.seq == tcb.iss + 1 && s.header.ack == tcb.rcv_nxt + 1;
  })) << "x sent no FIN acknowledging the peer's";
  h.seq = tcb.rcv_nxt + 1;
  h.ack = tcb.iss + 2;
  h.flags = kTcpAck;
  peer.send(h);
  EXPECT_EQ(x->state(), TcpState::TimeWait);
}

// One rule each, from a state built directly (tcp_state_builder.h).
// RFC 9293 §3.10.7.4 fifth, SYN-RECEIVED: an ACK outside SND.UNA < SEG.ACK =< SND.NXT gets
// <SEQ=SEG.ACK><CTL=RST>.
TEST(TcpStates, UnacceptableAckInSynReceivedIsReset) {
  TwoHosts hosts;
  const Tcb tcb = Tcb::in(TcpState::SynReceived);
  PeerByHand peer(hosts, tcb);
  TcpHeader h = peer.segment(kTcpAck, tcb.rcv_nxt);
  h.ack = tcb.iss + 500;
  peer.send(h);
  hosts.run_for(1ms);
  ASSERT_EQ(peer.seen.size(), 1u);
  EXPECT_TRUE(peer.seen[0].header.has(kTcpRst));
  EXPECT_EQ(peer.seen[0].header.seq, tcb.iss + 500);
  EXPECT_EQ(peer.connection->state(), TcpState::SynReceived);
}

// RFC 9293 §3.10.7.4 fifth, FIN-WAIT-1: "if the FIN segment is now acknowledged, then enter
// FIN-WAIT-2".
TEST(TcpStates, AckOfOurFinMovesFinWait1ToFinWait2) {
  TwoHosts hosts;
  const Tcb tcb = Tcb::in(TcpState::FinWait1);
  PeerByHand peer(hosts, tcb);
  peer.send(peer.segment(kTcpAck, tcb.rcv_nxt));  // acknowledges snd_nxt, the FIN included
  EXPECT_EQ(peer.connection->state(), TcpState::FinWait2);
}

// RFC 9293 §3.10.7.4 fifth, LAST-ACK: "If our FIN is now acknowledged, delete the TCB, enter
// the CLOSED state".
TEST(TcpStates, AckOfOurFinClosesLastAck) {
  TwoHosts hosts;
  const Tcb tcb = Tcb::in(TcpState::LastAck);
  PeerByHand peer(hosts, tcb);
  TcpHeader h = peer.segment(kTcpAck, tcb.rcv_nxt);
  h.ack = tcb.snd_nxt - 1;  // the data, not the FIN: still LAST-ACK
  peer.send(h);
  EXPECT_EQ(peer.connection->state(), TcpState::LastAck);
  peer.send(peer.segment(kTcpAck, tcb.rcv_nxt));
  EXPECT_EQ(peer.connection->state(), TcpState::Closed);
  EXPECT_EQ(peer.connection->error(), TcpError::None);
  EXPECT_EQ(hosts.a->tcp().connection_count(), 0u);
}

// RFC 9293 §3.10.7.4 eighth, TIME-WAIT: a retransmitted FIN is acknowledged and restarts the
// 2 MSL timeout.
TEST(TcpStates, RetransmittedFinRestartsTimeWait) {
  TwoHosts hosts(1, quick_settings());
  const Tcb tcb = Tcb::in(TcpState::TimeWait);
  PeerByHand peer(hosts, tcb);
  hosts.run_for(1500ms);  // of the 2 s wait
  peer.send(peer.segment(kTcpAck | kTcpFin, tcb.rcv_nxt - 1));
  EXPECT_EQ(peer.acks_received(), 1u);
  EXPECT_EQ(peer.seen.at(0).header.ack, tcb.rcv_nxt);
  hosts.run_for(1500ms);
  EXPECT_EQ(peer.connection->state(), TcpState::TimeWait);
  hosts.run_for(600ms);
  EXPECT_EQ(peer.connection->state(), TcpState::Closed);
}

TEST(TcpStates, SimultaneousClose) {
  TwoHosts hosts(5, quick_settings());
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  StateLog log;
  log.watch(client);
  log.watch(server);
  client->close();
  server->close();
  ASSERT_TRUE(run_logged(hosts, log, [&] { return client->state() == TcpState::Closed &&
                                                  server->state() == TcpState::Closed; }));
  std::vector<TcpState> expected{TcpState::Established, TcpState::FinWait1, TcpState::Closing,
                                 TcpState::TimeWait, TcpState::Closed};
  EXPECT_EQ(log.of(0), expected);
  EXPECT_EQ(log.of(1), expected);
}

TEST(TcpStates, TimeWaitAcknowledgesRetransmittedFin) {
  TwoHosts hosts(9, quick_settings());
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  bool dropped_last_ack = false;
  // Drop the client's ACK of the server's FIN once, so the server retransmits its FIN.
  SegmentRecorder recorder(hosts, [&](const SeenSegment& s) {
    if (s.from == 0 && client->state() == TcpState::TimeWait && !dropped_last_ack) {
      dropped_last_ack = true;
      return true;
    }
    return false;
  });
  std::vector<SeenSegment>& seen = recorder.segments();
  client->close();
  hosts.run_until([&] { return server->state() == TcpState::CloseWait; });
  server->close();
  ASSERT_TRUE(hosts.run_until([&] { return server->state() == TcpState::Closed; }, 10s));
  EXPECT_TRUE(dropped_last_ack);
  size_t fins_from_server = std::count_if(seen.begin(), seen.end(), [](const SeenSegment& s) {
    return s.from == 1 && s.header.has(kTcpFin);
  });
  EXPECT_EQ(fins_from_server, 2u);
  EXPECT_EQ(server->error(), TcpError::None);
  EXPECT_EQ(client->state(), TcpState::TimeWait);
}

TEST(TcpStates, ConnectToClosedPortIsRefused) {
  TwoHosts hosts;
  auto client = hosts.a->tcp().connect(ip_of(2), 81);
  ASSERT_TRUE(hosts.run_until([&] { return client->state() == TcpState::Closed; }));
  EXPECT_EQ(client->error(), TcpError::Refused);
  EXPECT_EQ(hosts.b->stats().tcp_rst_sent, 1u);
}

TEST(TcpStates, CloseWithUnreadDataResets) {
  TwoHosts hosts;
  auto [client, server] = connect_pair(hosts);
  BufferList data = pattern(0, 1000);
  client->send(data);
  ASSERT_TRUE(hosts.run_until([&] { return server->readable_bytes() == 1000; }));
  server->close();  // RFC 9293 §3.10.4: unread data -> RST
  EXPECT_EQ(server->state(), TcpState::Closed);
  ASSERT_TRUE(hosts.run_until([&] { return client->state() == TcpState::Closed; }));
  EXPECT_EQ(client->error(), TcpError::Reset);
}

// Each test: a client in ESTABLISHED (timestamps and SACK on, nothing in flight), one crafted
// segment from the server (played by hand), then the client's reply and state.
class Rfc5961 : public ::testing::Test {
 protected:
  static Tcb established() {
    Tcb t = Tcb::in(TcpState::Established);
    t.timestamps = true;
    t.ts_recent = 70000;
    t.sack = true;
    return t;
  }
  TcpHeader from_server(uint8_t flags, uint32_t seq) const { return server.segment(flags, seq); }
  size_t acks_from_client() const { return server.acks_received(); }
  TwoHosts hosts{11};
  const Tcb tcb = established();
  PeerByHand server{hosts, tcb};
  const std::shared_ptr<TcpConnection>& client = server.connection;
  std::vector<SeenSegment>& seen = server.seen;
  // The server's next sequence number is what the client expects; the client's is what it acks.
  const uint32_t server_next = tcb.rcv_nxt, client_ack_point = tcb.snd_nxt, server_tsval = tcb.ts_recent;
};

TEST_F(Rfc5961, InWindowRstGetsChallengeAck) {
  hosts.a->receive(craft_to_a(from_server(kTcpRst, server_next + 100)));
  hosts.run_for(10ms);
  EXPECT_EQ(client->state(), TcpState::Established);
  EXPECT_EQ(hosts.a->stats().tcp_challenge_acks, 1u);
  EXPECT_EQ(acks_from_client(), 1u);
}

TEST_F(Rfc5961, OutOfWindowRstIsDropped) {
  hosts.a->receive(craft_to_a(from_server(kTcpRst, server_next + (64u << 20))));
  hosts.run_for(10ms);
  EXPECT_EQ(client->state(), TcpState::Established);
  EXPECT_EQ(hosts.a->stats().tcp_dropped_out_of_window, 1u);
  EXPECT_EQ(acks_from_client(), 0u);
}

TEST_F(Rfc5961, ExactRstResets) {
  hosts.a->receive(craft_to_a(from_server(kTcpRst, server_next)));
  EXPECT_EQ(client->state(), TcpState::Closed);
  EXPECT_EQ(client->error(), TcpError::Reset);
}

TEST_F(Rfc5961, SynInEstablishedGetsChallengeAck) {
  hosts.a->receive(craft_to_a(from_server(kTcpSyn, server_next + 5)));
  hosts.run_for(10ms);
  EXPECT_EQ(client->state(), TcpState::Established);
  EXPECT_EQ(hosts.a->stats().tcp_challenge_acks, 1u);
}

// Found by tests/integration/dpdk/hostile_frames.py: a SYN outside the window got a plain ACK,
// outside the challenge-ACK rate limit. RFC 5961 §4.2: challenge ACK whatever the sequence number.
TEST_F(Rfc5961, SynOutsideWindowGetsRateLimitedChallengeAck) {
  const size_t limit = hosts.settings_a.tcp.max_challenge_acks_per_second;
  for (size_t i = 0; i < limit + 3; ++i)
    hosts.a->receive(craft_to_a(from_server(kTcpSyn, server_next + (64u << 20) + static_cast<uint32_t>(i))));
  EXPECT_EQ(client->state(), TcpState::Established);
  EXPECT_EQ(hosts.a->stats().tcp_challenge_acks, limit);
  EXPECT_EQ(hosts.a->stats().tcp_dropped_out_of_window, limit + 3);
  hosts.run_for(10ms);
  EXPECT_EQ(acks_from_client(), limit);  // RFC 5961 §7: no more than the limit per second
}

TEST_F(Rfc5961, AckOfUnsentDataIsAnsweredAndDropped) {
  TcpHeader h = from_server(kTcpAck, server_next);
  h.ack = client_ack_point + 100000;
  hosts.a->receive(craft_to_a(h, "data"));
  hosts.run_for(10ms);
  EXPECT_EQ(client->readable_bytes(), 0u);  // the segment was dropped, its data too
  EXPECT_EQ(acks_from_client(), 1u);
  EXPECT_EQ(client->state(), TcpState::Established);
}

// The peer's window closed on data we had sent and it dropped: its RCV.NXT is our SND.UNA, and a
// zero window accepts only SEG.SEQ = RCV.NXT (RFC 9293 §3.10.7.4). Our ACKs must carry that (as
// Linux's tcp_acceptable_seq), not SND.MAX, or the peer drops every one of them, SACK blocks too,
// and repairs our receive holes only by timeouts backing off without end (the tap_faults stall).
TEST_F(Rfc5961, AcksStayInsideAWindowThatClosedOnSentData) {
  hosts.wire.cut = true;  // what the client sends now never arrives
  BufferList data = pattern(0, 3000);
  ASSERT_EQ(client->send(data), 3000u);
  hosts.wire.cut = false;
  TcpHeader closing = from_server(kTcpAck, server_next);
  closing.window = 0;  // the server's window closes with none of it taken
  hosts.a->receive(craft_to_a(closing));
  ASSERT_EQ(client->peer_window(), 0u) << client->describe();
  seen.clear();
  // Out-of-order data from the server: the client answers at once with a duplicate ACK.
  TcpHeader late = from_server(kTcpAck, server_next + 100);
  late.window = 0;
  hosts.a->receive(craft_to_a(late, "late"));
  ASSERT_EQ(acks_from_client(), 1u);
  for (const SeenSegment& s : seen) {
    if (s.from == 0) {
      EXPECT_EQ(s.header.seq, client_ack_point) << "the ACK is right of a closed window";
    }
  }
}

TEST_F(Rfc5961, OldAckBeyondMaxWindowIsChallenged) {
  TcpHeader h = from_server(kTcpAck, server_next);
  h.ack = client_ack_point - (1u << 30);
  hosts.a->receive(craft_to_a(h, "data"));
  EXPECT_EQ(hosts.a->stats().tcp_challenge_acks, 1u);
  EXPECT_EQ(client->readable_bytes(), 0u);
}

TEST_F(Rfc5961, DataOutsideWindowDroppedAndAcked) {
  hosts.a->receive(craft_to_a(from_server(kTcpAck, server_next + (64u << 20)), "far away"));
  hosts.run_for(10ms);
  EXPECT_EQ(hosts.a->stats().tcp_dropped_out_of_window, 1u);
  EXPECT_EQ(acks_from_client(), 1u);
  EXPECT_EQ(client->readable_bytes(), 0u);
}

// As Linux's tcp_invalid_ratelimit: out-of-window segments without data are answered at most once
// per tcp.invalid_ack_ratelimit (two ends that disagree about the sequence space would otherwise
// trade ACKs without end); one with data is always answered.
TEST_F(Rfc5961, OutOfWindowAcksAreRateLimited) {
  for (int i = 0; i < 5; ++i)
    hosts.a->receive(craft_to_a(from_server(kTcpAck, server_next + (64u << 20) + static_cast<uint32_t>(i))));
  hosts.run_for(10ms);
  EXPECT_EQ(acks_from_client(), 1u);
  EXPECT_EQ(hosts.a->stats().tcp_out_of_window_acks_limited, 4u);
  hosts.a->receive(craft_to_a(from_server(kTcpAck, server_next + (64u << 20)), "data"));
  hosts.run_for(10ms);
  EXPECT_EQ(acks_from_client(), 2u) << "a segment with data goes unanswered";
  hosts.run_for(hosts.settings_a.tcp.invalid_ack_ratelimit);
  hosts.a->receive(craft_to_a(from_server(kTcpAck, server_next + (64u << 20))));
  hosts.run_for(10ms);
  EXPECT_EQ(acks_from_client(), 3u) << "the limit outlasts its interval";
  EXPECT_EQ(client->state(), TcpState::Established);
}

TEST_F(Rfc5961, PawsDropsOldTimestamp) {
  ASSERT_TRUE(client->timestamps_enabled());
  TcpHeader h = from_server(kTcpAck, server_next);
  h.options.timestamp = std::make_pair(server_tsval - 1000, 0u);  // older than TS.Recent
  hosts.a->receive(craft_to_a(h, "stale"));
  hosts.run_for(10ms);
  EXPECT_EQ(hosts.a->stats().tcp_dropped_paws, 1u);  // RFC 7323 §5.3 R1
  EXPECT_EQ(client->readable_bytes(), 0u);
  EXPECT_EQ(acks_from_client(), 1u);
  h.options.timestamp = std::make_pair(server_tsval + 1, 0u);  // current: accepted
  hosts.a->receive(craft_to_a(h, "fresh"));
  EXPECT_EQ(client->read().to_string(), "fresh");
}

TEST_F(Rfc5961, MalformedSegmentsAreCounted) {
  Packet bad = craft_to_a(from_server(kTcpAck, server_next), "payload");
  std::string bytes = bad.data.to_string();
  bytes.back() ^= 0x55;  // breaks the TCP checksum
  Packet p;
  p.data.append_copy(bytes);
  hosts.a->receive(std::move(p));
  EXPECT_EQ(hosts.a->stats().tcp_bad_checksum, 1u);
  TcpHeader h = from_server(kTcpSyn | kTcpFin, server_next);
  hosts.a->receive(craft_to_a(h));
  EXPECT_EQ(hosts.a->stats().rx_malformed_tcp, 1u);
  EXPECT_EQ(client->state(), TcpState::Established);
}

}  // namespace
}  // namespace bypass::inet::test
