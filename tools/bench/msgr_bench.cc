// Messenger benchmark: one client and one server messenger in this process, one connection over
// the configured transport (posix loopback by default), fixed-size messages at a fixed queue depth.
//
//   msgr_bench [-c FILE] [--set k=v]... --mode pingpong|stream --depth N [--size BYTES] [--count N] [--warmup N]
//              [--addr IP] [--echo yes] [--payload copied|registered]
//
// --payload: where the message data lives: `copied` (default) an ordinary buffer, `registered`
// memory from the stack's allocate_payload() (rdma: registered once, sent by rendezvous without a
// registration or a copy). Either way one buffer, shared by every message.
//
// --addr: the IP the server listens on and the client connects to (default 127.0.0.1); rdma with
// rdma.connect_mode=rdma_cm needs the RDMA netdev's address (RoCE cannot route loopback).
//
// pingpong: the client keeps N requests outstanding; the server answers each with a message of the
//           same size (--echo yes: the request's own data, as bypass-bench's server does); latency is request sent -> reply dispatched. msgs/s counts round trips and
//           MB/s the request bytes (the same again flows back).
// stream:   the client keeps N messages unacknowledged (lossless policy); the server only consumes;
//           latency is message queued -> msgr2 ACK received (its completion hook).
// Both ends run in this process, so CPU per message (getrusage, user + system, all threads) covers
// sender and receiver together, kernel TCP included. Under `valgrind --tool=callgrind
// --collect-atstart=no` only the measured messages are counted (user-space instructions).
//
// Prints one line of key=value pairs; tools/bench/msgr-posix.sh turns runs into a table. On a stack
// both ends share with one worker (rdma, dpdk), the line also carries the transport's counters over
// the measured messages, as c_NAME=DELTA (tools/bench/msgr-rdma-rendezvous.sh turns them into copies
// and work requests per payload byte).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_CALLGRIND_START() CALLGRIND_START_INSTRUMENTATION
#define BENCH_CALLGRIND_STOP() CALLGRIND_STOP_INSTRUMENTATION
#else
// Without valgrind's header the run is not restricted to the measured messages under callgrind.
#define BENCH_CALLGRIND_START() ((void)0)
#define BENCH_CALLGRIND_STOP() ((void)0)
#endif

#include "config/cli.h"
#include "config/config.h"
#include "base/log.h"
#include "msgr/messenger.h"
#include "stack/network_stack.h"

using namespace bypass;
using namespace bypass::msgr;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint16_t kRequestType = 0x7701;
constexpr uint16_t kReplyType = 0x7702;

struct Options {
  bool pingpong = true;
  uint64_t depth = 1;
  size_t size = 4096;
  uint64_t count = 100000;
  uint64_t warmup = 10000;
  std::string addr = "127.0.0.1";
  bool echo = false;
  bool registered_payload = false;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "msgr_bench: %s\n"
               "usage: msgr_bench [-c FILE] [--set key=value]... --mode pingpong|stream --depth N [--size BYTES] "
               "[--count N] [--warmup N] [--addr IP] [--echo yes|no] [--payload copied|registered]\n",
               why);
  std::exit(2);
}

// "v2:IP:0" (IPv6 in brackets): where the server listens, on an ephemeral port.
std::string listen_address_text(const std::string& ip) {
  return "v2:" + (ip.find(':') != std::string::npos ? "[" + ip + "]" : ip) + ":0";
}

// The benchmark's own flags, after the common ones (-c, --set) were taken out; bad values are a
// ConfigError naming the flag.
Options parse(const std::vector<std::string>& args) {
  Options o;
  // Parse errors name the flag: "--depth: 'abc' is not an integer".
  auto flag_error = [](const std::string& flag, const config::ConfigError& e) {
    return config::ConfigError(flag + ": " + e.what());
  };
  auto number = [&](const std::string& flag, const std::string& value) {
    try {
      const int64_t n = config::parse_int(value);
      if (n < 0) throw config::ConfigError("'" + value + "' must not be negative");
      return static_cast<uint64_t>(n);
    } catch (const config::ConfigError& e) {
      throw flag_error(flag, e);
    }
  };
  auto size = [&](const std::string& flag, const std::string& value) {
    try {
      return static_cast<size_t>(config::parse_size(value));
    } catch (const config::ConfigError& e) {
      throw flag_error(flag, e);
    }
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (i + 1 >= args.size()) usage(("missing value for " + arg).c_str());
    const std::string& value = args[++i];
    if (arg == "--mode") {
      if (value != "pingpong" && value != "stream") usage("--mode is pingpong or stream");
      o.pingpong = value == "pingpong";
    } else if (arg == "--depth") {
      o.depth = number(arg, value);
    } else if (arg == "--size") {
      o.size = size(arg, value);
    } else if (arg == "--count") {
      o.count = number(arg, value);
    } else if (arg == "--warmup") {
      o.warmup = number(arg, value);
    } else if (arg == "--payload") {
      if (value != "copied" && value != "registered") usage("--payload is copied or registered");
      o.registered_payload = value == "registered";
    } else if (arg == "--addr") {
      EntityAddr probe;
      if (!EntityAddr::parse(listen_address_text(value), &probe))
        throw config::ConfigError("--addr: '" + value + "' is not an IPv4 or IPv6 address");
      o.addr = value;
    } else if (arg == "--echo") {
      if (value != "yes" && value != "no") usage("--echo is yes or no");
      o.echo = value == "yes";
    } else {
      usage(("unknown argument " + arg).c_str());
    }
  }
  if (o.depth == 0 || o.count == 0) usage("--depth and --count must be positive");
  return o;
}

[[noreturn]] void fail(const char* why) {
  std::fprintf(stderr, "msgr_bench: %s\n", why);
  std::_Exit(1);
}

double cpu_seconds(const rusage& u) {
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// The server: answers requests (pingpong) or drops them (stream), on its worker thread.
class Responder : public Dispatcher {
 public:
  Responder(bool pingpong, bool echo, const BufferList& payload)
      : pingpong_(pingpong), echo_(echo), payload_(payload) {}
  bool ms_can_fast_dispatch(const Message&) const override { return true; }
  void ms_fast_dispatch(const MessageRef& m) override {
    if (!pingpong_) return;
    auto reply = std::make_shared<Message>(kReplyType);
    reply->set_tid(m->tid());
    reply->data().append(echo_ ? m->data() : payload_);  // echo: the received buffers, shared
    m->connection()->send_message(reply);
  }
  bool ms_dispatch(const MessageRef&) override { return true; }

 private:
  bool pingpong_;
  bool echo_;
  BufferList payload_;
};

// The client side: keeps `depth` messages in flight, records each latency, refills from the
// thread that observed the completion (the connection's worker), so the loop needs no other thread.
class Driver : public Dispatcher {
 public:
  // `counted`: a stack whose one worker runs both ends; its counters are read on that worker, in
  // finished(), at the first and last measured message.
  Driver(const Options& o, const BufferList& payload, NetworkStack* counted)
      : o_(o), payload_(payload), counted_(counted), send_time_(o.depth), total_(o.warmup + o.count) {
    latencies_ns_.reserve(o.count);
  }

  // Called from main; the worker may already be completing the first messages and refilling, so
  // the window is filled under the same (afterwards uncontended) lock the worker takes.
  void start(ConnectionRef con) {
    std::lock_guard<std::mutex> guard(window_lock_);
    con_ = std::move(con);
    for (uint64_t i = 0; i < std::min(o_.depth, total_); ++i) send_next();
  }

  void mark_begin() {
    begin_ = Clock::now();
    getrusage(RUSAGE_SELF, &ru_begin_);
    if (counted_) counters_begin_ = counted_->worker_report(0).counters;
    BENCH_CALLGRIND_START();
  }
  // The counters' growth over the measured messages (empty without a counted stack).
  NetworkStack::Counters counter_deltas() const {
    NetworkStack::Counters out = counters_end_;
    for (size_t i = 0; i < out.size() && i < counters_begin_.size(); ++i) out[i].second -= counters_begin_[i].second;
    return out;
  }

  // A lost reply would stall the window forever; give up loudly instead.
  void wait_done(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> guard(done_lock_);
    if (!done_cv_.wait_for(guard, limit, [this] { return done_; })) fail("no progress: timed out");
  }

  bool ms_can_fast_dispatch(const Message&) const override { return true; }
  void ms_fast_dispatch(const MessageRef& m) override {
    if (m->type() == kReplyType) finished(m->tid());
  }
  bool ms_dispatch(const MessageRef&) override { return true; }
  bool ms_handle_reset(const ConnectionRef&) override { fail("the connection was reset"); }
  bool ms_handle_refused(const ConnectionRef&) override { fail("the connection was refused"); }

  std::vector<uint32_t>& latencies_ns() { return latencies_ns_; }
  double seconds() const { return std::chrono::duration<double>(end_ - begin_).count(); }
  double cpu_seconds_used() const { return cpu_seconds(ru_end_) - cpu_seconds(ru_begin_); }

 private:
  void send_next() {
    uint64_t tid = ++sent_;
    auto m = std::make_shared<Message>(kRequestType);
    m->set_tid(tid);
    m->data().append(payload_);  // shares the payload's storage: no copy per message
    if (!o_.pingpong) {
      m->set_completion([this, tid](bool delivered) {
        if (!delivered) fail("a message was dropped (connection closed)");
        finished(tid);
      });
    }
    // Outstanding tids are always a window of `depth` consecutive values, so tid % depth is unique.
    send_time_[tid % o_.depth] = Clock::now();
    con_->send_message(std::move(m));
  }

  // Runs on the client's worker thread, once per message, in tid order.
  void finished(uint64_t tid) {
    auto now = Clock::now();
    std::lock_guard<std::mutex> window_guard(window_lock_);
    uint64_t n = ++finished_;
    if (n > o_.warmup) {
      latencies_ns_.push_back(static_cast<uint32_t>(
          std::min<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - send_time_[tid % o_.depth]).count(),
                            UINT32_MAX)));
    }
    if (n == o_.warmup) mark_begin();
    if (sent_ < total_) send_next();
    if (n == total_) {
      BENCH_CALLGRIND_STOP();
      if (counted_) counters_end_ = counted_->worker_report(0).counters;
      getrusage(RUSAGE_SELF, &ru_end_);
      end_ = Clock::now();
      std::lock_guard<std::mutex> guard(done_lock_);
      done_ = true;
      done_cv_.notify_all();
    }
  }

  const Options& o_;
  BufferList payload_;
  NetworkStack* counted_;
  NetworkStack::Counters counters_begin_, counters_end_;
  ConnectionRef con_;
  std::vector<Clock::time_point> send_time_;
  const uint64_t total_;
  uint64_t sent_ = 0;
  uint64_t finished_ = 0;
  std::vector<uint32_t> latencies_ns_;
  Clock::time_point begin_, end_;
  rusage ru_begin_{}, ru_end_{};
  std::mutex window_lock_;
  std::mutex done_lock_;
  std::condition_variable done_cv_;
  bool done_ = false;
};

double percentile_us(std::vector<uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t index = std::min(sorted.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted.size())));
  return sorted[index] / 1000.0;
}

}  // namespace

int main(int argc, char** argv) try {
  config::CommonArgs common = config::parse_common_args(argc, argv);
  const Options o = parse(common.rest);
  log::set_threshold(log::Level::Warn);
  // One worker per messenger: the two ends then fit the two threads a loopback pair needs, and
  // per-message CPU is not inflated by idle workers polling. Ahead of the user's --set, which win.
  common.assignments.insert(common.assignments.begin(), {"ms.workers=1", "ms.keepalive_interval=0s"});
  const config::Config conf = config::load_config(common);

  // A process drives one DPDK port: on dpdk both messengers share one stack (its one worker runs
  // both ends, so callgrind sees the whole exchange on one thread); so do they on rdma, whose
  // counters then cover both ends. posix keeps a stack each.
  std::shared_ptr<NetworkStack> shared_stack;
  if (conf.get_string("ms.type") != "posix") {
    shared_stack = NetworkStack::create(conf);
    shared_stack->start();
  }
  auto make_messenger = [&](const EntityName& name) {
    return shared_stack ? Messenger::create(conf, name, shared_stack) : Messenger::create(conf, name);
  };
  auto server = make_messenger(EntityName{EntityType::Osd, 0});
  auto client = make_messenger(EntityName{EntityType::Client, 1});

  // Both messengers' workers append views of it: its count must be atomic (base/buffer_storage.h).
  BufferList payload;
  if (o.registered_payload) {
    payload = shared_stack ? shared_stack->allocate_payload(o.size, BufferSharing::across_threads)
                           : client->allocate_payload(o.size);
    payload.share_across_threads();
    for (const BufferSegment& s : payload.segments()) std::memset(s.data(), 'x', s.length());
  } else {
    const std::string bytes(o.size, 'x');
    payload.append(BufferSegment::copy_of(bytes.data(), bytes.size(), BufferSharing::across_threads));
  }

  Responder responder(o.pingpong, o.echo, payload);
  NetworkStack* counted = shared_stack && shared_stack->num_workers() == 1 ? shared_stack.get() : nullptr;
  Driver driver(o, payload, counted);
  server->set_default_policy(Policy::stateful_server());
  server->add_dispatcher(&responder);
  EntityAddr addr;
  EntityAddr::parse(listen_address_text(o.addr), &addr);
  if (server->bind(addr) != 0 || server->start() != 0) {
    std::fprintf(stderr, "msgr_bench: server failed to start\n");
    return 1;
  }
  client->set_default_policy(Policy::lossless_client());
  client->add_dispatcher(&driver);
  if (client->start() != 0) {
    std::fprintf(stderr, "msgr_bench: client failed to start\n");
    return 1;
  }
  if (o.warmup == 0) driver.mark_begin();
  driver.start(client->connect_to(EntityType::Osd, server->my_addrs()));
  driver.wait_done(std::chrono::seconds(600));

  auto& lat = driver.latencies_ns();
  std::sort(lat.begin(), lat.end());
  const double secs = driver.seconds();
  const double msgs = static_cast<double>(o.count);
  std::printf("mode=%s depth=%llu size=%zu msgs=%llu secs=%.3f msgs_per_s=%.0f MB_per_s=%.1f p50_us=%.1f "
              "p99_us=%.1f cpu_us_per_msg=%.2f",
              o.pingpong ? "pingpong" : "stream", static_cast<unsigned long long>(o.depth), o.size,
              static_cast<unsigned long long>(o.count), secs, msgs / secs, msgs * static_cast<double>(o.size) / secs / 1e6,
              percentile_us(lat, 0.50), percentile_us(lat, 0.99), driver.cpu_seconds_used() * 1e6 / msgs);
  for (const auto& [name, delta] : driver.counter_deltas()) std::printf(" c_%s=%llu", name.c_str(), static_cast<unsigned long long>(delta));
  std::printf("\n");
  std::fflush(stdout);
  client->shutdown();
  server->shutdown();
  client->wait();
  server->wait();
  if (shared_stack) shared_stack->stop();
  return 0;
} catch (const config::ConfigError& e) {
  std::fprintf(stderr, "msgr_bench: %s\n", e.what());
  return 2;
}
