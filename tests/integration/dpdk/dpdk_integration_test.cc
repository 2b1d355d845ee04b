// The dpdk transport against the Linux kernel over net_tap: the kernel side is a real socket on
// the tap interface btap0 (10.77.0.1/24), the userspace stack answers on 10.77.0.2. Zero-copy send
// and checksum offload (net_tap offers tx/rx checksum offload) are checked through the device's
// counters.
// Root is required (tap creation, interface addresses); without it the test exits 77.
#include <gtest/gtest.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "stack/dpdk/dpdk_stack.h"
#include "tests/integration/dpdk/tap_harness.h"

namespace bypass::tap_test {
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

TEST(DpdkTap, KernelClientToBypassEchoServer64MiB) {
  Worker& worker = *TapStackEnvironment::stack().worker(0);
  EchoServer server(worker);
  ASSERT_EQ(server.start(7100), 0);
  const std::string data = random_bytes(kTransferBytes, 1);
  EXPECT_EQ(kernel_echo_client(kStackIp, 7100, data, kTransferDeadline), "");
  EXPECT_EQ(server.echoed.load(), kTransferBytes);
  EXPECT_EQ(server.errors.load(), 0);
  server.stop();
}

TEST(DpdkTap, BypassClientToKernelEchoServer64MiB) {
  const std::string data = random_bytes(kTransferBytes, 2);
  EXPECT_EQ(stack_echo_to_kernel(*TapStackEnvironment::stack().worker(0), kKernelIp, data, kTransferDeadline), "");
}

uint16_t icmp_checksum(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if (len & 1) sum += static_cast<uint32_t>(p[len - 1] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return htons(static_cast<uint16_t>(~sum));
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
// the stack sends with the checksums left to the port, and (with dpdk.attach_on_copying_ports, set
// for this binary) the echoed payload (received mbufs) must go back attached to mbufs, not copied.
TEST(DpdkTap, EchoUsesZeroCopySendAndChecksumOffload) {
  Worker& worker = *TapStackEnvironment::stack().worker(0);
  const DataPathCounters before = data_path_counters(worker);
  EXPECT_TRUE(before.tx_checksum_enabled) << "net_tap should offer tx-tcp-cksum (dpdk.tx_checksum=true)";
  EXPECT_TRUE(before.rx_checksum_enabled) << "net_tap should offer rx-tcp-cksum (dpdk.rx_checksum=true)";
  EchoServer server(worker);
  ASSERT_EQ(server.start(7101), 0);
  constexpr size_t kBytes = 8u << 20;
  const std::string data = random_bytes(kBytes, 3);
  EXPECT_EQ(kernel_echo_client(kStackIp, 7101, data, kTransferDeadline), "");
  server.stop();
  const DataPathCounters after = data_path_counters(worker);
  const uint64_t frames = after.tx.frames - before.tx.frames;
  EXPECT_GE(frames, kBytes / 9000);
  EXPECT_EQ(after.tx.checksum_offloads - before.tx.checksum_offloads, frames);
  EXPECT_GT(after.rx_checksum_offloads, before.rx_checksum_offloads);
  // Most echoed bytes leave attached (pieces below dpdk.zero_copy_threshold are copied).
  EXPECT_GT(after.tx.attached_bytes - before.tx.attached_bytes, kBytes / 2);
  EXPECT_EQ(after.tx.unregistered_copies, before.tx.unregistered_copies);  // a vdev reads any memory
  // TCP sent large segments, cut into MTU-sized frames below the stack (net_tap's own TSO refuses
  // full-MSS segments in DPDK 22.11, see pmd/offloads.cc), the kernel took every frame.
  EXPECT_EQ(after.tx.tso_segments, before.tx.tso_segments);
  EXPECT_GT(after.tx.cut_segments - before.tx.cut_segments, 0u);
  EXPECT_GT(after.tx.cut_frames - before.tx.cut_frames, after.tx.cut_segments - before.tx.cut_segments);
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
}  // namespace bypass::tap_test

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
  ::testing::AddGlobalTestEnvironment(
      new bypass::tap_test::TapStackEnvironment({bypass::tap_test::kTapName, bypass::tap_test::kKernelIp,
                                                  bypass::tap_test::kStackIp,
                                                  // EchoUsesZeroCopySend... checks attachment against the kernel;
                                                  // net_tap copies frames, so by default it would copy pieces.
                                                  {"dpdk.attach_on_copying_ports=true"}, "", ""}));
  return RUN_ALL_TESTS();
}
