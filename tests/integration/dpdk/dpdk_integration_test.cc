// The dpdk transport against the Linux kernel over net_tap: the kernel side is a real socket on
// the tap interface btap0 (10.77.0.1/24), the userspace stack answers on 10.77.0.2. Zero-copy send
// and checksum offload (net_tap offers tx/rx checksum offload) are checked through the device's
// counters.
// Root is required (tap creation, interface addresses); without it the test exits 77.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "config/config.h"
#include "stack/dpdk/dpdk_stack.h"
#include "stack/network_stack.h"

namespace bypass {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Overridable so concurrent runs (several developers on one machine) use their own interface and
// subnet: BYPASS_TEST_TAP (interface name) and BYPASS_TEST_TAP_NET (first three octets of a /24).
std::string from_env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}
const std::string kTapNameText = from_env("BYPASS_TEST_TAP", "btap0");
const std::string kTapNet = from_env("BYPASS_TEST_TAP_NET", "10.77.0");
const std::string kKernelIpText = kTapNet + ".1";
const std::string kStackIpText = kTapNet + ".2";
const char* const kTapName = kTapNameText.c_str();
const char* const kKernelIp = kKernelIpText.c_str();
const char* const kStackIp = kStackIpText.c_str();
constexpr size_t kTransferBytes = 64u << 20;
constexpr auto kTransferDeadline = 120s;
constexpr size_t kEchoWindow = 4u << 20;  // unsent echo bytes before the server stops reading

std::string random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i + 8 <= n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(&s[i], &v, 8);
  }
  return s;
}

int run_command(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

void run_on(Worker& w, std::function<void()> fn) { w.center().submit_and_wait(std::move(fn)); }

// Echoes every byte of every accepted connection back, on the stack's worker thread.
class EchoServer {
 public:
  explicit EchoServer(Worker& worker) : worker_(worker) {}

  int start(uint16_t port) {
    int rc = 0;
    run_on(worker_, [&] {
      // One worker listens; with several workers the others' flows are steered to it.
      ListenOptions lopts;
      lopts.reuse_port = false;
      rc = worker_.listen(SocketAddress::ipv4(0, port), lopts, SocketOptions{}, &server_);
      if (rc != 0) return;
      worker_.center().create_file_event(server_.fd(), kEventReadable, [this](int, int) { on_accept(); });
    });
    return rc;
  }

  void stop() {
    run_on(worker_, [&] {
      if (server_) worker_.center().delete_file_event(server_.fd(), kEventReadable);
      server_ = ServerSocket();
      if (conn_) worker_.center().delete_file_event(conn_.fd(), kEventReadable | kEventWritable);
      conn_ = ConnectedSocket();
    });
  }

  std::atomic<uint64_t> echoed{0};
  std::atomic<int> errors{0};

 private:
  void on_accept() {
    ConnectedSocket sock;
    SocketAddress peer;
    if (server_.accept(&sock, SocketOptions{}, &peer, &worker_) != 0) return;
    if (conn_) return;  // one client at a time; drop extras
    conn_ = std::move(sock);
    interest_ = kEventNone;
    set_interest(kEventReadable);
  }

  void set_interest(int mask) {
    const int fd = conn_.fd();
    if (int removed = interest_ & ~mask) worker_.center().delete_file_event(fd, removed);
    const int added = mask & ~interest_;
    if (added & kEventReadable)
      worker_.center().create_file_event(fd, kEventReadable, [this](int, int) { pump(); });
    if (added & kEventWritable)
      worker_.center().create_file_event(fd, kEventWritable, [this](int, int) { pump(); });
    interest_ = mask;
  }

  void pump() {
    if (!conn_) return;
    bool eof = false;
    while (pending_.length() < kEchoWindow) {
      const ssize_t n = conn_.zero_copy_read(pending_, 256 * 1024);
      if (n == 0) eof = true;
      if (n <= 0) {
        if (n < 0 && n != -EAGAIN) errors.fetch_add(1);
        break;
      }
    }
    while (!pending_.empty()) {
      const ssize_t n = conn_.send(pending_, false);
      if (n <= 0) {
        if (n != -EAGAIN) errors.fetch_add(1);
        break;
      }
      echoed.fetch_add(static_cast<uint64_t>(n));
    }
    if (eof && pending_.empty()) {
      conn_.shutdown();
      set_interest(kEventNone);
      return;
    }
    int mask = pending_.empty() ? kEventReadable : kEventWritable;
    if (!pending_.empty() && pending_.length() < kEchoWindow) mask |= kEventReadable;
    if (eof) mask &= ~kEventReadable;
    set_interest(mask);
  }

  Worker& worker_;
  ServerSocket server_;
  ConnectedSocket conn_;
  BufferList pending_;
  int interest_ = kEventNone;
};

// Sends `data` and checks that the same bytes come back, on the stack's worker thread.
class EchoClient {
 public:
  EchoClient(Worker& worker, const std::string& data) : worker_(worker), expected_(data) {
    to_send_.append(BufferSegment::borrow(expected_.data(), expected_.size()));
  }

  int start(const SocketAddress& server) {
    int rc = 0;
    run_on(worker_, [&] {
      rc = worker_.connect(server, SocketOptions{}, &conn_);
      if (rc != 0) return;
      worker_.center().create_file_event(conn_.fd(), kEventReadable | kEventWritable,
                                         [this](int, int mask) { on_event(mask); });
    });
    return rc;
  }

  void stop() {
    run_on(worker_, [&] {
      if (conn_) worker_.center().delete_file_event(conn_.fd(), kEventReadable | kEventWritable);
      conn_ = ConnectedSocket();
    });
  }

  std::promise<std::string> done;  // "" on success, else what went wrong
  std::atomic<uint64_t> received{0};

 private:
  void finish(std::string result) {
    if (finished_) return;
    finished_ = true;
    worker_.center().delete_file_event(conn_.fd(), kEventReadable | kEventWritable);
    done.set_value(std::move(result));
  }

  void on_event(int mask) {
    if (finished_) return;
    const int connected = conn_.is_connected();
    if (connected < 0) return finish(std::string("connect: ") + socket_error_name(connected));
    if (connected == 0) return;
    if (mask & kEventWritable) {
      while (!to_send_.empty()) {
        const ssize_t n = conn_.send(to_send_, false);
        if (n == -EAGAIN) break;
        if (n < 0) return finish(std::string("send: ") + socket_error_name(static_cast<int>(n)));
      }
      if (to_send_.empty() && !shut_) {
        shut_ = true;
        conn_.shutdown();
      }
      if (to_send_.empty()) worker_.center().delete_file_event(conn_.fd(), kEventWritable);
    }
    for (int round = 0; round < 64; ++round) {
      BufferList got;
      const ssize_t n = conn_.zero_copy_read(got, 1 << 20);
      if (n == -EAGAIN) break;
      if (n < 0) return finish(std::string("read: ") + socket_error_name(static_cast<int>(n)));
      if (n == 0) {
        return finish(offset_ == expected_.size() ? "" : "EOF after " + std::to_string(offset_) + " bytes");
      }
      if (offset_ + got.length() > expected_.size()) return finish("more bytes echoed than sent");
      if (!got.contents_equal(std::string_view(expected_).substr(offset_, got.length())))
        return finish("echoed bytes differ near offset " + std::to_string(offset_));
      offset_ += got.length();
      received.store(offset_);
    }
  }

  Worker& worker_;
  const std::string& expected_;
  BufferList to_send_;
  ConnectedSocket conn_;
  size_t offset_ = 0;
  bool shut_ = false;
  bool finished_ = false;
};

// One stack for the whole process: the EAL and the tap port live as long as the process.
class DpdkTapEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    run_command(std::string("ip link del ") + kTapName);  // a leftover from a killed run
    conf_ = std::make_unique<config::Config>();
    conf_->set_assignment("ms.type=dpdk", "test");
    conf_->set_assignment("ms.workers=1", "test");
    conf_->set_assignment(std::string("dpdk.vdev=[\"net_tap0,iface=") + kTapName + "\"]", "test");
    conf_->set_assignment(std::string("dpdk.host_ip=") + kStackIp, "test");
    conf_->set_assignment("dpdk.netmask=255.255.255.0", "test");
    conf_->set_assignment("dpdk.no_huge=auto", "test");
    conf_->set_assignment("dpdk.memory=256M", "test");
    conf_->apply_environment();  // e.g. BYPASS_MS_WORKERS=2 to spread flows over two queues
    stack_ = NetworkStack::create(*conf_);
    ASSERT_EQ(run_command(std::string("ip addr add ") + kKernelIp + "/24 dev " + kTapName), 0);
    ASSERT_EQ(run_command(std::string("ip link set ") + kTapName + " up"), 0);
    stack_->start();
  }
  void TearDown() override {
    if (stack_) stack_->stop();
    stack_.reset();
    run_command(std::string("ip link del ") + kTapName);
  }
  static NetworkStack& stack() { return *stack_; }

 private:
  std::unique_ptr<config::Config> conf_;
  static inline std::shared_ptr<NetworkStack> stack_;
};

sockaddr_in kernel_address(const char* ip, uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  inet_pton(AF_INET, ip, &sa.sin_addr);
  return sa;
}

// Kernel client: writes `data` and reads the echo concurrently with poll(); returns "" on success.
std::string kernel_echo_client(uint16_t port, const std::string& data) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return "socket failed";
  const sockaddr_in sa = kernel_address(kStackIp, port);
  ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
  std::string received;
  received.reserve(data.size());
  size_t sent = 0;
  bool shut = false;
  std::string error;
  char buf[256 * 1024];
  const auto deadline = Clock::now() + kTransferDeadline;
  while (received.size() < data.size() && error.empty()) {
    if (Clock::now() > deadline) {
      error = "timed out: sent " + std::to_string(sent) + ", received " + std::to_string(received.size());
      break;
    }
    pollfd p{fd, static_cast<short>(POLLIN | (sent < data.size() ? POLLOUT : 0)), 0};
    if (::poll(&p, 1, 1000) < 0) {
      if (errno == EINTR) continue;
      error = std::string("poll: ") + strerror(errno);
      break;
    }
    if (p.revents & (POLLERR | POLLHUP) && !(p.revents & POLLIN)) {
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      error = std::string("socket error: ") + strerror(err);
      break;
    }
    if ((p.revents & POLLOUT) && sent < data.size()) {
      const ssize_t n = ::send(fd, data.data() + sent, std::min<size_t>(data.size() - sent, 1 << 20), MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
      if (sent == data.size() && !shut) {
        ::shutdown(fd, SHUT_WR);
        shut = true;
      }
    }
    if (p.revents & POLLIN) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n == 0) {
        error = "EOF after " + std::to_string(received.size()) + " bytes";
      } else if (n > 0) {
        received.append(buf, static_cast<size_t>(n));
      } else if (errno != EAGAIN && errno != EINTR) {
        error = std::string("recv: ") + strerror(errno);
      }
    }
  }
  ::close(fd);
  if (!error.empty()) return error;
  if (received != data) {
    size_t at = 0;
    while (at < received.size() && received[at] == data[at]) ++at;
    return "echoed bytes differ at offset " + std::to_string(at) + " of " + std::to_string(received.size());
  }
  return "";
}

TEST(DpdkTap, KernelClientToBypassEchoServer64MiB) {
  Worker& worker = *DpdkTapEnvironment::stack().worker(0);
  EchoServer server(worker);
  ASSERT_EQ(server.start(7100), 0);
  const std::string data = random_bytes(kTransferBytes, 1);
  EXPECT_EQ(kernel_echo_client(7100, data), "");
  EXPECT_EQ(server.echoed.load(), kTransferBytes);
  EXPECT_EQ(server.errors.load(), 0);
  server.stop();
}

TEST(DpdkTap, BypassClientToKernelEchoServer64MiB) {
  const int listen_fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listen_fd, 0);
  const int one = 1;
  setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in sa = kernel_address(kKernelIp, 0);
  ASSERT_EQ(::bind(listen_fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ASSERT_EQ(::listen(listen_fd, 4), 0);
  socklen_t len = sizeof(sa);
  getsockname(listen_fd, reinterpret_cast<sockaddr*>(&sa), &len);
  const uint16_t port = ntohs(sa.sin_port);

  // Kernel echo server: one connection, echo until EOF, then close.
  std::atomic<bool> stop{false};
  std::thread kernel_server([&] {
    pollfd lp{listen_fd, POLLIN, 0};
    const auto deadline = Clock::now() + kTransferDeadline;
    // net_tap signals the process (SIGIO), so every blocking call here may see EINTR.
    while (!stop && Clock::now() < deadline) {
      lp.revents = 0;
      if (::poll(&lp, 1, 200) > 0) break;
    }
    if (!(lp.revents & POLLIN)) return;
    const int fd = ::accept(listen_fd, nullptr, nullptr);
    if (fd < 0) return;
    char buf[256 * 1024];
    while (!stop && Clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) continue;
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      for (ssize_t off = 0; off < n && !stop;) {
        const ssize_t w = ::send(fd, buf + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += w;
      }
    }
    ::close(fd);
  });

  const std::string data = random_bytes(kTransferBytes, 2);
  Worker& worker = *DpdkTapEnvironment::stack().worker(0);
  auto client = std::make_unique<EchoClient>(worker, data);
  std::future<std::string> result = client->done.get_future();
  SocketAddress target;
  ASSERT_TRUE(SocketAddress::parse(std::string(kKernelIp) + ":" + std::to_string(port), &target));
  ASSERT_EQ(client->start(target), 0);
  if (result.wait_for(kTransferDeadline) == std::future_status::ready) {
    EXPECT_EQ(result.get(), "");
  } else {
    ADD_FAILURE() << "timed out after " << client->received.load() << " echoed bytes";
  }
  EXPECT_EQ(client->received.load(), kTransferBytes);
  client->stop();
  stop = true;
  kernel_server.join();
  ::close(listen_fd);
}

struct DataPathCounters {
  TxChainCounters tx;
  uint64_t rx_checksum_offloads = 0;
  bool tx_checksum_enabled = false;
  bool rx_checksum_enabled = false;
};

DataPathCounters data_path_counters(Worker& worker) {
  DataPathCounters c;
  run_on(worker, [&] {
    auto& dpdk = dynamic_cast<DpdkWorker&>(worker);
    c.tx = dpdk.device().tx_counters();
    c.rx_checksum_offloads = dpdk.device().rx_checksum_offloads();
    c.tx_checksum_enabled = dpdk.device().capabilities().tx_tcp_checksum;
    c.rx_checksum_enabled = dpdk.device().capabilities().rx_checksum;
  });
  return c;
}

// net_tap (DPDK 22.11) offers IPv4/TCP checksum offload both ways: the kernel must accept what
// the stack sends with the checksums left to the port, and the echoed payload (received mbufs)
// must go back attached to mbufs, not copied.
TEST(DpdkTap, EchoUsesZeroCopySendAndChecksumOffload) {
  Worker& worker = *DpdkTapEnvironment::stack().worker(0);
  const DataPathCounters before = data_path_counters(worker);
  EXPECT_TRUE(before.tx_checksum_enabled) << "net_tap should offer tx-tcp-cksum (dpdk.tx_checksum=true)";
  EXPECT_TRUE(before.rx_checksum_enabled) << "net_tap should offer rx-tcp-cksum (dpdk.rx_checksum=true)";
  EchoServer server(worker);
  ASSERT_EQ(server.start(7101), 0);
  constexpr size_t kBytes = 8u << 20;
  const std::string data = random_bytes(kBytes, 3);
  EXPECT_EQ(kernel_echo_client(7101, data), "");
  server.stop();
  const DataPathCounters after = data_path_counters(worker);
  const uint64_t frames = after.tx.frames - before.tx.frames;
  EXPECT_GE(frames, kBytes / 9000);
  EXPECT_EQ(after.tx.checksum_offloads - before.tx.checksum_offloads, frames);
  EXPECT_GT(after.rx_checksum_offloads, before.rx_checksum_offloads);
  // Most echoed bytes leave attached (pieces below dpdk.zero_copy_threshold are copied).
  EXPECT_GT(after.tx.attached_bytes - before.tx.attached_bytes, kBytes / 2);
  EXPECT_EQ(after.tx.unregistered_copies, before.tx.unregistered_copies);  // a vdev reads any memory
}

uint16_t icmp_checksum(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if (len & 1) sum += static_cast<uint32_t>(p[len - 1] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return htons(static_cast<uint16_t>(~sum));
}

TEST(DpdkTap, KernelPingsStack) {
  const int fd = ::socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
  ASSERT_GE(fd, 0) << strerror(errno);
  const sockaddr_in target = kernel_address(kStackIp, 0);
  int replies = 0;
  for (uint16_t seq = 1; seq <= 5; ++seq) {
    uint8_t request[64] = {};
    auto* icmp = reinterpret_cast<icmphdr*>(request);
    icmp->type = ICMP_ECHO;
    icmp->un.echo.id = htons(0x4242);
    icmp->un.echo.sequence = htons(seq);
    std::memset(request + sizeof(icmphdr), 0x5a, sizeof(request) - sizeof(icmphdr));
    icmp->checksum = icmp_checksum(request, sizeof(request));
    ASSERT_EQ(::sendto(fd, request, sizeof(request), 0, reinterpret_cast<const sockaddr*>(&target),
                       sizeof(target)),
              static_cast<ssize_t>(sizeof(request)));
    const auto deadline = Clock::now() + 2s;
    while (Clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      uint8_t reply[1500];
      const ssize_t n = ::recv(fd, reply, sizeof(reply), 0);
      if (n < 20) continue;
      const size_t ihl = (reply[0] & 0x0f) * 4u;
      if (static_cast<size_t>(n) < ihl + sizeof(request)) continue;
      const auto* r = reinterpret_cast<const icmphdr*>(reply + ihl);
      if (r->type != ICMP_ECHOREPLY || ntohs(r->un.echo.id) != 0x4242 || ntohs(r->un.echo.sequence) != seq)
        continue;
      EXPECT_EQ(std::memcmp(reply + ihl + sizeof(icmphdr), request + sizeof(icmphdr),
                            sizeof(request) - sizeof(icmphdr)),
                0);
      ++replies;
      break;
    }
  }
  ::close(fd);
  EXPECT_EQ(replies, 5);
}

}  // namespace
}  // namespace bypass

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (geteuid() != 0) {
    std::printf("SKIP: needs root (creates the tap interface btap0 and sets its address)\n");
    return 77;
  }
  if (std::system("command -v ip >/dev/null 2>&1") != 0) {
    std::printf("SKIP: the ip command (iproute2) is not installed\n");
    return 77;
  }
  ::testing::AddGlobalTestEnvironment(new bypass::DpdkTapEnvironment());
  return RUN_ALL_TESTS();
}
