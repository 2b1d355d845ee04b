// The messenger end to end over a real transport (BYPASS_MS_TYPE, default posix) on loopback:
// ordering and exactly-once delivery at scale, lossless sessions under injected socket
// failures, lossy resets, keepalive timeouts, throttles and secure mode.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "config/config.h"
#include "msgr/messenger.h"

namespace bypass::msgr {
namespace {

using namespace std::chrono_literals;
constexpr uint16_t kTestMsgType = 0x7001;

// front = __le32 stream id | __le64 sequence within the stream
MessageRef make_msg(uint32_t stream, uint64_t seq, size_t data_len = 0) {
  auto m = std::make_shared<Message>(kTestMsgType);
  char front[12];
  std::memcpy(front, &stream, 4);
  std::memcpy(front + 4, &seq, 8);
  m->front().append_copy(front, sizeof(front));
  if (data_len) std::memset(m->data().append_hole(data_len), static_cast<int>(seq & 0xff), data_len);
  return m;
}

// Checks every stream arrives exactly once and in order.
class SeqChecker : public Dispatcher {
 public:
  explicit SeqChecker(bool fast) : fast_(fast) {}
  bool ms_can_fast_dispatch(const Message& m) const override { return fast_ && m.type() == kTestMsgType; }
  void ms_fast_dispatch(const MessageRef& m) override { check(m); }
  bool ms_dispatch(const MessageRef& m) override {
    if (slow_dispatch.count()) std::this_thread::sleep_for(slow_dispatch);
    check(m);
    return true;
  }
  bool ms_handle_reset(const ConnectionRef&) override {
    resets++;
    return true;
  }
  void ms_handle_accept(const ConnectionRef&) override { accepts++; }
  void ms_handle_connect(const ConnectionRef&) override { connects++; }
  void ms_handle_remote_reset(const ConnectionRef&) override { remote_resets++; }

  void check(const MessageRef& m) {
    if (m->type() != kTestMsgType || m->front().length() != 12) {
      errors++;
      return;
    }
    uint32_t stream;
    uint64_t seq;
    m->front().copy_out(0, 4, &stream);
    m->front().copy_out(4, 8, &seq);
    std::lock_guard<std::mutex> guard(lock_);
    uint64_t& last = last_[stream];
    if (seq != last + 1) {
      if (errors++ < 5) ADD_FAILURE() << "stream " << stream << " got seq " << seq << " after " << last;
    }
    last = seq;
    received++;
  }
  uint64_t last_of(uint32_t stream) {
    std::lock_guard<std::mutex> guard(lock_);
    return last_[stream];
  }

  std::atomic<uint64_t> received{0}, errors{0}, resets{0}, accepts{0}, connects{0}, remote_resets{0};
  std::chrono::milliseconds slow_dispatch{0};

 private:
  bool fast_;
  std::mutex lock_;
  std::map<uint32_t, uint64_t> last_;
};

class NullDispatcher : public Dispatcher {
 public:
  bool ms_dispatch(const MessageRef&) override { return true; }
  bool ms_handle_reset(const ConnectionRef&) override {
    resets++;
    return true;
  }
  bool ms_handle_refused(const ConnectionRef&) override {
    refused++;
    return true;
  }
  std::atomic<int> resets{0}, refused{0};
};

config::Config make_conf(std::initializer_list<std::pair<const char*, const char*>> sets = {}) {
  config::Config conf;
  conf.apply_environment();  // BYPASS_MS_TYPE picks the transport
  conf.set("ms.workers", "2");
  for (auto& [k, v] : sets) conf.set(k, v);
  return conf;
}

template <typename Pred>
bool wait_for(Pred pred, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

std::unique_ptr<Messenger> make_server(const config::Config& conf, Dispatcher* d, Policy policy) {
  auto m = Messenger::create(conf, EntityName{EntityType::Osd, 0});
  m->set_default_policy(policy);
  m->add_dispatcher(d);
  EntityAddr addr;
  EXPECT_TRUE(EntityAddr::parse("v2:127.0.0.1:0", &addr));
  EXPECT_EQ(m->bind(addr), 0);
  EXPECT_EQ(m->start(), 0);
  return m;
}

std::unique_ptr<Messenger> make_client(const config::Config& conf, Dispatcher* d, Policy policy, int num) {
  auto m = Messenger::create(conf, EntityName{EntityType::Client, num});
  m->set_default_policy(policy);
  m->add_dispatcher(d);
  EXPECT_EQ(m->start(), 0);
  return m;
}

// Sends `count` messages on `con` as stream `stream`, at most `window` unacknowledged at once.
void send_stream(const ConnectionRef& con, uint32_t stream, uint64_t count, uint64_t window,
                 std::atomic<uint64_t>& acked, std::atomic<uint64_t>& dropped, size_t data_len = 0) {
  std::atomic<uint64_t> mine{0};
  auto deadline = std::chrono::steady_clock::now() + 240s;
  for (uint64_t seq = 1; seq <= count; ++seq) {
    while (seq - mine.load() > window && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(50us);
    auto m = make_msg(stream, seq, data_len);
    m->set_completion([&mine, &acked, &dropped](bool ok) {
      mine++;
      (ok ? acked : dropped)++;
    });
    con->send_message(m);
  }
  while (mine.load() < count && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
}

TEST(MessengerPosix, MillionMessagesOver64ConnectionsInOrderExactlyOnce) {
  SeqChecker server_d(true);
  auto conf = make_conf({{"ms.keepalive_interval", "0s"}});
  // Eight listening addresses x eight client messengers = 64 distinct connections.
  auto server = Messenger::create(conf, EntityName{EntityType::Osd, 0});
  server->set_default_policy(Policy::stateful_server());
  server->add_dispatcher(&server_d);
  for (int i = 0; i < 8; ++i) {
    EntityAddr addr;
    ASSERT_TRUE(EntityAddr::parse("v2:127.0.0.1:0", &addr));
    ASSERT_EQ(server->bind(addr), 0);
  }
  ASSERT_EQ(server->start(), 0);
  EntityAddrVec server_addrs = server->my_addrs();
  ASSERT_EQ(server_addrs.addrs.size(), 8u);

  auto client_conf = make_conf({{"ms.workers", "1"}, {"ms.keepalive_interval", "0s"}});
  std::vector<NullDispatcher> client_ds(8);
  std::vector<std::unique_ptr<Messenger>> clients;
  std::vector<ConnectionRef> cons;
  for (int c = 0; c < 8; ++c) {
    clients.push_back(make_client(client_conf, &client_ds[c], Policy::lossless_client(), c));
    for (int s = 0; s < 8; ++s)
      cons.push_back(clients.back()->connect_to(EntityType::Osd, EntityAddrVec{{server_addrs.addrs[s]}}));
  }
  ASSERT_EQ(cons.size(), 64u);
  const uint64_t per_connection = 1000000 / 64 + 1;  // 15626 * 64 >= 1,000,000
  std::atomic<uint64_t> acked{0}, dropped{0};
  std::vector<std::thread> senders;
  for (int t = 0; t < 4; ++t) {
    senders.emplace_back([&, t] {
      std::vector<std::thread> inner;
      for (uint32_t i = t; i < 64; i += 4) inner.emplace_back([&, i] { send_stream(cons[i], i, per_connection, 512, acked, dropped); });
      for (auto& th : inner) th.join();
    });
  }
  for (auto& th : senders) th.join();
  EXPECT_TRUE(wait_for([&] { return server_d.received.load() == per_connection * 64; }, 60s));
  EXPECT_EQ(server_d.received.load(), per_connection * 64);
  EXPECT_EQ(server_d.errors.load(), 0u);
  EXPECT_EQ(acked.load(), per_connection * 64);
  EXPECT_EQ(dropped.load(), 0u);
  for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(server_d.last_of(i), per_connection) << "stream " << i;
  std::printf("server perf: %s\n", server->perf_dump_json().c_str());
  for (auto& c : clients) c->shutdown();
  server->shutdown();
}

TEST(MessengerPosix, LosslessSurvivesInjectedSocketFailures) {
  SeqChecker server_d(false);
  auto conf = make_conf({{"ms.inject_socket_failures", "40"}, {"ms.keepalive_interval", "0s"}});
  auto server = make_server(conf, &server_d, Policy::stateful_server());
  NullDispatcher client_d;
  auto client = make_client(conf, &client_d, Policy::lossless_client(), 1);
  const uint64_t per_connection = 5000;
  std::vector<ConnectionRef> cons;
  // Two client messengers would be needed for distinct connections to one address; use one
  // connection per stream over separate client messengers.
  NullDispatcher client_d2;
  auto client2 = make_client(conf, &client_d2, Policy::lossless_client(), 2);
  cons.push_back(client->connect_to(EntityType::Osd, server->my_addrs()));
  cons.push_back(client2->connect_to(EntityType::Osd, server->my_addrs()));
  std::atomic<uint64_t> acked{0}, dropped{0};
  std::thread a([&] { send_stream(cons[0], 0, per_connection, 64, acked, dropped, 100); });
  std::thread b([&] { send_stream(cons[1], 1, per_connection, 64, acked, dropped, 5000); });
  a.join();
  b.join();
  EXPECT_TRUE(wait_for([&] { return server_d.received.load() == 2 * per_connection; }, 30s));
  EXPECT_EQ(server_d.received.load(), 2 * per_connection);
  EXPECT_EQ(server_d.errors.load(), 0u);
  EXPECT_EQ(server_d.last_of(0), per_connection);
  EXPECT_EQ(server_d.last_of(1), per_connection);
  EXPECT_EQ(acked.load(), 2 * per_connection);
  EXPECT_EQ(dropped.load(), 0u);
  std::string perf = client->perf_dump_json() + server->perf_dump_json();
  std::printf("client perf: %s\nserver perf: %s\n", client->perf_dump_json().c_str(), server->perf_dump_json().c_str());
  // Failures really were injected and survived through session reconnects.
  EXPECT_EQ(perf.find("\"sessions_reconnected\":0,"), std::string::npos) << perf;
  client->shutdown();
  client2->shutdown();
  server->shutdown();
}

TEST(MessengerPosix, LossySessionDropsOnFaultAndReportsReset) {
  SeqChecker server_d(false);
  auto conf = make_conf();
  auto server = make_server(conf, &server_d, Policy::stateless_server());
  NullDispatcher client_d;
  auto client = make_client(conf, &client_d, Policy::lossy_client(), 3);
  ConnectionRef con = client->connect_to(EntityType::Osd, server->my_addrs());
  std::atomic<uint64_t> acked{0}, dropped{0};
  send_stream(con, 7, 10, 10, acked, dropped);
  EXPECT_EQ(acked.load(), 10u);
  EXPECT_TRUE(wait_for([&] { return server_d.received.load() == 10; }, 10s));
  EXPECT_TRUE(con->is_connected());
  // The server drops everything: the client's lossy session must end with a reset, not retry.
  server->mark_down_all();
  EXPECT_TRUE(wait_for([&] { return client_d.resets.load() == 1; }, 10s));
  EXPECT_FALSE(con->is_connected());
  std::atomic<bool> completed_ok{true};
  auto late = make_msg(7, 11);
  late->set_completion([&](bool ok) { completed_ok = ok; });
  EXPECT_FALSE(con->send_message(late));
  EXPECT_FALSE(completed_ok.load());
  // A new connect_to gives a fresh session.
  ConnectionRef fresh = client->connect_to(EntityType::Osd, server->my_addrs());
  EXPECT_NE(fresh.get(), con.get());
  client->shutdown();
  server->shutdown();
}

TEST(MessengerPosix, KeepaliveDetectsSilentPeer) {
  // A listener whose owner never reads or writes: TCP connects, the banner never comes back.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof(sin);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&sin), &len), 0);
  EntityAddr silent = EntityAddr::msgr2(reinterpret_cast<sockaddr*>(&sin), sizeof(sin), 0);

  auto conf = make_conf({{"ms.keepalive_interval", "100ms"}, {"ms.keepalive_timeout", "400ms"}});
  NullDispatcher client_d;
  auto client = make_client(conf, &client_d, Policy::lossy_client(), 4);
  auto start = std::chrono::steady_clock::now();
  ConnectionRef con = client->connect_to(EntityType::Osd, EntityAddrVec{{silent}});
  EXPECT_TRUE(wait_for([&] { return client_d.resets.load() >= 1; }, 10s));
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 350ms);
  EXPECT_NE(client->perf_dump_json().find("\"keepalive_timeouts\":1"), std::string::npos) << client->perf_dump_json();
  client->shutdown();
  ::close(fd);
}

TEST(MessengerPosix, DispatchThrottleBoundsQueuedBytes) {
  SeqChecker server_d(false);
  server_d.slow_dispatch = 1ms;
  auto conf = make_conf({{"ms.dispatch_throttle_bytes", "64K"}});
  auto server = make_server(conf, &server_d, Policy::stateful_server());
  NullDispatcher client_d;
  auto client = make_client(make_conf(), &client_d, Policy::lossless_client(), 5);
  ConnectionRef con = client->connect_to(EntityType::Osd, server->my_addrs());
  std::atomic<uint64_t> acked{0}, dropped{0};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> peak{0};
  std::thread watcher([&] {
    while (!done) {
      std::string perf = server->perf_dump_json();
      auto pos = perf.find("\"dispatch_throttle_bytes\":");
      uint64_t v = std::strtoull(perf.c_str() + pos + 26, nullptr, 10);
      if (v > peak) peak = v;
      std::this_thread::sleep_for(200us);
    }
  });
  send_stream(con, 9, 400, 400, acked, dropped, 4096);
  EXPECT_TRUE(wait_for([&] { return server_d.received.load() == 400; }, 30s));
  done = true;
  watcher.join();
  EXPECT_EQ(server_d.errors.load(), 0u);
  EXPECT_EQ(acked.load(), 400u);
  // 64 KiB budget plus at most one message admitted when the queue was empty.
  EXPECT_LE(peak.load(), 64u * 1024 + 4096 + 12);
  EXPECT_GT(peak.load(), 0u);
  EXPECT_EQ(server->perf_dump_json().find("\"throttle_stalls\":0,"), std::string::npos);
  client->shutdown();
  server->shutdown();
}

TEST(MessengerPosix, SecureModeWithSharedSecret) {
  SeqChecker server_d(true);
  auto conf = make_conf({{"ms.auth", "shared_secret"}, {"ms.secret", "open sesame"}, {"ms.mode", "secure"}});
  auto server = make_server(conf, &server_d, Policy::stateful_server());
  NullDispatcher client_d;
  auto client = make_client(conf, &client_d, Policy::lossless_client(), 6);
  ConnectionRef con = client->connect_to(EntityType::Osd, server->my_addrs());
  std::atomic<uint64_t> acked{0}, dropped{0};
  send_stream(con, 3, 2000, 100, acked, dropped, 3000);
  EXPECT_EQ(acked.load(), 2000u);
  EXPECT_EQ(server_d.errors.load(), 0u);
  EXPECT_EQ(con->peer_name().to_string(), "osd.0");

  // A client with the wrong secret never gets a session.
  NullDispatcher bad_d;
  auto bad = make_client(make_conf({{"ms.auth", "shared_secret"}, {"ms.secret", "guess"}, {"ms.mode", "secure"}}),
                         &bad_d, Policy::lossy_client(), 7);
  ConnectionRef bad_con = bad->connect_to(EntityType::Osd, server->my_addrs());
  EXPECT_TRUE(wait_for([&] { return bad_d.resets.load() >= 1; }, 10s));
  EXPECT_FALSE(bad_con->is_connected());
  EXPECT_EQ(server_d.received.load(), 2000u);
  bad->shutdown();
  client->shutdown();
  server->shutdown();
}

TEST(MessengerPosix, SecureSessionRekeysByReauthenticating) {
  // A tiny nonce budget forces the secure session to run out of nonces again and again: each
  // time the connection faults, re-authenticates with fresh challenges (= fresh keys) and the
  // lossless session resumes where it left off.
  SeqChecker server_d(true);
  auto conf = make_conf({{"ms.auth", "shared_secret"}, {"ms.secret", "rekey me"}, {"ms.mode", "secure"},
                         {"ms.rekey_after_frames", "200"}, {"ms.keepalive_interval", "0s"}});
  auto server = make_server(conf, &server_d, Policy::stateful_server());
  NullDispatcher client_d;
  auto client = make_client(conf, &client_d, Policy::lossless_client(), 8);
  ConnectionRef con = client->connect_to(EntityType::Osd, server->my_addrs());
  std::atomic<uint64_t> acked{0}, dropped{0};
  send_stream(con, 4, 3000, 50, acked, dropped, 200);
  EXPECT_TRUE(wait_for([&] { return server_d.received.load() == 3000; }, 30s));
  EXPECT_EQ(server_d.errors.load(), 0u);
  EXPECT_EQ(acked.load(), 3000u);
  EXPECT_EQ(dropped.load(), 0u);
  std::string perf = client->perf_dump_json();
  EXPECT_EQ(perf.find("\"sessions_reconnected\":0,"), std::string::npos) << perf;
  client->shutdown();
  server->shutdown();
}

}  // namespace
}  // namespace bypass::msgr

// The transport comes from BYPASS_MS_TYPE; when it cannot run here the whole suite is skipped.
int main(int argc, char** argv) {
  try {
    bypass::config::Config conf;
    conf.apply_environment();
    auto probe = bypass::msgr::Messenger::create(conf, bypass::msgr::EntityName{bypass::msgr::EntityType::Client, 0});
  } catch (const std::exception& e) {
    std::printf("SKIP: messenger transport unavailable: %s\n", e.what());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
