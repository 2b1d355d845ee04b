// Socket-level benchmark of one transport (posix or dpdk, from ms.type): a server process and a
// client process, each one worker, talking through NetworkStack / ConnectedSocket only.
//
//   inet_bench [-c FILE] [--set k=v]... --role server|client --mode MODE --addr IP:PORT|[IPV6]:PORT [flags]
//
// Modes (the server must run the same mode):
//   pingpong     one connection, --size bytes each way, --count round trips after --warmup;
//                latency printed as one-way (RTT/2, as sockperf reports it) and as RTT.
//   bulk         one connection, the client sends as fast as it can until --bytes are sent or
//                --duration is over, then shuts down; the server answers with the byte count once
//                it read everything (end-to-end rate).
//   connections  the client opens --connections connections (at most --concurrency handshakes at
//                a time), then pings every one of them --rounds times while all stay open.
//   accept       for --duration, the client keeps --concurrency connections opening; the server
//                accepts and closes each at once; both print connections per second.
//   (connections and accept open one connection alone first and start the clock once it is
//   established: it resolves the peer's address, which the kernel's loopback never has to.)
// The server runs until the client is done (bulk/pingpong/connections: its last connection
// closed; accept: a second after the last accept) or --timeout. Every line printed is
// key=value pairs; tools/bench/inet-vs-kernel.sh puts runs side by side.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "config/cli.h"
#include "config/config.h"
#include "base/log.h"
#include "stack/dpdk/dpdk_stack.h"
#include "stack/network_stack.h"

using namespace bypass;
using Clock = std::chrono::steady_clock;

namespace {

enum class Mode { PingPong, Bulk, Connections, Accept };

struct Options {
  bool server = false;
  Mode mode = Mode::PingPong;
  SocketAddress addr;
  size_t size = 64;
  uint64_t count = 100000;
  uint64_t warmup = 10000;
  uint64_t bytes = uint64_t{4} << 30;
  uint64_t connections = 10000;
  uint64_t concurrency = 64;
  uint64_t rounds = 3;
  std::chrono::milliseconds duration{5000};
  std::chrono::milliseconds timeout{120000};
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "inet_bench: %s\n"
               "usage: inet_bench [-c FILE] [--set key=value]... --role server|client "
               "--mode pingpong|bulk|connections|accept --addr IP:PORT [--size B] [--count N] [--warmup N] "
               "[--bytes B] [--connections N] [--concurrency N] [--rounds N] [--duration T] [--timeout T]\n",
               why.c_str());
  std::exit(2);
}

Options parse(const std::vector<std::string>& args) {
  Options o;
  bool have_role = false, have_mode = false, have_addr = false;
  auto number = [](const std::string& flag, const std::string& value, bool size) {
    try {
      const int64_t n = size ? static_cast<int64_t>(config::parse_size(value)) : config::parse_int(value);
      if (n <= 0) throw config::ConfigError("'" + value + "' must be positive");
      return static_cast<uint64_t>(n);
    } catch (const config::ConfigError& e) {
      usage(flag + ": " + e.what());
    }
  };
  auto duration = [](const std::string& flag, const std::string& value) {
    try {
      const auto d = std::chrono::duration_cast<std::chrono::milliseconds>(config::parse_duration(value));
      if (d.count() <= 0) throw config::ConfigError("'" + value + "' must be positive");
      return d;
    } catch (const config::ConfigError& e) {
      usage(flag + ": " + e.what());
    }
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (i + 1 >= args.size()) usage("missing value for " + flag);
    const std::string& value = args[++i];
    if (flag == "--role") {
      if (value != "server" && value != "client") usage("--role: '" + value + "' is not server or client");
      o.server = value == "server";
      have_role = true;
    } else if (flag == "--mode") {
      const std::pair<const char*, Mode> modes[] = {
          {"pingpong", Mode::PingPong}, {"bulk", Mode::Bulk}, {"connections", Mode::Connections}, {"accept", Mode::Accept}};
      const auto* it = std::find_if(std::begin(modes), std::end(modes), [&](auto& m) { return value == m.first; });
      if (it == std::end(modes)) usage("--mode: '" + value + "' is not pingpong, bulk, connections or accept");
      o.mode = it->second;
      have_mode = true;
    } else if (flag == "--addr") {
      if (!SocketAddress::parse(value, &o.addr) || !(o.addr.is_ipv4() || o.addr.is_ipv6()) || o.addr.port() == 0)
        usage("--addr: '" + value + "' is not IP:PORT ([IPV6]:PORT) with a non-zero port");
      have_addr = true;
    } else if (flag == "--size") {
      o.size = number(flag, value, true);
    } else if (flag == "--count") {
      o.count = number(flag, value, false);
    } else if (flag == "--warmup") {
      o.warmup = value == "0" ? 0 : number(flag, value, false);
    } else if (flag == "--bytes") {
      o.bytes = number(flag, value, true);
    } else if (flag == "--connections") {
      o.connections = number(flag, value, false);
    } else if (flag == "--concurrency") {
      o.concurrency = number(flag, value, false);
    } else if (flag == "--rounds") {
      o.rounds = number(flag, value, false);
    } else if (flag == "--duration") {
      o.duration = duration(flag, value);
    } else if (flag == "--timeout") {
      o.timeout = duration(flag, value);
    } else {
      usage("unknown argument " + flag);
    }
  }
  if (!have_role || !have_mode || !have_addr) usage("--role, --mode and --addr are required");
  return o;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::atomic<bool> interrupted{false};

// One connection driven by readiness callbacks on the worker thread. `on_readable` consumes what
// it wants; send() queues bytes and keeps writing while the socket takes them.
class Conn {
 public:
  Conn(Worker& worker, ConnectedSocket sock) : worker_(worker), sock_(std::move(sock)) {}
  ~Conn() { close(); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  std::function<void(Conn&)> on_readable;   // data or EOF/error (check eof()/failed())
  std::function<void(Conn&)> on_connected;  // client side: handshake finished
  std::function<void(Conn&)> on_drained;    // a write-ready event emptied what send() queued

  void start(bool connecting) {
    connecting_ = connecting;
    set_interest(connecting ? kEventWritable : kEventReadable);
  }
  void send(BufferList data) {
    out_.append(std::move(data));
    flush();
  }
  // Reads what is there into `in`; false when nothing was (EAGAIN), EOF or an error.
  bool read_some() {
    if (!sock_) return false;
    const ssize_t n = sock_.zero_copy_read(in, 1 << 20);
    if (n > 0) return true;
    if (n == 0) eof_ = true;
    else if (n != -EAGAIN) failed_ = true;
    return false;
  }
  void close() {
    if (!sock_) return;
    set_interest(kEventNone);
    sock_.close();
    sock_ = ConnectedSocket();
  }
  bool eof() const { return eof_; }
  bool failed() const { return failed_; }
  bool open() const { return static_cast<bool>(sock_); }
  void shutdown() { sock_.shutdown(); }
  bool send_drained() const { return out_.empty(); }

  BufferList in;
  Clock::time_point mark;

 private:
  void set_interest(int mask) {
    if (!sock_) return;
    const int fd = sock_.fd();
    if (const int removed = interest_ & ~mask) worker_.center().delete_file_event(fd, removed);
    if (const int added = mask & ~interest_) {
      worker_.center().create_file_event(fd, added, [this](int, int fired) { on_event(fired); });
    }
    interest_ = mask;
  }
  void on_event(int fired) {
    if (connecting_) {
      const int state = sock_.is_connected();
      if (state == 0) return;
      connecting_ = false;
      if (state < 0) failed_ = true;
      set_interest(kEventReadable | (out_.empty() ? 0 : kEventWritable));
      if (on_connected) on_connected(*this);
      // on_connected may have retired a failed connection (accept mode counts a refusal and
      // closes it): nothing is left to read then.
      if (failed_ && sock_ && on_readable) on_readable(*this);
      return;
    }
    if ((fired & kEventWritable) && sock_) {
      flush();
      if (out_.empty() && on_drained) on_drained(*this);
    }
    if ((fired & kEventReadable) && sock_ && on_readable) on_readable(*this);
  }
  void flush() {
    while (!out_.empty() && sock_ && !connecting_) {
      const ssize_t n = sock_.send(out_, false);
      if (n == -EAGAIN) break;
      if (n < 0) {
        failed_ = true;
        out_.clear();
        break;
      }
    }
    if (sock_ && !connecting_) set_interest(kEventReadable | (out_.empty() ? 0 : kEventWritable));
  }

  Worker& worker_;
  ConnectedSocket sock_;
  BufferList out_;
  int interest_ = kEventNone;
  bool connecting_ = false;
  bool eof_ = false, failed_ = false;
};

BufferList filled(size_t n) {
  BufferList b;
  b.append_copy(std::string(n, 'x'));
  return b;
}

// ------------------------------------------------------------------------------------- server

class Server {
 public:
  Server(Worker& worker, const Options& o) : worker_(worker), o_(o) {}

  int start() {
    int rc = 0;
    worker_.center().submit_and_wait([&] {
      ListenOptions lopts;
      lopts.backlog = 65535;
      lopts.reuse_port = false;
      rc = worker_.listen(o_.addr, lopts, SocketOptions{}, &listener_);
      if (rc == 0)
        worker_.center().create_file_event(listener_.fd(), kEventReadable, [this](int, int) { accept_all(); });
    });
    return rc;
  }
  void stop() {
    worker_.center().submit_and_wait([&] {
      if (listener_) worker_.center().delete_file_event(listener_.fd(), kEventReadable);
      listener_ = ServerSocket();
      conns_.clear();
    });
  }
  std::promise<void> done;
  // accept mode: written on the worker thread, read by main() to tell when the client stopped.
  std::atomic<uint64_t> accepted{0};
  std::atomic<double> accept_seconds{0};  // first to latest accept
  Clock::time_point first_accept;

 private:
  void accept_all() {
    for (int i = 0; i < 256; ++i) {
      ConnectedSocket sock;
      SocketAddress peer;
      if (listener_.accept(&sock, SocketOptions{}, &peer, &worker_) != 0) return;
      if (accepted.fetch_add(1, std::memory_order_relaxed) == 0) first_accept = Clock::now();
      if (o_.mode == Mode::Accept) {
        sock.close();  // the accept path only: the client sees EOF and closes its side
        accept_seconds.store(seconds_since(first_accept), std::memory_order_relaxed);
        continue;
      }
      auto conn = std::make_unique<Conn>(worker_, std::move(sock));
      Conn* c = conn.get();
      c->on_readable = [this](Conn& c) { serve(c); };
      conns_.emplace(c, std::move(conn));
      ++live_;
      c->start(false);
    }
  }
  void serve(Conn& c) {
    while (c.read_some()) {
      if (o_.mode == Mode::Bulk) {
        received_ += c.in.length();
        c.in.clear();
      } else {
        c.send(std::move(c.in));
        c.in = BufferList();
      }
    }
    if (!c.eof() && !c.failed()) return;
    if (o_.mode == Mode::Bulk && c.eof()) {
      BufferList total;
      total.append_copy(&received_, sizeof(received_));
      c.send(std::move(total));
      c.shutdown();
      received_ = 0;
    }
    c.close();
    if (--live_ == 0) finish();
  }
  void finish() {
    if (finished_) return;
    finished_ = true;
    done.set_value();
  }

  Worker& worker_;
  const Options& o_;
  ServerSocket listener_;
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns_;
  uint64_t live_ = 0;
  uint64_t received_ = 0;
  bool finished_ = false;
};

// ------------------------------------------------------------------------------------- client

class Client {
 public:
  Client(Worker& worker, const Options& o, const config::Config& conf)
      : worker_(worker), o_(o), socket_options_(socket_options_from_config(conf)) {}
  std::promise<std::string> done;  // the result line, or "error=..."

  void start() {
    worker_.center().dispatch_external([this] {
      first_attempt_ = Clock::now();
      open_first();
    });
  }
  void stop() {
    worker_.center().submit_and_wait([this] {
      if (retry_timer_) worker_.center().cancel_timer(*retry_timer_);
      conns_.clear();
      graveyard_.clear();
    });
  }

 private:
  void open_first() {
    began_ = Clock::now();
    switch (o_.mode) {
      case Mode::PingPong: return open_one([this](Conn& c) { ping(c); });
      case Mode::Bulk: return open_one([this](Conn& c) { stream(c); });
      case Mode::Connections:
      case Mode::Accept: return open_more();
    }
  }

  // A dpdk server's port (its memif socket, which the scripts wait for) exists before its listener,
  // and a SYN that lands in between is answered with a reset. Until a connection has been made, a
  // refused one is retried every 100 ms within --timeout rather than failing the run.
  bool retry_before_first_connection(Conn& c) {
    if (connected_once_ || Clock::now() - first_attempt_ >= o_.timeout) return false;
    bury(c);
    if (o_.mode == Mode::Connections) {
      --in_flight_;
      --opened_;
    }
    retry_timer_ = worker_.center().create_timer(std::chrono::milliseconds(100), [this] {
      retry_timer_.reset();
      open_first();
    });
    return true;
  }

  Conn* open(std::function<void(Conn&)> on_connected, std::function<void(Conn&)> on_readable) {
    ConnectedSocket sock;
    if (const int rc = worker_.connect(o_.addr, socket_options_, &sock); rc != 0) {
      fail(std::string("connect: ") + socket_error_name(rc));
      return nullptr;
    }
    auto conn = std::make_unique<Conn>(worker_, std::move(sock));
    Conn* c = conn.get();
    c->on_connected = [this, cb = std::move(on_connected)](Conn& c) {
      if (!c.failed()) {
        connected_once_ = true;
        return cb(c);
      }
      if (o_.mode != Mode::Accept) {
        if (retry_before_first_connection(c)) return;
        return fail("connection to the server failed");
      }
      ++refused_;  // e.g. the accept queue overflowed: counted, not fatal
      --in_flight_;
      retire(c);
    };
    c->on_readable = std::move(on_readable);
    conns_.emplace(c, std::move(conn));
    c->start(true);
    return c;
  }

  void open_one(std::function<void(Conn&)> on_connected) {
    open(std::move(on_connected), [this](Conn& c) { o_.mode == Mode::PingPong ? pong(c) : bulk_reply(c); });
  }

  // pingpong: one message in flight; RTT from send to the last byte of the echo.
  void ping(Conn& c) {
    if (payload_.empty()) payload_ = filled(o_.size);
    c.mark = Clock::now();
    c.send(payload_);
  }
  void pong(Conn& c) {
    while (c.read_some()) {
    }
    if (c.eof() || c.failed()) return fail("the server closed the connection");
    if (c.in.length() < o_.size) return;
    c.in.trim_front(o_.size);
    const auto rtt = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - c.mark).count();
    if (++round_trips_ > o_.warmup) rtts_.push_back(static_cast<double>(rtt));
    if (round_trips_ == o_.warmup) began_ = Clock::now();
    if (rtts_.size() < o_.count) return ping(c);
    std::sort(rtts_.begin(), rtts_.end());
    auto pct = [&](double p) { return rtts_[std::min(rtts_.size() - 1, static_cast<size_t>(p * rtts_.size()))] / 1000.0; };
    char line[320];
    std::snprintf(line, sizeof(line),
                  "mode=pingpong size=%zu round_trips=%zu secs=%.3f p50_us=%.2f p99_us=%.2f p999_us=%.2f "
                  "rtt_p50_us=%.2f rtt_p99_us=%.2f",
                  o_.size, rtts_.size(), seconds_since(began_), pct(0.5) / 2, pct(0.99) / 2, pct(0.999) / 2,
                  pct(0.5), pct(0.99));
    finish(line);
  }

  // bulk: the same 256 KiB block is queued again and again (shared, never copied by the client).
  void stream(Conn& c) {
    block_ = filled(256 * 1024);
    began_ = Clock::now();
    c.on_drained = [this](Conn& c) { refill(c); };
    refill(c);
  }
  void refill(Conn& c) {
    bool time_up = false;
    while (sent_ < o_.bytes && c.send_drained()) {
      if (Clock::now() - began_ >= o_.duration) {
        time_up = true;
        break;
      }
      const uint64_t n = std::min<uint64_t>(block_.length(), o_.bytes - sent_);
      sent_ += n;
      c.send(block_.sub(0, n));
    }
    if ((time_up || sent_ >= o_.bytes) && c.send_drained() && !shut_) {
      shut_ = true;
      c.shutdown();
    }
  }
  void bulk_reply(Conn& c) {
    while (c.read_some()) {
    }
    if (c.in.length() < sizeof(uint64_t)) {
      if (c.eof() || c.failed()) fail("the server closed without reporting the byte count");
      return;
    }
    uint64_t received = 0;
    c.in.copy_out(0, sizeof(received), &received);
    const double secs = seconds_since(began_);
    char line[200];
    std::snprintf(line, sizeof(line), "mode=bulk bytes=%llu secs=%.3f gbit_per_s=%.2f server_received=%llu",
                  static_cast<unsigned long long>(sent_), secs, static_cast<double>(sent_) * 8 / secs / 1e9,
                  static_cast<unsigned long long>(received));
    if (received != sent_) return fail("the server received " + std::to_string(received) + " of " + std::to_string(sent_));
    finish(line);
  }

  // connections / accept: keep `concurrency` handshakes in flight, after one warm-up connection
  // alone: the first frames to a new neighbour wait for ARP, whose queue holds only
  // inet.arp_pending_per_address of them (the rest are lost and cost a whole initial RTO), and
  // loopback, the kernel's side, resolves nothing. The clock starts once it is established.
  void open_more() {
    while (!finished_ && in_flight_ < (warmed_up_ ? o_.concurrency : 1) && want_more()) {
      ++in_flight_;
      ++opened_;
      open([this](Conn& c) { connected(c); }, [this](Conn& c) { connection_readable(c); });
    }
  }
  bool want_more() const {
    if (o_.mode == Mode::Connections) return opened_ < o_.connections;
    return Clock::now() - began_ < o_.duration;
  }
  void connected(Conn& c) {
    --in_flight_;
    ++established_;
    if (!warmed_up_) {
      warmed_up_ = true;
      began_ = Clock::now();
      warm_up_timeouts_ = retransmission_timeouts();
    }
    if (o_.mode == Mode::Connections) {
      if (established_ == o_.connections) {
        connect_secs_ = seconds_since(began_);
        connect_timeouts_ = retransmission_timeouts() - warm_up_timeouts_;
        round_began_ = Clock::now();
        ping_all();
      }
    }
    open_more();
    (void)c;
  }
  void ping_all() {
    pending_echoes_ = conns_.size();
    for (auto& [conn, owned] : conns_) conn->send(filled(o_.size));
  }
  void connection_readable(Conn& c) {
    while (c.read_some()) {
    }
    if (o_.mode == Mode::Accept) {
      if (!c.eof() && !c.failed()) return;
      ++completed_;  // the server closed it: done with this one
      retire(c);
      return;
    }
    if (c.eof() || c.failed()) return fail("a connection closed early");
    if (c.in.length() < o_.size) return;
    c.in.trim_front(o_.size);
    if (--pending_echoes_ > 0) return;
    if (++rounds_ < o_.rounds) return ping_all();
    const double round_secs = seconds_since(round_began_) / static_cast<double>(o_.rounds);
    char line[240];
    std::snprintf(line, sizeof(line),
                  "mode=connections connections=%zu connect_secs=%.3f conn_per_s=%.0f ping_all_ms=%.2f "
                  "connect_timeouts=%llu",
                  conns_.size(), connect_secs_, static_cast<double>(established_ - 1) / connect_secs_, round_secs * 1e3,
                  static_cast<unsigned long long>(connect_timeouts_));
    finish(line);
  }

  // accept mode: drop a finished connection (destroyed after the current callback returns), open
  // the next, report once the duration is over and the last one is gone.
  void retire(Conn& c) {
    bury(c);
    open_more();
    if (want_more() || !conns_.empty()) return;
    char line[200];
    const double secs = seconds_since(began_);
    std::snprintf(line, sizeof(line), "mode=accept connections=%llu refused=%llu secs=%.3f conn_per_s=%.0f",
                  static_cast<unsigned long long>(completed_), static_cast<unsigned long long>(refused_), secs,
                  static_cast<double>(completed_) / secs);
    finish(line);
  }

  // The dpdk stack's retransmission timeouts so far (0 on posix): one lost SYN or SYN-ACK costs a
  // whole initial RTO (1 s), which then dominates a connection rate.
  uint64_t retransmission_timeouts() const {
    auto* dpdk = dynamic_cast<DpdkWorker*>(&worker_);
    return dpdk != nullptr ? dpdk->inet().stats().tcp_timeouts : 0;
  }
  // Closes `c` and destroys it after the current callback returns.
  void bury(Conn& c) {
    if (auto it = conns_.find(&c); it != conns_.end()) {
      c.close();
      graveyard_.push_back(std::move(it->second));
      conns_.erase(it);
      if (graveyard_.size() == 1) worker_.center().dispatch_external([this] { graveyard_.clear(); });
    }
  }
  void fail(const std::string& why) { finish("error=" + why); }
  void finish(const std::string& line) {
    if (finished_) return;
    finished_ = true;
    done.set_value(line);
  }

  Worker& worker_;
  const Options& o_;
  SocketOptions socket_options_;
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns_;
  std::vector<std::unique_ptr<Conn>> graveyard_;
  Clock::time_point began_, round_began_, first_attempt_;
  std::optional<EventCenter::TimerId> retry_timer_;  // a retry of the first connect, pending
  bool connected_once_ = false;
  BufferList payload_, block_;
  std::vector<double> rtts_;
  uint64_t round_trips_ = 0, sent_ = 0, opened_ = 0, in_flight_ = 0, established_ = 0, completed_ = 0, refused_ = 0;
  size_t pending_echoes_ = 0;
  uint64_t rounds_ = 0;
  double connect_secs_ = 0;
  uint64_t connect_timeouts_ = 0, warm_up_timeouts_ = 0;
  bool warmed_up_ = false;
  bool shut_ = false, finished_ = false;
};

// The dpdk worker's data-path counters, so a slow run shows why (losses, timeouts, copies).
void print_dpdk_counters(Worker& worker, const char* role) {
  auto* dpdk = dynamic_cast<DpdkWorker*>(&worker);
  if (dpdk == nullptr) return;
  worker.center().submit_and_wait([&] {
    const inet::InetStats& s = dpdk->inet().stats();
    const TxChainCounters& tx = dpdk->device().tx_counters();
    std::printf("role=%s counters: tcp_sent=%llu tcp_received=%llu retransmitted=%llu timeouts=%llu "
                "fast_retransmits=%llu bad_checksum=%llu tx_frames=%llu attached_bytes=%llu copied_bytes=%llu "
                "checksum_offloads=%llu tso_segments=%llu cut_segments=%llu cut_frames=%llu tx_queue_drops=%llu "
                "tx_mbuf_failures=%llu tx_backlog=%zu arp_pending_dropped=%llu "
                "syn_dropped_backlog=%llu syn_cookies_sent=%llu rst_sent=%llu challenge_acks=%llu time_wait_reopened=%llu\n",
                role, static_cast<unsigned long long>(s.tcp_segments_sent),
                static_cast<unsigned long long>(s.tcp_segments_received),
                static_cast<unsigned long long>(s.tcp_retransmitted_segments),
                static_cast<unsigned long long>(s.tcp_timeouts), static_cast<unsigned long long>(s.tcp_fast_retransmits),
                static_cast<unsigned long long>(s.tcp_bad_checksum), static_cast<unsigned long long>(tx.frames),
                static_cast<unsigned long long>(tx.attached_bytes), static_cast<unsigned long long>(tx.copied_bytes),
                static_cast<unsigned long long>(tx.checksum_offloads),
                static_cast<unsigned long long>(tx.tso_segments), static_cast<unsigned long long>(tx.cut_segments),
                static_cast<unsigned long long>(tx.cut_frames),
                static_cast<unsigned long long>(dpdk->device().tx_dropped()),
                static_cast<unsigned long long>(dpdk->device().tx_alloc_failures()), dpdk->device().backlog(),
                static_cast<unsigned long long>(s.arp_pending_dropped),
                static_cast<unsigned long long>(s.tcp_syn_dropped_backlog),
                static_cast<unsigned long long>(s.tcp_syn_cookies_sent), static_cast<unsigned long long>(s.tcp_rst_sent),
                static_cast<unsigned long long>(s.tcp_challenge_acks),
                static_cast<unsigned long long>(s.tcp_time_wait_reopened));
  });
}

// A userspace stack finishes a close only while its process runs: after closing every connection,
// wait until each is closed in both directions (or in TIME-WAIT) and the TX queue took every frame,
// or `deadline`. Exiting at once stranded the peer: the bulk server's byte count and FIN sat behind
// ~2,000 ACKs in a full memif ring when it exited, and the client retransmitted its FIN until
// --timeout; the connections client's FINs never left, and the server waited for them until its own
// --timeout.
bool wait_until_finished(Worker& worker, Clock::time_point deadline) {
  auto* dpdk = dynamic_cast<DpdkWorker*>(&worker);
  if (dpdk == nullptr) return true;  // the kernel finishes closes by itself
  for (;;) {
    bool done = false;
    worker.center().submit_and_wait([&] {
      done = dpdk->inet().tcp().unfinished_connections() == 0 && dpdk->device().backlog() == 0;
    });
    if (done) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Bounded: a peer that already left never answers.
constexpr std::chrono::seconds kLinger{5};

}  // namespace

int main(int argc, char** argv) try {
  config::CommonArgs common = config::parse_common_args(argc, argv);
  const Options o = parse(common.rest);
  if (std::getenv("BYPASS_LOG") == nullptr) log::set_threshold(log::Level::Warn);
  // One worker, no keepalive chatter; ahead of the user's --set, which win.
  common.assignments.insert(common.assignments.begin(), {"ms.workers=1"});
  const config::Config conf = config::load_config(common);
  std::signal(SIGINT, [](int) { interrupted = true; });
  std::signal(SIGTERM, [](int) { interrupted = true; });

  std::shared_ptr<NetworkStack> stack = NetworkStack::create(conf);
  stack->start();
  Worker& worker = *stack->worker(0);
  const auto deadline = Clock::now() + o.timeout;
  int status = 0;
  if (o.server) {
    Server server(worker, o);
    if (const int rc = server.start(); rc != 0) {
      std::fprintf(stderr, "inet_bench: listen on %s: %s\n", o.addr.to_string().c_str(), socket_error_name(rc));
      stack->stop();
      return 1;
    }
    std::printf("listening=%s transport=%s\n", o.addr.to_string().c_str(), stack->type().c_str());
    std::fflush(stdout);
    auto finished = server.done.get_future();
    // accept mode ends once the client stopped connecting: a second without a new connection.
    uint64_t last_count = 0;
    auto last_change = Clock::now();
    bool ok = false;
    while (!interrupted && Clock::now() < deadline && !ok) {
      ok = finished.wait_for(std::chrono::milliseconds(100)) == std::future_status::ready;
      if (o.mode != Mode::Accept) continue;
      const uint64_t count = server.accepted.load(std::memory_order_relaxed);
      if (count != last_count) {
        last_count = count;
        last_change = Clock::now();
      } else if (count > 0 && Clock::now() - last_change > std::chrono::seconds(1)) {
        ok = true;
      }
    }
    const double accept_seconds = server.accept_seconds.load(std::memory_order_relaxed);
    if (o.mode == Mode::Accept && accept_seconds > 0)
      std::printf("role=server mode=accept accepted=%llu secs=%.3f accept_per_s=%.0f\n",
                  static_cast<unsigned long long>(server.accepted.load()), accept_seconds,
                  static_cast<double>(server.accepted.load()) / accept_seconds);
    if (!ok) std::printf("role=server error=%s\n", interrupted ? "interrupted" : "timed out");
    status = ok ? 0 : 1;
    server.stop();
    if (ok && !wait_until_finished(worker, std::min(deadline, Clock::now() + kLinger)))
      std::fprintf(stderr, "inet_bench: server: connections still open after the linger\n");
    print_dpdk_counters(worker, "server");
  } else {
    Client client(worker, o, conf);
    auto result = client.done.get_future();
    client.start();
    std::string line;
    while (!interrupted && Clock::now() < deadline) {
      if (result.wait_for(std::chrono::milliseconds(100)) == std::future_status::ready) {
        line = result.get();
        break;
      }
    }
    if (line.empty()) line = interrupted ? "error=interrupted" : "error=timed out after --timeout";
    std::printf("role=client transport=%s %s\n", stack->type().c_str(), line.c_str());
    status = line.rfind("error=", 0) == 0 ? 1 : 0;
    std::fflush(stdout);
    client.stop();
    if (status == 0 && !wait_until_finished(worker, std::min(deadline, Clock::now() + kLinger)))
      std::fprintf(stderr, "inet_bench: client: connections still open after the linger\n");
    print_dpdk_counters(worker, "client");
  }
  std::fflush(stdout);
  stack->stop();
  return status;
} catch (const std::exception& e) {
  std::fprintf(stderr, "inet_bench: %s\n", e.what());
  return 1;
}
