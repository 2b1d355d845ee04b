// NetworkStack::stop() on the dpdk transport loses nothing a live peer can take (ms.shutdown_linger):
// over net_tap (tap bpL0, kernel 10.65.0.1/24, stack 10.65.0.2) a stack socket queues 8 MiB for a
// kernel server that only starts reading 200 ms later, closes, and the stack is stopped at once.
// With the linger, stop() keeps the worker running until the kernel acknowledged the data and the
// FIN: the kernel reads all 8 MiB, then end of stream. (With ms.shutdown_linger=0 it gets part of
// the data and never the FIN: BYPASS_MS_SHUTDOWN_LINGER=0 shows it.)
// Root is required (exit 77 otherwise).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "tests/integration/dpdk/tap_harness.h"

namespace bypass::tap_test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kTapName = "bpL0";
constexpr const char* kKernelIp = "10.65.0.1";
constexpr const char* kStackIp = "10.65.0.2";
constexpr size_t kBytes = 8u << 20;

// Accepts one connection on an ephemeral port of kKernelIp and, after `delay`, reads it to the end.
class SlowKernelSink {
 public:
  explicit SlowKernelSink(std::chrono::milliseconds delay) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int small = 64 * 1024;  // the window stays small until the reader starts
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    sockaddr_in sa = kernel_address(kKernelIp, 0);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || ::listen(listen_fd_, 1) != 0) return;
    socklen_t len = sizeof(sa);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    thread_ = std::thread([this, delay] { serve(delay); });
  }
  ~SlowKernelSink() {
    if (thread_.joinable()) thread_.join();
    if (listen_fd_ >= 0) ::close(listen_fd_);
  }
  uint16_t port() const { return port_; }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

  std::atomic<uint64_t> received{0};
  std::atomic<bool> end_of_stream{false};

 private:
  void serve(std::chrono::milliseconds delay) {
    const auto deadline = Clock::now() + 15s;
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) return;
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;
    std::this_thread::sleep_for(delay);
    char buf[65536];
    while (Clock::now() < deadline) {
      pollfd q{fd, POLLIN, 0};
      if (::poll(&q, 1, 200) <= 0) continue;
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n > 0) {
        received.fetch_add(static_cast<uint64_t>(n));
        continue;
      }
      if (n == 0) end_of_stream.store(true);
      break;  // EOF, or an error (a reset)
    }
    ::close(fd);
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

TEST(TapStopLinger, StopDeliversWhatAClosedSocketStillHolds) {
  NetworkStack& stack = TapStackEnvironment::stack();
  Worker& worker = *stack.worker(0);
  SlowKernelSink sink(500ms);
  ASSERT_NE(sink.port(), 0);
  SocketAddress target;
  ASSERT_TRUE(SocketAddress::parse(std::string(kKernelIp) + ":" + std::to_string(sink.port()), &target));
  ConnectedSocket socket;
  int rc = 0;
  run_on(worker, [&] { rc = worker.connect(target, SocketOptions{}, &socket); });
  ASSERT_EQ(rc, 0) << socket_error_name(rc);
  int connected = 0;
  for (const auto until = Clock::now() + 10s; connected == 0 && Clock::now() < until;) {
    run_on(worker, [&] { connected = socket.is_connected(); });
    if (connected == 0) std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(connected, 1) << socket_error_name(connected);
  const std::string data = random_bytes(kBytes, 3);
  size_t queued = 0;
  run_on(worker, [&] {
    BufferList out;
    out.append_copy(data);
    while (!out.empty()) {
      const ssize_t n = socket.send(out, false);
      if (n <= 0) break;
      queued += static_cast<size_t>(n);
    }
    socket.close();  // the FIN follows the data
  });
  ASSERT_EQ(queued, kBytes) << "tcp.snd_buffer must take the whole payload";
  const auto stopping = Clock::now();
  stack.stop();  // at once: the linger is all the time the data gets
  const auto took = Clock::now() - stopping;
  sink.join();
  std::printf("stop() took %lld ms; the kernel read %llu of %zu bytes%s\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()),
              static_cast<unsigned long long>(sink.received.load()), kBytes,
              sink.end_of_stream.load() ? ", then end of stream" : ", and no end of stream");
  EXPECT_EQ(sink.received.load(), kBytes);
  EXPECT_TRUE(sink.end_of_stream.load());
  EXPECT_LT(took, 9s) << "stop() waited out the linger instead of returning once all was acknowledged";
}

}  // namespace
}  // namespace bypass::tap_test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (geteuid() != 0) {
    std::printf("SKIP: needs root (creates the tap interface %s and sets its address)\n", bypass::tap_test::kTapName);
    return 77;
  }
  ::testing::AddGlobalTestEnvironment(new bypass::tap_test::TapStackEnvironment(
      {bypass::tap_test::kTapName, bypass::tap_test::kKernelIp, bypass::tap_test::kStackIp,
       {"tcp.snd_buffer=16M", "ms.shutdown_linger=10s"}, "", ""}));
  return RUN_ALL_TESTS();
}
