// inet_peer: one end of a multi-process or multi-host test of a transport, on the socket interface
// (so the same program is a userspace-stack host with ms.type=dpdk and a kernel host with posix).
//
//   inet_peer [-c FILE]... [--set key=value]... echo-server --listen IP:PORT [--serve N] [--lifetime T]
//   inet_peer [-c FILE]... [--set key=value]... echo-client --to IP:PORT [--to IP:PORT]... --bytes N
//             [--connections K] [--seed S] [--timeout T] [--show-arp IP[,IP]...]
//             [--show-neigh IPV6[,IPV6]...] [--show-path-mtu IPV6[,IPV6]...]
//
// The server prints "ready IP:PORT" once it listens and echoes every byte back; it exits 0 after N
// connections were served (or on SIGTERM/SIGINT when N is 0) and 1 when its lifetime ends first.
// The client sends N seeded random bytes, split over K connections to each target, checks the echo
// byte-exact and exits 0, or 1 with the connection, target and what went wrong.
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "stack/inet/wire/bytes.h"
#include "stack/network_stack.h"
#include "tests/integration/dpdk/peer_cli.h"
#include "tests/integration/dpdk/stack_inspection.h"
#include "tests/unit/socket/socket_test_handlers.h"
#include "tests/unit/socket/socket_test_harness.h"

namespace bypass {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::ClientResult;
using testing::ClientSpec;
using testing::Completion;
using testing::HandlerPool;
using testing::StreamClient;
using testing::TestListener;
using testing::for_each_flag;
using testing::parse_count;
using testing::parse_positive_duration;
using testing::print_arp_entries;
using testing::print_inet_stats;
using testing::print_tcp_connections;
using testing::unfinished_tcp_connections;

const char* kUsage =
    "usage: inet_peer [-c FILE]... [--set key=value]... <command> [flags]\n"
    "  echo-server --listen IP:PORT [--serve N] [--lifetime T]\n"
    "      echo every byte back; print 'worker I cpus LIST' per worker and 'ready IP:PORT' once\n"
    "      listening; exit 0 after N connections were served and their TCP connections finished\n"
    "      (N=0, the default: on SIGTERM/SIGINT), 1 when T (default 120s) passes first\n"
    "  echo-client --to IP:PORT [--to IP:PORT]... --bytes N [--connections K] [--seed S]\n"
    "              [--timeout T] [--wait-for-server T] [--show-arp IP[,IP]...]\n"
    "              [--show-neigh IPV6[,IPV6]...] [--show-path-mtu IPV6[,IPV6]...]\n"
    "      print 'worker I cpus LIST' per worker; send N seeded random bytes (default seed 1) split\n"
    "      over K connections (default 1) to each target and check the echo byte-exact within T\n"
    "      (default 60s); with --wait-for-server, first retry connecting (for up to T) until each\n"
    "      target listens; then print 'arp IP MAC' or 'arp IP unresolved' for each --show-arp\n"
    "      address from worker 0's ARP table, 'neigh IP MAC' or 'neigh IP unresolved' for each\n"
    "      --show-neigh address from its Neighbor Discovery cache, and for each --show-path-mtu\n"
    "      address 'path_mtu IP N' (worker 0's path MTU to it) and 'send_mss [IP]:PORT N\n"
    "      bytes_acked=B' per TCP connection to it still in the stack, and 'completed_send_mss\n"
    "      [IP]:PORT N bytes_acked=B' per data connection, read when its echo completed\n"
    "      (ms.type=dpdk); IPv6 addresses print in canonical form (RFC 5952)\n";

constexpr auto kPollInterval = 100ms;
const char* kHelp = "inet_peer --help";

// Throws ConfigError describing the value (for_each_flag names the flag).
SocketAddress parse_address(const std::string& text) {
  SocketAddress addr;
  if (!SocketAddress::parse(text, &addr)) throw config::ConfigError("'" + text + "' is not IP:PORT");
  return addr;
}

// Builds and starts the configured stack; stops it (after the handlers) on every exit path.
class RunningStack {
 public:
  explicit RunningStack(const config::Config& conf) : stack_(NetworkStack::create(conf)) {
    stack_->start();
    pool_ = std::make_unique<HandlerPool>(*stack_);
  }
  ~RunningStack() { testing::tear_down_transport(listener_, pool_, stack_); }
  RunningStack(const RunningStack&) = delete;
  RunningStack& operator=(const RunningStack&) = delete;

  NetworkStack& stack() { return *stack_; }
  HandlerPool& pool() { return *pool_; }
  std::unique_ptr<TestListener>& listener() { return listener_; }

 private:
  std::shared_ptr<NetworkStack> stack_;
  std::unique_ptr<HandlerPool> pool_;
  std::unique_ptr<TestListener> listener_;
};

// Prints "worker I cpus LIST" for each worker: the CPUs its thread may run on (the test checks
// that ms.cpus pinned the lcores apart).
void print_worker_cpus(NetworkStack& stack) {
  for (unsigned i = 0; i < stack.num_workers(); ++i) {
    std::string cpus;
    testing::run_on(*stack.worker(i), [&] {
      cpu_set_t set;
      CPU_ZERO(&set);
      if (sched_getaffinity(0, sizeof(set), &set) != 0) return;
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &set)) cpus += (cpus.empty() ? "" : ",") + std::to_string(cpu);
      }
    });
    std::cout << "worker " << i << " cpus " << (cpus.empty() ? "unknown" : cpus) << "\n";
  }
  std::cout.flush();
}

// ------------------------------------------------------------------------------------------------

struct ServerOptions {
  SocketAddress listen;
  uint64_t serve = 0;
  std::chrono::milliseconds lifetime = 120s;
};

ServerOptions parse_server_flags(const std::vector<std::string>& args) {
  ServerOptions o;
  bool have_listen = false;
  for_each_flag(args, "echo-server", {"--listen", "--serve", "--lifetime"}, kHelp,
                [&](const std::string& flag, const std::string& value) {
                  if (flag == "--listen") {
                    o.listen = parse_address(value);
                    have_listen = true;
                  } else if (flag == "--serve") {
                    o.serve = parse_count(value, 0, 1'000'000);
                  } else {
                    o.lifetime = parse_positive_duration(value);
                  }
                });
  if (!have_listen) throw config::ConfigError("echo-server: --listen IP:PORT is required");
  return o;
}

int run_echo_server(const config::Config& conf, const ServerOptions& o, const sigset_t& stop_signals) {
  std::atomic<uint64_t> accepted{0};  // outlives the stack: the accept callback counts here
  RunningStack running(conf);
  running.listener() = std::make_unique<TestListener>(
      running.stack(), [&running, &accepted](Worker& w, ConnectedSocket socket) {
        accepted.fetch_add(1);
        running.pool().spawn<testing::EchoServer>(w, std::move(socket));
      });
  const int rc = running.listener()->listen(o.listen, listen_options_from_config(conf),
                                            socket_options_from_config(conf));
  if (rc != 0) {
    std::cerr << "inet_peer: echo-server: listen on " << o.listen.to_string() << ": "
              << socket_error_name(rc) << "\n";
    return 1;
  }
  print_worker_cpus(running.stack());
  std::cout << "ready " << running.listener()->address().to_string() << std::endl;

  const auto deadline = Clock::now() + o.lifetime;
  const timespec poll_interval{0, std::chrono::nanoseconds(kPollInterval).count()};
  while (Clock::now() < deadline) {
    if (const int sig = sigtimedwait(&stop_signals, nullptr, &poll_interval); sig > 0) {
      std::cout << "stopped by signal " << sig << " after " << accepted.load() << " connections"
                << std::endl;
      if (o.serve > 0) {  // stopped before it served all
        print_tcp_connections(running.stack(), std::cerr);
        print_inet_stats(running.stack(), std::cerr);
      }
      return 0;
    }
    // live_count() runs on each worker, so a connection accepted before the check is counted.
    if (o.serve > 0 && accepted.load() >= o.serve && running.pool().live_count() == 0 &&
        unfinished_tcp_connections(running.stack()) == 0) {
      std::cout << "served " << accepted.load() << " connections" << std::endl;
      print_inet_stats(running.stack(), std::cout);
      return 0;
    }
  }
  std::cerr << "inet_peer: echo-server: lifetime " << o.lifetime.count() << " ms ended after "
            << accepted.load() << " of " << o.serve << " connections\n";
  print_tcp_connections(running.stack(), std::cerr);
  print_inet_stats(running.stack(), std::cerr);
  return 1;
}

// ------------------------------------------------------------------------------------------------

struct ClientOptions {
  std::vector<SocketAddress> targets;
  uint64_t bytes = 0;
  uint64_t connections = 1;
  uint64_t seed = 1;
  std::chrono::milliseconds timeout = 60s;
  std::chrono::milliseconds wait_for_server = 0ms;
  std::vector<std::string> show_arp;
  std::vector<std::string> show_neigh;
  std::vector<std::string> show_path_mtu;
  bool inspects_stack() const { return !show_arp.empty() || !show_neigh.empty() || !show_path_mtu.empty(); }
};

enum class Family { kIpv4, kIpv6 };

// "IP[,IP]..." of one family; throws ConfigError describing a bad address.
std::vector<std::string> parse_address_list(const std::string& value, Family family) {
  std::vector<std::string> ips;
  std::stringstream list(value);
  for (std::string ip; std::getline(list, ip, ',');) {
    if (family == Family::kIpv4) {
      config::parse_ipv4(ip);
    } else if (!inet::Ipv6Address::from_string(ip)) {
      throw config::ConfigError("'" + ip + "' is not an IPv6 address");
    }
    ips.push_back(ip);
  }
  return ips;
}

ClientOptions parse_client_flags(const std::vector<std::string>& args) {
  ClientOptions o;
  bool have_bytes = false;
  for_each_flag(args, "echo-client",
                {"--to", "--bytes", "--connections", "--seed", "--timeout", "--wait-for-server",
                 "--show-arp", "--show-neigh", "--show-path-mtu"},
                kHelp, [&](const std::string& flag, const std::string& value) {
                  if (flag == "--to") {
                    o.targets.push_back(parse_address(value));
                  } else if (flag == "--bytes") {
                    o.bytes = config::parse_size(value);
                    have_bytes = true;
                  } else if (flag == "--connections") {
                    o.connections = parse_count(value, 1, 1024);
                  } else if (flag == "--seed") {
                    o.seed = parse_count(value, 0, INT64_MAX);
                  } else if (flag == "--timeout") {
                    o.timeout = parse_positive_duration(value);
                  } else if (flag == "--wait-for-server") {
                    o.wait_for_server = parse_positive_duration(value);
                  } else if (flag == "--show-arp") {
                    o.show_arp = parse_address_list(value, Family::kIpv4);
                  } else if (flag == "--show-neigh") {
                    o.show_neigh = parse_address_list(value, Family::kIpv6);
                  } else {
                    o.show_path_mtu = parse_address_list(value, Family::kIpv6);
                  }
                });
  if (o.targets.empty()) throw config::ConfigError("echo-client: --to IP:PORT is required");
  if (!have_bytes || o.bytes == 0) throw config::ConfigError("echo-client: --bytes N (N > 0) is required");
  if (o.bytes < o.connections * o.targets.size()) {
    throw config::ConfigError("echo-client: --bytes " + std::to_string(o.bytes) +
                              " gives some of the connections nothing to send");
  }
  return o;
}

std::shared_ptr<const std::string> seeded_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto bytes = std::make_shared<std::string>(n, '\0');
  for (size_t i = 0; i < n; i += sizeof(uint64_t)) {  // 8 bytes per draw, not 1
    const uint64_t draw = rng();
    std::memcpy(&(*bytes)[i], &draw, std::min(sizeof(draw), n - i));
  }
  return bytes;
}

// Connects to `target` (and closes again) until one attempt succeeds: a peer whose link comes up
// together with ours (memif) starts listening a moment after we could first connect. Returns the
// last attempt's error, 0 once connected.
int wait_until_listening(RunningStack& running, const SocketAddress& target, std::chrono::milliseconds limit,
                         const SocketOptions& options) {
  constexpr auto kRetryPause = 200ms;
  const auto deadline = Clock::now() + limit;
  int error = -ETIMEDOUT;
  Worker& w = *running.stack().worker(0);
  while (Clock::now() < deadline) {
    ClientResult result;
    Completion attempt;
    ClientSpec spec;
    spec.connect_only = true;
    spec.options = options;
    testing::run_on(w, [&] {
      running.pool().spawn<StreamClient>(w, target, std::move(spec), &result, &attempt);
    });
    if (!attempt.wait_for(1, options.connect_timeout + 1s)) {
      running.pool().clear();  // the attempt's handler points at `result`: retire it first
      return -ETIMEDOUT;
    }
    testing::run_on(w, [&] { error = result.connected ? 0 : result.error; });
    if (error == 0) return 0;
    std::this_thread::sleep_for(kRetryPause);
  }
  return error;
}

int run_echo_client(const config::Config& conf, const ClientOptions& o) {
  // Declared before the stack: the client handlers write here until the stack's teardown.
  const auto data = seeded_bytes(o.bytes, o.seed);
  const size_t total = o.connections * o.targets.size();
  std::vector<ClientResult> results(total);
  std::vector<std::pair<size_t, size_t>> slices(total);  // [offset, length) of `data` per connection
  std::vector<std::string> completed_mss(total);  // --show-path-mtu: written on the workers
  Completion done;
  RunningStack running(conf);
  if (o.inspects_stack() && !testing::is_dpdk_stack(running.stack())) {
    std::cerr << "inet_peer: echo-client: --show-arp, --show-neigh and --show-path-mtu need ms.type=dpdk (this stack is "
              << running.stack().type() << ")\n";
    return 2;
  }
  const SocketOptions socket_options = socket_options_from_config(conf);
  if (o.wait_for_server > 0ms) {
    for (const SocketAddress& target : o.targets) {
      if (const int rc = wait_until_listening(running, target, o.wait_for_server, socket_options); rc != 0) {
        std::cerr << "inet_peer: echo-client: " << target.to_string()
                  << " did not accept a connection within " << o.wait_for_server.count()
                  << " ms (last attempt: " << socket_error_name(rc) << ")\n";
        return 1;
      }
    }
  }
  print_worker_cpus(running.stack());
  const auto started = Clock::now();
  for (size_t i = 0; i < total; ++i) {
    slices[i] = {o.bytes * i / total, o.bytes * (i + 1) / total - o.bytes * i / total};
    ClientSpec spec;
    spec.payload.append(BufferSegment::borrow(data->data() + slices[i].first, slices[i].second));
    spec.expected = data;
    spec.expected_offset = slices[i].first;
    spec.expected_length = slices[i].second;
    spec.zero_copy = true;
    spec.read_max = 1 << 20;
    spec.options = socket_options;
    Worker& w = *running.stack().worker(static_cast<unsigned>(i % running.stack().num_workers()));
    if (!o.show_path_mtu.empty()) {
      // The connection's SMSS while it still exists: once both ends closed it is gone from the
      // stack, so the listing at the end may miss it.
      spec.before_close = [&, i, worker = w.id()](const SocketAddress& local) {
        completed_mss[i] = testing::send_mss_of(running.stack(), worker, local);
      };
    }
    const SocketAddress target = o.targets[i % o.targets.size()];
    testing::run_on(w, [&, i] {
      running.pool().spawn<StreamClient>(w, target, std::move(spec), &results[i], &done);
    });
  }
  const bool finished = done.wait_for(static_cast<int>(total), o.timeout);
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  // Results are written on the workers: read them there (also when some are still running).
  std::vector<ClientResult> seen(total);
  std::vector<std::string> seen_mss(total);
  for (size_t i = 0; i < total; ++i) {
    testing::run_on(*running.stack().worker(static_cast<unsigned>(i % running.stack().num_workers())),
                    [&, i] { seen[i] = results[i]; seen_mss[i] = completed_mss[i]; });
  }
  int failures = 0;
  for (size_t i = 0; i < total; ++i) {
    const ClientResult& r = seen[i];
    if (r.verified && r.error == 0) continue;
    ++failures;
    std::cerr << "inet_peer: echo-client: connection " << i << " to "
              << o.targets[i % o.targets.size()].to_string() << ": ";
    if (r.error != 0) {
      std::cerr << socket_error_name(r.error);
    } else if (!finished) {
      std::cerr << "timed out after " << o.timeout.count() << " ms";
    } else {
      std::cerr << "closed early";
    }
    std::cerr << " (connected " << (r.connected ? "yes" : "no") << ", " << r.received << " of "
              << slices[i].second << " bytes echoed back" << (r.detail.empty() ? "" : "; " + r.detail)
              << ")\n";
  }
  if (failures > 0) {
    print_tcp_connections(running.stack(), std::cerr);
    print_inet_stats(running.stack(), std::cerr);
    return 1;
  }
  std::cout << "ok " << o.bytes << " bytes echoed byte-exact over " << total << " connections in "
            << seconds << " s" << std::endl;
  print_inet_stats(running.stack(), std::cout);
  if (!o.show_arp.empty()) print_arp_entries(running.stack(), o.show_arp, std::cout);
  if (!o.show_neigh.empty()) testing::print_neighbor_entries(running.stack(), o.show_neigh, std::cout);
  if (!o.show_path_mtu.empty()) {
    testing::print_path_mtu(running.stack(), o.show_path_mtu, std::cout);
    for (const std::string& line : seen_mss)
      if (!line.empty()) std::cout << "completed_" << line;
    std::cout.flush();
  }
  return 0;
}

}  // namespace
}  // namespace bypass

int main(int argc, char** argv) {
  using bypass::config::Config;
  return bypass::testing::run_peer_main(
      argc, argv, "inet_peer", bypass::kUsage,
      {{"echo-server",
        [](const Config& conf, const std::vector<std::string>& args, const sigset_t& stop_signals) {
          return bypass::run_echo_server(conf, bypass::parse_server_flags(args), stop_signals);
        }},
       {"echo-client", [](const Config& conf, const std::vector<std::string>& args, const sigset_t&) {
          return bypass::run_echo_client(conf, bypass::parse_client_flags(args));
        }}});
}
