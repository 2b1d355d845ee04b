// A SYN flood against a listener of the userspace stack over net_tap (tap bpF0, kernel
// 10.66.0.1/24, stack 10.66.0.2): syn_flood.py sends 100,000 SYNs from random sources of
// 198.18.0.0/15 through an AF_PACKET socket on the tap while
// - a connection established before the flood keeps moving data (the kernel sends, the stack
//   reads) without a stall of a second or more;
// - new connections from the kernel still complete and carry data: with the SYN backlog full
//   (tcp.syn_backlog=64 here) the listener answers with SYN cookies (RFC 4987 §3.6) and rebuilds
//   the connection from the returning ACK;
// - the stack's SYN-cookie counters moved (cookies sent and accepted) and nothing crashed.
// The SYN-ACKs to the random sources go to the gateway (the kernel), which drops them.
// Root and /usr/bin/python3 are required (exit 77 without root); bounded well under 60 s.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/dpdk/tap_harness.h"
#include "tests/support/subprocess.h"

namespace bypass::tap_test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kTapName = "bpF0";
constexpr const char* kKernelIp = "10.66.0.1";
constexpr const char* kStackIp = "10.66.0.2";
constexpr uint16_t kPort = 7500;
constexpr int kFloodSyns = 100000;
constexpr int kFloodSeconds = 5;
constexpr int kLegitimateConnects = 25;
constexpr int kSynBacklog = 64;
// Each new connection gets this long (the kernel retransmits a lost SYN after 1 s), and all of
// them together no more than kConnectBudget after the flood: the test stays bounded (< 60 s)
// when they fail.
constexpr auto kConnectLimit = 2500ms;
constexpr auto kConnectBudget = 20s;

std::string flood_script;  // argv[1]: path of syn_flood.py

// Accepts every connection on `port` and reads (and drops) what each sends, on the worker thread;
// counts connections and bytes.
class SinkServer {
 public:
  explicit SinkServer(Worker& worker) : worker_(worker) {}

  int start(uint16_t port) {
    int rc = 0;
    run_on(worker_, [&] {
      ListenOptions lopts;
      lopts.reuse_port = false;
      rc = worker_.listen(SocketAddress::ipv4(0, port), lopts, SocketOptions{}, &server_);
      if (rc == 0) worker_.center().create_file_event(server_.fd(), kEventReadable, [this](int, int) { on_accept(); });
    });
    return rc;
  }

  void stop() {
    run_on(worker_, [&] {
      if (server_) worker_.center().delete_file_event(server_.fd(), kEventReadable);
      server_ = ServerSocket();
      for (auto& [fd, socket] : connections_) worker_.center().delete_file_event(fd, kEventReadable);
      connections_.clear();
    });
  }

  std::atomic<uint64_t> accepted{0}, bytes{0}, errors{0};

 private:
  void on_accept() {
    for (;;) {
      ConnectedSocket socket;
      SocketAddress peer;
      if (server_.accept(&socket, SocketOptions{}, &peer, &worker_) != 0) return;
      accepted.fetch_add(1);
      const int fd = socket.fd();
      connections_[fd] = std::move(socket);
      worker_.center().create_file_event(fd, kEventReadable, [this, fd](int, int) { drain(fd); });
    }
  }

  void drain(int fd) {
    auto it = connections_.find(fd);
    if (it == connections_.end()) return;
    BufferList data;
    for (;;) {
      const ssize_t n = it->second.zero_copy_read(data, 1 << 20);
      if (n > 0) {
        bytes.fetch_add(static_cast<uint64_t>(n));
        data.clear();
        continue;
      }
      if (n == -EAGAIN) return;
      if (n < 0) errors.fetch_add(1);
      worker_.center().delete_file_event(fd, kEventReadable);
      connections_.erase(it);  // EOF or error: closes
      return;
    }
  }

  Worker& worker_;
  ServerSocket server_;
  std::map<int, ConnectedSocket> connections_;
};

// A kernel TCP client of the stack: connects (within `limit`), or returns -1.
int kernel_connect(uint16_t port, std::chrono::milliseconds limit) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  const sockaddr_in sa = kernel_address(kStackIp, port);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  // Signals interrupt poll (the flood runs as a child process): wait out the whole limit.
  const auto deadline = Clock::now() + limit;
  int ready = 0;
  do {
    pollfd p{fd, POLLOUT, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    ready = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
  } while (ready < 0 && errno == EINTR && Clock::now() < deadline);
  int error = 0;
  socklen_t len = sizeof(error);
  if (ready != 1 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `data` on a non-blocking socket within `limit`; true when all of it went.
bool send_all(int fd, const std::string& data, std::chrono::milliseconds limit) {
  size_t sent = 0;
  const auto deadline = Clock::now() + limit;
  while (sent < data.size() && Clock::now() < deadline) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno != EAGAIN) {
      return false;
    } else {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 50);
    }
  }
  return sent == data.size();
}

TEST(TapSynFlood, EstablishedAndNewConnectionsSurviveAFloodOfSyns) {
  Worker& worker = *TapStackEnvironment::stack().worker(0);
  SinkServer sink(worker);
  ASSERT_EQ(sink.start(kPort), 0);

  // The established connection: the kernel streams into it until told to stop. (The tap's kernel
  // end may need a moment after coming up before its first connect goes through: retried.)
  int stream_fd = -1;
  for (const auto until = Clock::now() + 10s; stream_fd < 0 && Clock::now() < until;) {
    stream_fd = kernel_connect(kPort, 2000ms);
    if (stream_fd < 0) std::this_thread::sleep_for(100ms);
  }
  ASSERT_GE(stream_fd, 0) << "the first connection to the listener failed";
  std::atomic<bool> stop_stream{false};
  std::thread streamer([&] {
    const std::string chunk = random_bytes(64 * 1024, 5);
    while (!stop_stream.load()) send_all(stream_fd, chunk, 200ms);
  });
  const auto flowing_by = Clock::now() + 10s;
  while (sink.bytes.load() < (1u << 20) && Clock::now() < flowing_by) std::this_thread::sleep_for(10ms);
  ASSERT_GE(sink.bytes.load(), 1u << 20) << "the established connection does not move data even before the flood";

  const inet::InetStats before = TapStackEnvironment::inet_stats();
  std::atomic<bool> flood_done{false};
  test::CommandResult flood;
  std::thread flooder([&] {
    flood = test::run_with_status("timeout 50 /usr/bin/python3 " + flood_script + " --iface " + kTapName +
                                  " --stack-ip " + kStackIp + " --port " + std::to_string(kPort) + " --count " +
                                  std::to_string(kFloodSyns) + " --seconds " + std::to_string(kFloodSeconds) +
                                  " 2>&1");
    flood_done.store(true);
  });

  // While the flood runs: new connections, each carrying a few bytes, and the stream's progress
  // sampled every 100 ms (the longest time without progress is what a stall would show).
  int attempts = 0, completed = 0;
  uint64_t stream_at_flood_start = sink.bytes.load();
  uint64_t last_bytes = stream_at_flood_start;
  auto last_progress = Clock::now();
  Clock::duration longest_stall{0};
  auto next_connect = Clock::now() + 200ms;
  const std::string hello = random_bytes(1000, 9);
  while (!flood_done.load()) {
    std::this_thread::sleep_for(100ms);
    const auto now = Clock::now();
    const uint64_t bytes = sink.bytes.load();
    if (bytes > last_bytes) {
      last_bytes = bytes;
      last_progress = now;
    }
    longest_stall = std::max(longest_stall, now - last_progress);
    if (attempts < kLegitimateConnects && now >= next_connect) {
      ++attempts;
      const int fd = kernel_connect(kPort, kConnectLimit);
      if (fd >= 0) {
        if (send_all(fd, hello, 2000ms)) ++completed;
        ::close(fd);
      }
      next_connect = Clock::now() + std::chrono::milliseconds(kFloodSeconds * 1000 / kLegitimateConnects);
    }
  }
  flooder.join();
  const uint64_t streamed_during_flood = sink.bytes.load() - stream_at_flood_start;
  stop_stream.store(true);
  streamer.join();
  ::close(stream_fd);
  // Connections that could not start during the flood (the flood ended first) are made now.
  for (const auto until = Clock::now() + kConnectBudget; attempts < kLegitimateConnects && Clock::now() < until;) {
    ++attempts;
    const int fd = kernel_connect(kPort, kConnectLimit);
    if (fd >= 0) {
      if (send_all(fd, hello, 2000ms)) ++completed;
      ::close(fd);
    }
  }
  // A connection the kernel saw complete may reach the listener a retransmission later (its
  // final ACK lost in the tap's full queue; the data segment then carries the cookie back).
  for (const auto until = Clock::now() + 5s;
       sink.accepted.load() < static_cast<uint64_t>(1 + completed) && Clock::now() < until;)
    std::this_thread::sleep_for(50ms);
  const inet::InetStats after = TapStackEnvironment::inet_stats();
  const uint64_t syns_seen = after.tcp_segments_received - before.tcp_segments_received;
  const uint64_t cookies_sent = after.tcp_syn_cookies_sent - before.tcp_syn_cookies_sent;
  const uint64_t cookies_accepted = after.tcp_syn_cookies_accepted - before.tcp_syn_cookies_accepted;
  std::printf("flood: %s", flood.out.c_str());
  std::printf("stack: %llu segments received, %llu SYN cookies sent, %llu accepted, %llu SYNs dropped "
              "(backlog); %d of %d new connections completed; the established connection moved %llu bytes "
              "during the flood, longest stall %lld ms\n",
              static_cast<unsigned long long>(syns_seen), static_cast<unsigned long long>(cookies_sent),
              static_cast<unsigned long long>(cookies_accepted),
              static_cast<unsigned long long>(after.tcp_syn_dropped_backlog - before.tcp_syn_dropped_backlog),
              completed, attempts, static_cast<unsigned long long>(streamed_during_flood),
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(longest_stall).count()));

  ASSERT_EQ(flood.status, 0) << flood.out;
  EXPECT_NE(flood.out.find("sent " + std::to_string(kFloodSyns)), std::string::npos) << flood.out;
  // Most of the flood reached the stack (the tap's queue may drop a little of it).
  EXPECT_GE(syns_seen, static_cast<uint64_t>(kFloodSyns) * 9 / 10);
  // Beyond the backlog, SYNs were answered statelessly.
  EXPECT_GE(cookies_sent, static_cast<uint64_t>(kFloodSyns) / 2);
  // Some of the legitimate connections came in through a cookie (the backlog was full).
  EXPECT_GE(cookies_accepted, 1u);
  EXPECT_EQ(completed, kLegitimateConnects) << "of " << attempts << " attempted";
  EXPECT_GE(sink.accepted.load(), static_cast<uint64_t>(1 + completed));
  // The established connection kept moving: data throughout, never a second without progress.
  EXPECT_GE(streamed_during_flood, 1u << 20);
  EXPECT_LT(longest_stall, 1s);
  EXPECT_EQ(sink.errors.load(), 0u);
  sink.stop();
}

}  // namespace
}  // namespace bypass::tap_test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s [gtest flags] PATH/syn_flood.py\n", argv[0]);
    return 2;
  }
  bypass::tap_test::flood_script = argv[1];
  if (geteuid() != 0) {
    std::printf("SKIP: needs root (creates the tap interface %s and sets its address)\n", bypass::tap_test::kTapName);
    return 77;
  }
  ::testing::AddGlobalTestEnvironment(new bypass::tap_test::TapStackEnvironment(
      {bypass::tap_test::kTapName, bypass::tap_test::kKernelIp, bypass::tap_test::kStackIp,
       {"tcp.syn_backlog=" + std::to_string(bypass::tap_test::kSynBacklog), "tcp.syn_cookies=true",
        // SYN-ACKs to the flood's random sources go through the kernel end, which drops them.
        std::string("dpdk.gateway=") + bypass::tap_test::kKernelIp}, "", ""}));
  return RUN_ALL_TESTS();
}
