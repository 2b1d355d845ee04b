// Shared pieces of the net_tap integration tests: one userspace stack on a tap interface whose
// kernel side is a real Linux peer, echo servers and clients on both sides, and helpers to run
// commands and read the stack's counters. Everything that touches a connection runs on the
// stack worker's thread (run_on); the kernel side uses plain non-blocking sockets.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "pmd/mempools.h"
#include "pmd/port.h"
#include "stack/inet/inet_stats.h"
#include "stack/network_stack.h"

namespace bypass::tap_test {

// Deterministic pseudo-random payload of `n` bytes.
std::string random_bytes(size_t n, uint64_t seed);
// Runs `command` through the shell with its output discarded; returns the exit status.
int run_command(const std::string& command);
void run_on(Worker& w, std::function<void()> fn);
sockaddr_in kernel_address(const char* ip, uint16_t port);
// `ip` (IPv4 dotted quad or IPv6 text) and `port` as a kernel socket address; its family says which.
struct KernelSockaddr {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family() const { return storage.ss_family; }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};
KernelSockaddr kernel_sockaddr(const char* ip, uint16_t port);
// "ip:port", or "[ip]:port" for IPv6 (the form SocketAddress::parse takes).
std::string address_with_port(const std::string& ip, uint16_t port);

// Echoes every byte of one accepted connection back, on the stack's worker thread.
class EchoServer {
 public:
  explicit EchoServer(Worker& worker) : worker_(worker) {}
  int start(uint16_t port);
  void stop();

  std::atomic<uint64_t> echoed{0};
  std::atomic<int> errors{0};

 private:
  void on_accept();
  void set_interest(int mask);
  void pump();

  Worker& worker_;
  ServerSocket server_;
  ConnectedSocket conn_;
  BufferList pending_;
  int interest_ = kEventNone;
};

// Sends `data` and checks that the same bytes come back, on the stack's worker thread.
class EchoClient {
 public:
  EchoClient(Worker& worker, const std::string& data);
  int start(const SocketAddress& server);
  void stop();

  std::promise<std::string> done;  // "" on success, else what went wrong
  std::atomic<uint64_t> received{0};

 private:
  void finish(std::string result);
  void on_event(int mask);

  Worker& worker_;
  const std::string& expected_;
  BufferList to_send_;
  ConnectedSocket conn_;
  size_t offset_ = 0;
  bool shut_ = false;
  bool finished_ = false;
};

// Kernel client (IPv4 or IPv6, as stack_ip says): connects to stack_ip:port, writes `data` and reads the echo concurrently;
// returns "" when the echo is byte-exact, else what went wrong.
std::string kernel_echo_client(const char* stack_ip, uint16_t port, const std::string& data,
                               std::chrono::seconds deadline);

// Kernel echo server on an ephemeral port of `ip`: serves one connection until EOF or stop().
class KernelEchoServer {
 public:
  KernelEchoServer(const char* ip, std::chrono::seconds deadline);
  ~KernelEchoServer();
  uint16_t port() const { return port_; }
  void stop();

 private:
  void serve(std::chrono::seconds deadline);

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Bypass client -> kernel echo server at kernel_ip: "" when `data` comes back byte-exact.
std::string stack_echo_to_kernel(Worker& worker, const char* kernel_ip, const std::string& data,
                                 std::chrono::seconds deadline);

// Where a test stack lives: the tap interface and the addresses on both ends of it.
struct TapSettings {
  std::string tap;        // kernel interface name, also the net_tap iface
  std::string kernel_ip;  // address of the kernel end (/24)
  std::string stack_ip;   // address of the userspace stack
  std::vector<std::string> assignments;  // extra "key=value" options, before the environment's
  // IPv6 on the tap, when both are set: the kernel's address (/64, added nodad) and the stack's
  // (dpdk.host_ipv6). Empty: the stack runs IPv4 only, as before.
  std::string kernel_ip6;
  std::string stack_ip6;
};

// One stack per process: the EAL and the tap port live as long as the process, so a gtest
// Environment owns it.
class TapStackEnvironment : public ::testing::Environment {
 public:
  explicit TapStackEnvironment(TapSettings settings) : settings_(std::move(settings)) {}
  void SetUp() override;
  void TearDown() override;

  static NetworkStack& stack() { return *stack_; }
  static const TapSettings& settings() { return *current_; }
  // The inet counters of worker `w`, read on its thread.
  static inet::InetStats inet_stats(unsigned w = 0);
  // The port's counters (faults included), read on worker 0's thread.
  static pmd::PortStats port_stats();
  // Mbufs taken from the stack's pools (device rings, sockets, queues) summed over pools.
  static unsigned mbufs_in_use();
  // Waits (bounded) until every worker's DAD (RFC 4862 §5.4) has made the stack's IPv6 address
  // preferred; before that the stack neither answers for it nor sends from it. "" when preferred,
  // else what the workers report.
  static std::string wait_ipv6_preferred(std::chrono::milliseconds bound);

 private:
  TapSettings settings_;
  std::unique_ptr<config::Config> conf_;
  static inline std::shared_ptr<NetworkStack> stack_;
  static inline const TapSettings* current_ = nullptr;
};

}  // namespace bypass::tap_test
