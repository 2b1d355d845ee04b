// msgr_peer: one messenger per process, for tests of the messenger between two processes (e.g.
// two Bypass processes over net_memif).
//
//   msgr_peer [-c FILE]... [--set key=value]... server --bind IP:PORT [--lifetime T]
//   msgr_peer [-c FILE]... [--set key=value]... client --to IP:PORT --messages N [--max-size S]
//             [--depth D] [--seed X] [--timeout T]
//   msgr_peer [-c FILE]... [--set key=value]... burst --to IP:PORT --messages N [--max-size S] [--seed X]
//
// The server (mon.0, so its address nonce is 0 and clients can name it as v2:IP:PORT/0) prints
// "ready ADDR" and answers every request with a reply carrying the same tid and data; it exits 0 on
// SIGTERM/SIGINT and 1 when its lifetime (default 120s) ends first. The client (lossless policy:
// a refused connect is retried, so it may start before the server listens) keeps D requests of
// seeded random sizes in 1..S bytes in flight, checks each reply's data byte-exact and exits 0
// after N replies, or 1 naming the first bad reply, a reset, or the timeout. `burst` queues all N
// requests at once and shuts its messenger down at once (ms.shutdown_linger decides what still
// reaches the server), then prints "burst N queued A acked D dropped in T s" and exits 0; the
// server prints "received K requests" when it stops.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "config/config.h"
#include "msgr/messenger.h"
#include "stack/network_stack.h"
#include "tests/integration/dpdk/peer_cli.h"

namespace bypass {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::for_each_flag;
using testing::parse_count;
using testing::parse_positive_duration;

constexpr uint16_t kRequestType = 0x7721;
constexpr uint16_t kReplyType = 0x7722;
const char* kHelp = "msgr_peer --help";

const char* kUsage =
    "usage: msgr_peer [-c FILE]... [--set key=value]... <command> [flags]\n"
    "  server --bind IP:PORT [--lifetime T]\n"
    "      answer each request with its data; print 'ready ADDR'; exit 0 on SIGTERM/SIGINT,\n"
    "      1 when T (default 120s) passes first\n"
    "  client --to IP:PORT --messages N [--max-size S] [--depth D] [--seed X] [--timeout T]\n"
    "      send N requests of seeded random sizes 1..S (default 64K), D (default 8) in flight, and\n"
    "      check every reply byte-exact within T (default 60s)\n"
    "  burst --to IP:PORT --messages N [--max-size S] [--seed X]\n"
    "      queue N requests at once, shut down at once (ms.shutdown_linger applies) and print\n"
    "      'burst N queued A acked D dropped in T s'\n";

// The data of request `tid`: a function of (seed, tid) only, so the client regenerates it to check
// the reply instead of keeping every request.
BufferList request_data(uint64_t seed, uint64_t tid, size_t max_size) {
  std::mt19937_64 rng(seed * 1'000'003u + tid);
  const size_t size = 1 + rng() % max_size;
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; i += sizeof(uint64_t)) {  // 8 bytes per draw, not 1
    const uint64_t draw = rng();
    std::memcpy(&bytes[i], &draw, std::min(sizeof(draw), size - i));
  }
  BufferList data;
  data.append_copy(bytes);
  return data;
}

// Replies to every request on the worker that received it.
class Echo final : public msgr::Dispatcher {
 public:
  bool ms_can_fast_dispatch(const msgr::Message& m) const override { return m.type() == kRequestType; }
  void ms_fast_dispatch(const msgr::MessageRef& m) override {
    received.fetch_add(1, std::memory_order_relaxed);
    auto reply = std::make_shared<msgr::Message>(kReplyType);
    reply->set_tid(m->tid());
    reply->data().append(m->data());
    m->connection()->send_message(reply);
  }
  bool ms_dispatch(const msgr::MessageRef&) override { return true; }

  std::atomic<uint64_t> received{0};
};

// Ignores the replies to a burst.
class Discard final : public msgr::Dispatcher {
 public:
  bool ms_can_fast_dispatch(const msgr::Message&) const override { return true; }
  void ms_fast_dispatch(const msgr::MessageRef&) override {}
  bool ms_dispatch(const msgr::MessageRef&) override { return true; }
};

struct ClientOptions {
  std::string to;
  uint64_t messages = 0;
  size_t max_size = 64 * 1024;
  uint64_t depth = 8;
  uint64_t seed = 1;
  std::chrono::milliseconds timeout = 60s;
};

// Keeps `depth` requests in flight and checks the replies; everything after start() runs on the
// connection's worker thread.
class Checker final : public msgr::Dispatcher {
 public:
  explicit Checker(const ClientOptions& o) : o_(o) {}

  void start(msgr::ConnectionRef connection) {
    std::lock_guard guard(lock_);
    connection_ = std::move(connection);
    while (sent_ < o_.messages && sent_ < o_.depth) send_next();
  }

  // "" once every reply arrived intact; otherwise what went wrong.
  std::string wait() {
    std::unique_lock guard(lock_);
    if (!done_cv_.wait_for(guard, o_.timeout, [this] { return done_; })) {
      return "timed out after " + std::to_string(o_.timeout.count()) + " ms with " +
             std::to_string(checked_) + " of " + std::to_string(o_.messages) + " replies checked";
    }
    return error_;
  }
  uint64_t refused() {
    std::lock_guard guard(lock_);
    return refused_;
  }

  bool ms_can_fast_dispatch(const msgr::Message& m) const override { return m.type() == kReplyType; }
  void ms_fast_dispatch(const msgr::MessageRef& m) override {
    std::lock_guard guard(lock_);
    if (done_) return;
    const uint64_t expected_tid = checked_ + 1;  // a lossless session delivers in order
    if (m->tid() != expected_tid) {
      return finish("reply tid " + std::to_string(m->tid()) + ", expected " + std::to_string(expected_tid));
    }
    if (!m->data().contents_equal(request_data(o_.seed, m->tid(), o_.max_size))) {
      return finish("reply " + std::to_string(m->tid()) + ": data differs from the request's " +
                    std::to_string(request_data(o_.seed, m->tid(), o_.max_size).length()) + " bytes (got " +
                    std::to_string(m->data().length()) + ")");
    }
    bytes_ += m->data().length();
    if (++checked_ == o_.messages) return finish("");
    if (sent_ < o_.messages) send_next();
  }
  bool ms_dispatch(const msgr::MessageRef&) override { return true; }
  bool ms_handle_reset(const msgr::ConnectionRef&) override {
    std::lock_guard guard(lock_);
    finish("the lossless session was reset");
    return true;
  }
  bool ms_handle_refused(const msgr::ConnectionRef&) override {
    std::lock_guard guard(lock_);
    ++refused_;
    return false;  // the lossless policy retries the connect
  }
  uint64_t bytes() {
    std::lock_guard guard(lock_);
    return bytes_;
  }

 private:
  void send_next() {
    auto m = std::make_shared<msgr::Message>(kRequestType);
    m->set_tid(++sent_);
    m->data() = request_data(o_.seed, sent_, o_.max_size);
    connection_->send_message(std::move(m));
  }
  void finish(std::string error) {
    if (done_) return;
    done_ = true;
    error_ = std::move(error);
    done_cv_.notify_all();
  }

  const ClientOptions& o_;
  std::mutex lock_;
  std::condition_variable done_cv_;
  msgr::ConnectionRef connection_;
  uint64_t sent_ = 0, checked_ = 0, bytes_ = 0, refused_ = 0;
  bool done_ = false;
  std::string error_;
};

msgr::EntityAddr parse_addr(const std::string& text) {
  msgr::EntityAddr addr;
  if (!msgr::EntityAddr::parse("v2:" + text + "/0", &addr)) {
    throw config::ConfigError("'" + text + "' is not IP:PORT");
  }
  return addr;
}

int run_server(const config::Config& conf, const std::vector<std::string>& args,
               const sigset_t& stop_signals) {
  msgr::EntityAddr bind_addr;
  bool have_bind = false;
  std::chrono::milliseconds lifetime = 120s;
  for_each_flag(args, "server", {"--bind", "--lifetime"}, kHelp,
                [&](const std::string& flag, const std::string& value) {
                  if (flag == "--bind") {
                    bind_addr = parse_addr(value);
                    have_bind = true;
                  } else {
                    lifetime = parse_positive_duration(value);
                  }
                });
  if (!have_bind) throw config::ConfigError("server: --bind IP:PORT is required");
  Echo echo;
  auto messenger = msgr::Messenger::create(conf, msgr::EntityName{msgr::EntityType::Mon, 0});
  messenger->set_default_policy(msgr::Policy::stateful_server());
  messenger->add_dispatcher(&echo);
  if (const int rc = messenger->bind(bind_addr); rc != 0) {
    std::cerr << "msgr_peer: server: bind " << bind_addr.to_string() << ": " << socket_error_name(rc)
              << "\n";
    return 1;
  }
  if (messenger->start() != 0) {
    std::cerr << "msgr_peer: server: the messenger did not start\n";
    return 1;
  }
  std::cout << "ready " << messenger->my_addrs().addrs.front().to_string() << std::endl;
  const timespec lifetime_ts{static_cast<time_t>(lifetime.count() / 1000),
                             (lifetime.count() % 1000) * 1'000'000};
  const int sig = sigtimedwait(&stop_signals, nullptr, &lifetime_ts);
  messenger->shutdown();
  messenger->wait();
  std::cout << "received " << echo.received.load() << " requests" << std::endl;
  if (sig > 0) {
    std::cout << "stopped by signal " << sig << std::endl;
    return 0;
  }
  std::cerr << "msgr_peer: server: lifetime " << lifetime.count() << " ms ended\n";
  return 1;
}

int run_client(const config::Config& conf, const std::vector<std::string>& args) {
  ClientOptions o;
  for_each_flag(args, "client", {"--to", "--messages", "--max-size", "--depth", "--seed", "--timeout"},
                kHelp, [&](const std::string& flag, const std::string& value) {
                  if (flag == "--to") {
                    parse_addr(value);
                    o.to = value;
                  } else if (flag == "--messages") {
                    o.messages = parse_count(value, 1, 100'000'000);
                  } else if (flag == "--max-size") {
                    o.max_size = config::parse_size(value);
                    if (o.max_size == 0) throw config::ConfigError("must be at least 1 byte");
                  } else if (flag == "--depth") {
                    o.depth = parse_count(value, 1, 65536);
                  } else if (flag == "--seed") {
                    o.seed = parse_count(value, 0, INT64_MAX);
                  } else {
                    o.timeout = parse_positive_duration(value);
                  }
                });
  if (o.to.empty() || o.messages == 0) {
    throw config::ConfigError("client: --to IP:PORT and --messages N are required");
  }
  Checker checker(o);
  auto messenger = msgr::Messenger::create(conf, msgr::EntityName{msgr::EntityType::Client, 1});
  messenger->set_default_policy(msgr::Policy::lossless_client());
  messenger->add_dispatcher(&checker);
  if (messenger->start() != 0) {
    std::cerr << "msgr_peer: client: the messenger did not start\n";
    return 1;
  }
  const auto started = Clock::now();
  msgr::EntityAddrVec target;
  target.addrs.push_back(parse_addr(o.to));
  checker.start(messenger->connect_to(msgr::EntityType::Mon, target));
  const std::string error = checker.wait();
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  messenger->shutdown();
  messenger->wait();
  if (!error.empty()) {
    std::cerr << "msgr_peer: client: " << o.to << ": " << error << "\n";
    return 1;
  }
  std::cout << "ok " << o.messages << " replies (" << checker.bytes() << " bytes) checked byte-exact in "
            << seconds << " s after " << checker.refused() << " refused connects" << std::endl;
  return 0;
}

int run_burst(const config::Config& conf, const std::vector<std::string>& args) {
  ClientOptions o;
  for_each_flag(args, "burst", {"--to", "--messages", "--max-size", "--seed"}, kHelp,
                [&](const std::string& flag, const std::string& value) {
                  if (flag == "--to") {
                    parse_addr(value);
                    o.to = value;
                  } else if (flag == "--messages") {
                    o.messages = parse_count(value, 1, 10'000'000);
                  } else if (flag == "--max-size") {
                    o.max_size = config::parse_size(value);
                    if (o.max_size == 0) throw config::ConfigError("must be at least 1 byte");
                  } else {
                    o.seed = parse_count(value, 0, INT64_MAX);
                  }
                });
  if (o.to.empty() || o.messages == 0) throw config::ConfigError("burst: --to IP:PORT and --messages N are required");
  Discard replies;
  auto messenger = msgr::Messenger::create(conf, msgr::EntityName{msgr::EntityType::Client, 1});
  messenger->set_default_policy(msgr::Policy::lossless_client());
  messenger->add_dispatcher(&replies);
  if (messenger->start() != 0) {
    std::cerr << "msgr_peer: burst: the messenger did not start\n";
    return 1;
  }
  msgr::EntityAddrVec target;
  target.addrs.push_back(parse_addr(o.to));
  msgr::ConnectionRef connection = messenger->connect_to(msgr::EntityType::Mon, target);
  std::atomic<uint64_t> acked{0}, dropped{0};  // outlive the messenger: its completions count here
  for (uint64_t tid = 1; tid <= o.messages; ++tid) {
    auto m = std::make_shared<msgr::Message>(kRequestType);
    m->set_tid(tid);
    m->data() = request_data(o.seed, tid, o.max_size);
    m->set_completion([&acked, &dropped](bool ok) { (ok ? acked : dropped).fetch_add(1); });
    connection->send_message(std::move(m));
  }
  const auto started = Clock::now();
  messenger->shutdown();  // at once: the linger is all the time the burst gets
  messenger->wait();
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  connection.reset();
  messenger.reset();
  std::cout << "burst " << o.messages << " queued " << acked.load() << " acked " << dropped.load() << " dropped in "
            << seconds << " s" << std::endl;
  return 0;
}

}  // namespace
}  // namespace bypass

int main(int argc, char** argv) {
  using bypass::config::Config;
  return bypass::testing::run_peer_main(
      argc, argv, "msgr_peer", bypass::kUsage,
      {{"server", bypass::run_server},
       {"client", [](const Config& conf, const std::vector<std::string>& args, const sigset_t&) {
          return bypass::run_client(conf, args);
        }},
       {"burst", [](const Config& conf, const std::vector<std::string>& args, const sigset_t&) {
          return bypass::run_burst(conf, args);
        }}});
}
