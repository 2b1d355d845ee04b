// Connections a peer (or the application) abandons must end: state nobody can use any more is not
// held for as long as a silent or hostile peer likes. Each case was found by the inet stack fuzzer
// (fuzz_stack.cc), whose oracle requires every connection to end once everything is closed.
#include "tests/unit/inet/harness.h"

namespace bypass::inet::test {
namespace {

// RFC 9293 lets FIN-WAIT-2 last until the peer's FIN; after the application's close() nothing can
// read what would arrive, so it ends after tcp.fin_wait2_timeout (Linux's tcp_fin_timeout).
TEST(TcpDepartingPeer, OrphanedFinWait2EndsAfterTimeout) {
  InetSettings settings;
  settings.tcp.fin_wait2_timeout = 10s;
  TwoHosts hosts(5, settings);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  client->close();
  ASSERT_TRUE(hosts.run_until([&] { return client->state() == TcpState::FinWait2; }));
  const TimePoint entered = hosts.timers.now();
  // The server never closes: its half of the connection stays open (CLOSE-WAIT) by design.
  ASSERT_TRUE(hosts.run_until([&] { return client->state() == TcpState::Closed; }, 5min));
  EXPECT_GE(hosts.timers.now() - entered, 10s - 1ms);
  EXPECT_LE(hosts.timers.now() - entered, 11s);
  EXPECT_EQ(hosts.a->tcp().connection_count(), 0u);
  EXPECT_EQ(server->state(), TcpState::CloseWait);
}

// A half-close is not an orphan: the application can still read, so FIN-WAIT-2 waits.
TEST(TcpDepartingPeer, HalfClosedFinWait2Waits) {
  InetSettings settings;
  settings.tcp.fin_wait2_timeout = 10s;
  TwoHosts hosts(6, settings);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  client->shutdown_write();
  ASSERT_TRUE(hosts.run_until([&] { return client->state() == TcpState::FinWait2; }));
  hosts.run_for(10min);
  EXPECT_EQ(client->state(), TcpState::FinWait2);
  BufferList late;
  late.append_copy(std::string("still talking"));
  server->send(late);
  ASSERT_TRUE(hosts.run_until([&] { return client->readable_bytes() == 13; }));
}

// RFC 9293 §3.8.6.1: a receiver may keep its window closed as long as it answers the probes; one
// that falls silent is gone, and the sender gives up after tcp.max_retransmissions probes.
TEST(TcpDepartingPeer, ZeroWindowProbesGiveUpOnASilentPeer) {
  InetSettings settings;
  settings.tcp.rcv_buffer = 16 << 10;
  settings.tcp.max_retransmissions = 5;
  TwoHosts hosts(7, settings);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  BufferList data;
  data.append_copy(std::string(64 << 10, 'z'));
  client->send(data);
  ASSERT_TRUE(hosts.run_until([&] { return client->peer_window() == 0; }));
  // The peer answers the probes, with its window still closed: the connection stays.
  hosts.run_for(20min);
  EXPECT_EQ(client->state(), TcpState::Established);
  hosts.wire.cut = true;  // now it is gone
  ASSERT_TRUE(hosts.run_until([&] { return client->state() == TcpState::Closed; }, 60min));
  EXPECT_EQ(client->error(), TcpError::TimedOut);
  EXPECT_EQ(hosts.a->tcp().connection_count(), 0u);
}

// Connections that completed their handshake but were never accepted have no owner once the
// listener closes: they are reset (as Linux does), not left established for good.
TEST(TcpDepartingPeer, StopListeningResetsUnacceptedConnections) {
  TwoHosts hosts(8);
  auto listener = hosts.b->tcp().listen(80);
  auto client = hosts.a->tcp().connect(ip_of(2), 80);
  ASSERT_TRUE(hosts.run_until([&] { return client->established() && listener->acceptable() == 1; }));
  hosts.b->tcp().stop_listening(listener);
  EXPECT_EQ(listener->acceptable(), 0u);
  ASSERT_TRUE(hosts.run_until([&] { return client->state() == TcpState::Closed; }));
  EXPECT_EQ(client->error(), TcpError::Reset);
  EXPECT_EQ(hosts.b->tcp().connection_count(), 0u);
}

}  // namespace
}  // namespace bypass::inet::test
