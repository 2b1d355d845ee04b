#include "tools/bypass-pmd/stack_commands.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "base/log.h"
#include "stack/dpdk/dpdk_stack.h"
#include "tools/bypass-pmd/commands.h"
#include "msgr/admin/admin_server.h"
#include "tools/bypass-pmd/json.h"
#include "tools/bypass-pmd/stack_connections.h"
#include "tools/bypass-pmd/stack_report.h"

namespace bypass::tools {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string ip_text(uint32_t host_order) { return inet::Ipv4Address{host_order}.to_string(); }

// ------------------------------------------------------------------------------------------------

struct Echo6State;

class StackSession {
 public:
  StackSession(const StackCommand& command, const config::Config& config, std::atomic<bool>& stop,
               std::atomic<bool>& dump, const std::atomic<int>& stop_signal)
      : command_(command), config_(config), stop_(stop), dump_(dump), stop_signal_(stop_signal) {
    stack_ = std::make_shared<DpdkStack>(config);
    try {
      stack_->start();  // returns once our IPv6 addresses passed Duplicate Address Detection
    } catch (...) {     // e.g. one of them is another node's: the port goes, then the error
      stack_.reset();
      release_dpdk_ports();
      throw;
    }
  }
  ~StackSession() {
    if (stack_) stack_->stop();
    stack_.reset();
    release_dpdk_ports();
  }

  int run() {
    switch (command_.kind) {
      case StackCommand::Kind::Ping: return ping();
      case StackCommand::Kind::Arp: return arp();
      case StackCommand::Kind::Neigh: return neigh();
      case StackCommand::Kind::EchoServer:
      case StackCommand::Kind::DiscardServer: return serve();
      case StackCommand::Kind::Send: return send();
    }
    return 2;
  }

 private:
  std::vector<WorkerState> snapshot() {
    std::vector<WorkerState> out(stack_->num_workers());
    for (unsigned i = 0; i < out.size(); ++i) {
      out[i].worker = i;
      stack_->run_on_worker(i, [&](inet::InetStack& inet) {
        out[i].arp = inet.arp().entries();
        out[i].ipv6 = inet.ipv6_enabled();
        if (out[i].ipv6) {
          out[i].neighbors = inet.neighbors().entries();
          out[i].addresses = inet.neighbors().addresses();
        }
        out[i].connections = inet.tcp().connections();
        out[i].listening = inet.tcp().listening_ports();
      });
    }
    return out;
  }
  void dump_state() {
    const auto state = snapshot();
    print_arp(state, command_.json);
    print_neighbors(state, command_.json);
    print_connections(state, command_.json);
    PortState port;
    pmd::Port& device = stack_->ports().port(0);
    port.isolated = device.info().flow_isolated;
    for (const pmd::QueueStats& queue : device.stats().rx_queues) port.rx_queue_packets.push_back(queue.packets);
    if (const StackFlowRules* rules = stack_->flow_rules()) port.flow_rules = rules->describe();
    print_port(port, command_.json);
  }
  // Sleeps until `until`, serving SIGUSR1 dumps; false when interrupted.
  bool sleep_until(Clock::time_point until) {
    while (Clock::now() < until) {
      if (stop_.load()) return false;
      if (dump_.exchange(false)) dump_state();
      std::this_thread::sleep_for(std::min<Clock::duration>(5ms, until - Clock::now()));
    }
    return !stop_.load();
  }
  void say(const std::string& text) {
    std::printf("%s\n", text.c_str());
    std::fflush(stdout);
  }

  int ping();
  int arp();
  int neigh();
  // ICMPv6 echo requests (RFC 4443 §4.1) from our dpdk.host_ipv6; replies come back through
  // every worker's echo-reply receiver, installed while the session pings.
  void install_echo6_receivers(const std::shared_ptr<Echo6State>& state);
  std::string send_echo6(const std::shared_ptr<Echo6State>& state, const inet::Ipv6Address& target,
                         uint16_t sequence);
  int serve();
  int send();

  const StackCommand& command_;
  const config::Config& config_;
  std::atomic<bool>& stop_;
  std::atomic<bool>& dump_;
  const std::atomic<int>& stop_signal_;
  std::shared_ptr<DpdkStack> stack_;
};

// One echo's outcome as ping(8) prints it, for IPv4 and IPv6 alike.
struct PingResult {
  bool reply = false;
  uint16_t sequence = 0;
  size_t bytes = 0;  // ICMP(v6) message length of the reply (header + data)
  unsigned ttl = 0;  // the reply's TTL or hop limit
  double rtt_ms = 0;
  bool data_intact = true;  // RFC 792, RFC 4443 §4.2: the reply returns the request's data unchanged
  std::string from;
};

// Echo results cross from the worker thread to the tool thread here (the tool polls every 10 ms,
// between its checks for signals).
struct EchoResults {
  std::mutex mutex;
  std::deque<PingResult> results;
  void push(const PingResult& r) {
    std::lock_guard lock(mutex);
    results.push_back(r);
  }
  std::vector<PingResult> take() {
    std::lock_guard lock(mutex);
    std::vector<PingResult> out(results.begin(), results.end());
    results.clear();
    return out;
  }
};

// ICMPv6 echo bookkeeping shared by the tool thread (sends, timeouts) and the workers (replies).
struct Echo6State {
  std::mutex mutex;
  uint16_t identifier = 0;
  size_t data_bytes = 0;
  std::map<uint16_t, Clock::time_point> outstanding;  // sequence -> sent at
  std::deque<PingResult> results;
  // Replies, and requests older than `timeout` as timeouts (all outstanding ones when `flush`).
  std::vector<PingResult> take(std::chrono::nanoseconds timeout, bool flush) {
    std::lock_guard lock(mutex);
    const auto now = Clock::now();
    for (auto it = outstanding.begin(); it != outstanding.end();) {
      if (flush || now - it->second > timeout) {
        PingResult r;
        r.sequence = it->first;
        results.push_back(r);
        it = outstanding.erase(it);
      } else {
        ++it;
      }
    }
    std::vector<PingResult> out(results.begin(), results.end());
    results.clear();
    return out;
  }
};

// The request's data: byte i is i mod 256, so a reply's data can be checked without a copy kept.
uint8_t echo_data_byte(size_t i) { return static_cast<uint8_t>(i); }

void StackSession::install_echo6_receivers(const std::shared_ptr<Echo6State>& state) {
  for (unsigned i = 0; i < stack_->num_workers(); ++i) {
    stack_->run_on_worker(i, [&state](inet::InetStack& inet) {
      if (!state) {
        inet.ipv6().icmp().set_echo_reply_receiver(nullptr);
        return;
      }
      inet.ipv6().icmp().set_echo_reply_receiver(
          [state](const inet::Ipv6Header& ip, const inet::Icmpv6Header& icmp, const BufferList& message) {
            const auto now = Clock::now();
            if ((icmp.rest >> 16) != state->identifier) return;  // another pinger's
            const auto sequence = static_cast<uint16_t>(icmp.rest);
            bool intact = message.length() == inet::Icmpv6Header::kLength + state->data_bytes;
            if (intact) {
              size_t at = 0;
              for (const BufferSegment& segment : message.segments()) {
                for (size_t k = 0; k < segment.length() && intact; ++k, ++at) {
                  if (at >= inet::Icmpv6Header::kLength &&
                      static_cast<uint8_t>(segment.data()[k]) != echo_data_byte(at - inet::Icmpv6Header::kLength))
                    intact = false;
                }
              }
            }
            std::lock_guard lock(state->mutex);
            const auto sent = state->outstanding.find(sequence);
            if (sent == state->outstanding.end()) return;  // late (already a timeout) or duplicated
            PingResult r;
            r.reply = true;
            r.sequence = sequence;
            r.bytes = message.length();
            r.ttl = ip.hop_limit;
            r.rtt_ms = std::chrono::duration<double, std::milli>(now - sent->second).count();
            r.data_intact = intact;
            r.from = ip.source.to_string();
            state->outstanding.erase(sent);
            state->results.push_back(std::move(r));
          });
    });
  }
}

std::string StackSession::send_echo6(const std::shared_ptr<Echo6State>& state, const inet::Ipv6Address& target,
                                     uint16_t sequence) {
  std::string error;
  stack_->run_on_worker(stack_->worker_for_peer(target), [&](inet::InetStack& inet) {
    const size_t data = state->data_bytes;
    BufferSegment head = BufferSegment::allocate(inet::kIpv6FrameHeadroom + inet::Icmpv6Header::kLength);
    BufferSegment body_bytes = BufferSegment::allocate(data);
    for (size_t i = 0; i < data; ++i) body_bytes.data()[i] = static_cast<char>(echo_data_byte(i));
    BufferList body;
    if (data != 0) body.append(std::move(body_bytes));
    const inet::Icmpv6Header request =
        inet::Icmpv6Header::echo(inet::Icmpv6Header::kEchoRequest, state->identifier, sequence);
    request.emit(reinterpret_cast<uint8_t*>(head.data()) + inet::kIpv6FrameHeadroom,
                 inet.settings().ipv6.address, target, body);
    inet::Packet frame;
    frame.data.append(std::move(head));
    frame.data.append(std::move(body));
    {
      std::lock_guard lock(state->mutex);
      state->outstanding[sequence] = Clock::now();
    }
    // A request larger than the path MTU is fragmented (RFC 8200 §4.5), as ping6 -s does.
    if (!inet.ipv6().send(target, inet::kIpv6Icmpv6, std::move(frame), true)) {
      std::lock_guard lock(state->mutex);
      state->outstanding.erase(sequence);
      error = "no route (outside dpdk.host_ipv6's prefix and no dpdk.gateway_ipv6)";
    }
  });
  return error;
}

int StackSession::ping() {
  const StackCommand& c = command_;
  const bool v6 = c.target_ipv6.has_value();
  const inet::Ipv4Address target4{c.target_ip};
  const std::string target = v6 ? c.target_ipv6->to_string() : target4.to_string();
  const unsigned worker = v6 ? stack_->worker_for_peer(*c.target_ipv6) : stack_->worker_for_peer(c.target_ip);
  const auto identifier = static_cast<uint16_t>(getpid());
  auto results = std::make_shared<EchoResults>();
  std::shared_ptr<Echo6State> echo6;
  if (v6) {
    echo6 = std::make_shared<Echo6State>();
    echo6->identifier = identifier;
    echo6->data_bytes = c.data_bytes;
    install_echo6_receivers(echo6);
  }
  const std::string host = v6 ? stack_->dpdk_worker(0).host_ipv6().to_string() : ip_text(stack_->dpdk_worker(0).host_ip());
  if (c.json) {
    Json j;
    j.begin_object().field("type", "start").field("target", target).field("source", host)
        .field("data_bytes", uint64_t{c.data_bytes}).field("worker", worker).end_object();
    say(j.str());
  } else {
    say("PING " + target + " from " + host + ": " + std::to_string(c.data_bytes) + " data bytes");
  }
  uint64_t transmitted = 0, received = 0, corrupted = 0, completed = 0;
  std::vector<double> rtts;
  auto report = [&](const PingResult& r) {
    ++completed;
    if (r.reply) {
      ++received;
      rtts.push_back(r.rtt_ms);
      if (!r.data_intact) ++corrupted;
    }
    if (c.json) {
      Json j;
      j.begin_object().field("type", r.reply ? "reply" : "timeout").field("seq", unsigned{r.sequence})
          .field("from", r.reply ? r.from : target);
      if (r.reply) j.field("bytes", uint64_t{r.bytes}).field(v6 ? "hop_limit" : "ttl", r.ttl).field("rtt_ms", r.rtt_ms)
          .field("data_intact", r.data_intact);
      say(j.end_object().str());
    } else if (r.reply) {
      // ping(8) and ping6(8) alike print the hop limit as ttl=.
      char line[200];
      std::snprintf(line, sizeof line, "%zu bytes from %s: icmp_seq=%u ttl=%u time=%.3f ms%s", r.bytes,
                    r.from.c_str(), r.sequence, r.ttl, r.rtt_ms,
                    r.data_intact ? "" : " (wrong data: the reply does not return the request's bytes)");
      say(line);
    } else {
      say("no reply for icmp_seq=" + std::to_string(r.sequence) + " within " + config::format_duration(c.timeout));
    }
  };
  auto take = [&](bool flush) {
    if (v6) return echo6->take(c.timeout, flush);
    return results->take();
  };
  const auto start = Clock::now();
  bool interrupted = false;
  for (uint64_t seq = 1; c.count == 0 || seq <= c.count; ++seq) {
    std::string error;
    if (v6) {
      error = send_echo6(echo6, *c.target_ipv6, static_cast<uint16_t>(seq));
    } else {
      stack_->run_on_worker(worker, [&](inet::InetStack& inet) {
        error = inet.echo().request(target4, identifier, static_cast<uint16_t>(seq), c.data_bytes, c.timeout,
                                    [results](const inet::EchoResult& e) {
                                      PingResult r;
                                      r.reply = e.outcome == inet::EchoResult::Outcome::Reply;
                                      r.sequence = e.sequence;
                                      r.bytes = e.bytes;
                                      r.ttl = e.ttl;
                                      r.rtt_ms = std::chrono::duration<double, std::milli>(e.rtt).count();
                                      r.data_intact = e.data_intact;
                                      r.from = e.peer.to_string();
                                      results->push(r);
                                    });
      });
    }
    if (!error.empty()) {
      if (echo6) install_echo6_receivers(nullptr);
      throw std::runtime_error("stack ping " + target + ": " + error);
    }
    ++transmitted;
    const bool last = c.count != 0 && seq == c.count;
    // After the last request wait for its reply or timeout; otherwise until the next is due.
    const auto until = last ? Clock::now() + c.timeout + 50ms : start + c.interval * static_cast<int64_t>(seq);
    while (Clock::now() < until) {
      if (!sleep_until(std::min(until, Clock::now() + 10ms))) break;
      for (const auto& r : take(false)) report(r);
      if (last && completed == transmitted) break;
    }
    if (stop_.load()) {
      interrupted = true;
      break;
    }
  }
  for (const auto& r : take(!interrupted)) report(r);
  if (echo6) install_echo6_receivers(nullptr);
  const double elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  double min = 0, max = 0, avg = 0, mdev = 0;
  if (!rtts.empty()) {
    min = *std::min_element(rtts.begin(), rtts.end());
    max = *std::max_element(rtts.begin(), rtts.end());
    double sum = 0, squares = 0;
    for (double v : rtts) sum += v, squares += v * v;
    avg = sum / rtts.size();
    mdev = std::sqrt(std::max(0.0, squares / rtts.size() - avg * avg));  // as ping(8) computes it
  }
  const double loss = transmitted ? 100.0 * static_cast<double>(transmitted - received) / transmitted : 0;
  if (c.json) {
    Json j;
    j.begin_object().field("type", "summary").field("target", target).field("transmitted", transmitted)
        .field("received", received).field("loss_percent", loss).field("corrupted", corrupted)
        .field("time_ms", elapsed_ms).field("interrupted", interrupted);
    if (!rtts.empty()) j.field("min_ms", min).field("avg_ms", avg).field("max_ms", max).field("mdev_ms", mdev);
    say(j.end_object().str());
  } else {
    char line[200];
    say("--- " + target + " ping statistics ---");
    std::snprintf(line, sizeof line, "%lu packets transmitted, %lu received, %.4g%% packet loss, time %.0fms%s",
                  static_cast<unsigned long>(transmitted), static_cast<unsigned long>(received), loss, elapsed_ms,
                  corrupted ? (", " + std::to_string(corrupted) + " with wrong data").c_str() : "");
    say(line);
    if (!rtts.empty()) {
      std::snprintf(line, sizeof line, "rtt min/avg/max/mdev = %.3f/%.3f/%.3f/%.3f ms", min, avg, max, mdev);
      say(line);
    }
  }
  if (c.state) dump_state();
  return received > 0 && corrupted == 0 ? 0 : 1;  // ping(8): 1 when no reply came back
}

int StackSession::neigh() {
  const StackCommand& c = command_;
  // NeighborCache resolves an address when a packet is to go there (RFC 4861 §7.2.2): one ICMPv6
  // echo request per target starts it, on the worker that receives the target's ND traffic (the
  // learn hook copies the answer to every other worker).
  std::shared_ptr<Echo6State> echo6;
  if (!c.neigh_targets.empty()) {
    echo6 = std::make_shared<Echo6State>();
    echo6->identifier = static_cast<uint16_t>(getpid());
    install_echo6_receivers(echo6);
    uint16_t sequence = 0;
    for (const inet::Ipv6Address& ip : c.neigh_targets) {
      if (const std::string error = send_echo6(echo6, ip, ++sequence); !error.empty()) {
        install_echo6_receivers(nullptr);
        throw std::runtime_error("stack neigh " + ip.to_string() + ": " + error);
      }
    }
  }
  auto known = [&](const inet::Ipv6Address& ip) {
    bool found = false;
    stack_->run_on_worker(stack_->worker_for_peer(ip), [&](inet::InetStack& inet) {
      found = inet.neighbors().lookup(ip).has_value();
    });
    return found;
  };
  auto resolved = [&] {
    return std::all_of(c.neigh_targets.begin(), c.neigh_targets.end(), known);
  };
  const auto until = Clock::now() + c.timeout;
  while (!c.neigh_targets.empty() && Clock::now() < until && !resolved()) {
    if (!sleep_until(std::min(until, Clock::now() + 10ms))) break;
  }
  // The echo replies are not reported; a moment for them to arrive keeps them from reaching a
  // worker after the receivers are gone (they would be counted as unexpected nowhere, but quietly).
  if (echo6) {
    sleep_until(std::min(until, Clock::now() + 100ms));
    install_echo6_receivers(nullptr);
  }
  const bool all = resolved();
  const auto state = snapshot();
  print_neighbors(state, c.json);
  if (c.state) print_connections(state, c.json);
  if (!all && !c.json) {
    for (const inet::Ipv6Address& ip : c.neigh_targets) {
      if (!known(ip))
        std::fprintf(stderr, "bypass-pmd: stack neigh: no Neighbor Advertisement from %s within %s\n",
                     ip.to_string().c_str(), config::format_duration(c.timeout).c_str());
    }
  }
  return all ? 0 : 1;
}

int StackSession::arp() {
  const StackCommand& c = command_;
  // Each target is resolved by the worker that will receive its replies' ports-less traffic; the
  // ARP reply itself is copied to every worker (DpdkWorker::share_arp).
  for (uint32_t ip : c.arp_targets) {
    stack_->run_on_worker(stack_->worker_for_peer(ip), [&](inet::InetStack& inet) {
      inet.arp().resolve(inet::Ipv4Address{ip});
    });
  }
  auto resolved = [&] {
    for (uint32_t ip : c.arp_targets) {
      bool found = false;
      stack_->run_on_worker(stack_->worker_for_peer(ip), [&](inet::InetStack& inet) {
        found = inet.arp().lookup(inet::Ipv4Address{ip}).has_value();
      });
      if (!found) return false;
    }
    return true;
  };
  const auto until = Clock::now() + c.timeout;
  while (Clock::now() < until && !resolved()) {
    if (!sleep_until(std::min(until, Clock::now() + 10ms))) break;
  }
  const bool all = resolved();
  const auto state = snapshot();
  print_arp(state, c.json);
  if (c.state) print_connections(state, c.json);
  if (!all && !c.json) {
    for (uint32_t ip : c.arp_targets) {
      bool found = false;
      stack_->run_on_worker(stack_->worker_for_peer(ip), [&](inet::InetStack& inet) {
        found = inet.arp().lookup(inet::Ipv4Address{ip}).has_value();
      });
      if (!found)
        std::fprintf(stderr, "bypass-pmd: stack arp: no reply from %s within %s\n", ip_text(ip).c_str(),
                     config::format_duration(c.timeout).c_str());
    }
  }
  return all ? 0 : 1;
}

int StackSession::serve() {
  const StackCommand& c = command_;
  const bool echo = c.kind == StackCommand::Kind::EchoServer;
  const SocketOptions socket_options = socket_options_from_config(config_);
  ListenOptions listen_options = listen_options_from_config(config_);
  listen_options.reuse_port = true;  // every worker listens; RSS or pmd's redirect picks one per flow
  const unsigned workers = stack_->num_workers();
  const uint32_t host = stack_->dpdk_worker(0).host_ip();
  // ms.admin_socket / ms.metrics_address: bypass-admin and Prometheus see the stack while it serves.
  const admin::ScopedAdminAttachment admin(config_, stack_.get());
  std::vector<ServerSocket> listeners(workers);
  ServerTotals totals;
  bench::ConnectionSet connections(*stack_);
  for (unsigned i = 0; i < workers; ++i) {
    Worker& w = *stack_->worker(i);
    int rc = 0;
    w.center().submit_and_wait([&, i] {
      rc = w.listen(SocketAddress::ipv4(host, c.port), listen_options, socket_options, &listeners[i]);
      if (rc < 0) return;
      w.center().create_file_event(listeners[i].fd(), kEventReadable, [&, i](int, int) {
        for (int n = 0; n < 64 && listeners[i]; ++n) {
          ConnectedSocket socket;
          const int r = listeners[i].accept(&socket, socket_options, nullptr, &w);
          if (r == -EAGAIN) return;
          if (r < 0) {
            BYPASS_LOG(Warn, "bypass-pmd", "accept on port %u: %s", c.port, socket_error_name(r));
            return;
          }
          totals.accepted.fetch_add(1, std::memory_order_relaxed);
          if (echo)
            connections.add(w, std::make_unique<bench::EchoServerConnection>(w, std::move(socket), &totals.received));
          else
            connections.add(w, std::make_unique<DiscardConnection>(w, std::move(socket), totals));
        }
      });
    });
    if (rc < 0) {
      for (unsigned k = 0; k < i; ++k) {
        stack_->worker(k)->center().submit_and_wait([&, k] {
          stack_->worker(k)->center().delete_file_event(listeners[k].fd(), kEventReadable);
          listeners[k] = ServerSocket();
        });
      }
      throw std::runtime_error("stack " + c.name + ": listen on " + ip_text(host) + ":" + std::to_string(c.port) +
                               ": " + socket_error_name(rc));
    }
  }
  if (c.json) {
    Json j;
    j.begin_object().field("type", "ready").field("mode", echo ? "echo" : "discard")
        .field("address", ip_text(host) + ":" + std::to_string(c.port)).field("workers", workers)
        .field("pid", int64_t{getpid()}).end_object();
    say(j.str());
  } else {
    say(c.name + " ready on " + ip_text(host) + ":" + std::to_string(c.port) + " (" + std::to_string(workers) +
        " workers, pid " + std::to_string(getpid()) + "); SIGUSR1 prints ARP and connections, Ctrl-C stops");
  }
  const auto start = Clock::now();
  auto next_dump = start + c.stats_interval;
  while (!stop_.load()) {
    if (c.stats_interval.count() > 0 && Clock::now() >= next_dump) {
      dump_state();
      next_dump += c.stats_interval;
    }
    const auto until = c.stats_interval.count() > 0 ? std::min(next_dump, Clock::now() + 100ms) : Clock::now() + 100ms;
    sleep_until(until);
  }
  if (c.state) dump_state();
  // Listeners and connections belong to their workers: tear them down there.
  for (unsigned i = 0; i < workers; ++i) {
    stack_->worker(i)->center().submit_and_wait([&, i] {
      stack_->worker(i)->center().delete_file_event(listeners[i].fd(), kEventReadable);
      listeners[i] = ServerSocket();
    });
  }
  connections.clear();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const int signal = stop_signal_.load();
  const char* signal_name = signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal";
  if (c.json) {
    Json j;
    j.begin_object().field("type", "summary").field("mode", echo ? "echo" : "discard")
        .field("connections", totals.accepted.load()).field("bytes_received", totals.received.load())
        .field("seconds", seconds).field("signal", signal_name).end_object();
    say(j.str());
  } else {
    char line[200];
    std::snprintf(line, sizeof line, "%s stopped by %s after %.1f s: %lu connections, %lu bytes received%s",
                  c.name.c_str(), signal_name, seconds, static_cast<unsigned long>(totals.accepted.load()),
                  static_cast<unsigned long>(totals.received.load()), echo ? " and echoed" : "");
    say(line);
  }
  return 0;
}

int StackSession::send() {
  const StackCommand& c = command_;
  Worker* worker = stack_->least_loaded_worker();
  SendProgress progress;
  std::random_device seed;
  bench::ConnectionSet connections(*stack_);
  int rc = 0;
  worker->center().submit_and_wait([&] {
    auto connection = std::make_unique<SendConnection>(*worker, progress, c.bytes, uint64_t{seed()} << 32 | seed());
    rc = connection->connect(c.peer, socket_options_from_config(config_));
    connections.add(*worker, std::move(connection));
  });
  if (rc < 0) {
    connections.clear();  // on the worker's thread, like every connection
    throw std::runtime_error("stack send: connect to " + c.peer.to_string() + ": " + socket_error_name(rc));
  }
  const auto start = Clock::now();
  const int64_t start_ns = steady_now_ns();
  // Bounded: connecting and sending stop at the connect timeout plus the time the bytes need at
  // 1 MB/s; waiting for the peer to close after our FIN is bounded by --timeout.
  const auto send_limit = socket_options_from_config(config_).connect_timeout +
                          std::chrono::seconds(1 + c.bytes / 1'000'000);
  std::string outcome;
  while (!progress.finished()) {
    if (!sleep_until(Clock::now() + 10ms)) {
      outcome = "interrupted";
      break;
    }
    const int64_t all_sent = progress.all_sent_at.load();
    if (all_sent == 0 && Clock::now() - start > send_limit) {
      outcome = "gave up after " + config::format_duration(send_limit) + " with " +
                std::to_string(progress.sent.load()) + " bytes sent";
      break;
    }
    if (all_sent != 0 && steady_now_ns() - all_sent > c.timeout.count()) {
      outcome = "the peer did not close within " + config::format_duration(c.timeout) +
                " of our FIN: delivery unconfirmed";
      break;
    }
  }
  if (progress.error.load() != 0)
    outcome = std::string("connection failed: ") + socket_error_name(progress.error.load());
  const bool confirmed = outcome.empty();
  const int64_t connected = progress.connected_at.load();
  const int64_t end = confirmed ? progress.peer_closed_at.load() : steady_now_ns();
  const double seconds = connected ? static_cast<double>(end - connected) / 1e9 : static_cast<double>(end - start_ns) / 1e9;
  const uint64_t sent = progress.sent.load();
  const double rate = seconds > 0 ? static_cast<double>(sent) / seconds : 0;
  if (c.json) {
    Json j;
    j.begin_object().field("type", "summary").field("peer", c.peer.to_string()).field("bytes", sent)
        .field("requested", c.bytes).field("seconds", seconds).field("bytes_per_second", rate)
        .field("bits_per_second", rate * 8).field("echoed_bytes", progress.received.load())
        .field("peer_closed", confirmed);
    if (!confirmed) j.field("error", outcome);
    say(j.end_object().str());
  } else {
    char line[300];
    std::snprintf(line, sizeof line, "sent %lu of %lu bytes to %s in %.3f s: %.0f bytes/s (%.3f Gbit/s)%s%s",
                  static_cast<unsigned long>(sent), static_cast<unsigned long>(c.bytes), c.peer.to_string().c_str(),
                  seconds, rate, rate * 8 / 1e9, confirmed ? ", peer closed: all delivered" : "",
                  progress.received.load() ? (", " + std::to_string(progress.received.load()) + " bytes came back")
                                                 .c_str()
                                           : "");
    say(line);
    if (!confirmed) std::fprintf(stderr, "bypass-pmd: stack send: %s\n", outcome.c_str());
  }
  if (c.state) dump_state();  // the connection stays listed (TIME-WAIT) with its final counters
  connections.clear();
  return confirmed && sent == c.bytes ? 0 : 1;
}

}  // namespace

int run_stack_command(const StackCommand& command, const config::Config& config, std::atomic<bool>& stop,
                      std::atomic<bool>& dump, const std::atomic<int>& stop_signal) {
  StackSession session(command, config, stop, dump, stop_signal);
  return session.run();
}

}  // namespace bypass::tools
