// The userspace stack against a hostile or lossy kernel-side peer over net_tap (tap bpD0, kernel
// 10.68.0.1/24, stack 10.68.0.2):
// - TapOptions: a dumpcap capture of both handshakes, read back with tshark, shows the options
//   our configuration implies on the stack's SYN and SYN-ACK (MSS, window scale, SACK, timestamps).
// - TapHostile: hostile_frames.py (scapy) sends malformed and out-of-window frames and ARP noise,
//   and malformed IPv6, fragments and Neighbor Discovery; the stack answers as the RFCs say, counts
//   every drop (summed over workers), leaks no mbuf and still echoes byte-exact.
// - TapKernelLoss: echo transfers both ways while nftables on the tap drops 5 % each way.
// - TapIpv6Echo, TapIpv6Options, TapIpv6KernelLoss: TCP over IPv6 against the kernel on the same
//   tap (kernel fd00:7a::1/64, stack fd00:7a::2): 64 MiB echoed each way, the handshake options
//   over IPv6 (MSS = MTU - 60), and echo transfers under the same nftables loss.
// - TapFaults: echo transfers both ways through the pmd fault shim (loss, reorder, duplication),
//   run only by the registration that sets dpdk.fault_* (tests/integration/dpdk/meson.build).
// Root is required (exit 77 otherwise); dumpcap, tshark and Debian's python3-scapy must be
// installed (tools/setup.sh test installs them): the tests fail when they are missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/dpdk/tap_harness.h"
#include "tests/support/subprocess.h"

namespace bypass::tap_test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kTapName = "bpD0";
constexpr const char* kKernelIp = "10.68.0.1";
constexpr const char* kStackIp = "10.68.0.2";
constexpr const char* kKernelIp6 = "fd00:7a::1";
constexpr const char* kStackIp6 = "fd00:7a::2";
constexpr const char* kPeerIp = "10.68.0.99";  // the made-up host hostile_frames.py plays
constexpr const char* kPeerIp6 = "fd00:7a::99";  // ... and its IPv6 address
// Options this suite configures, so the capture checks values that come from the configuration
// rather than from defaults that happen to match.
constexpr int kWindowScale = 5;
constexpr int kExpectedMss = 1500 - 20 - 20;  // dpdk.mtu minus IPv4 and TCP headers
constexpr int kExpectedMss6 = 1500 - 40 - 20;  // minus the 40-byte IPv6 header (RFC 8200 §8.3) and TCP
// DAD (RFC 4862 §5.4) takes one RetransTimer (1 s) after the first probe; a bound well above it.
constexpr auto kDadBound = 5000ms;
constexpr uint16_t kClosedPort = 7399;  // nothing listens there
constexpr size_t kCheckTransferBytes = 4u << 20;
constexpr auto kCheckDeadline = 60s;

std::string hostile_frames_script;  // argv[1]: path of hostile_frames.py

// The counter called `name` (as in inet_stats.h), for hostile_frames.py's `expect` lines.
uint64_t counter_by_name(const inet::InetStats& s, const std::string& name) {
  for (const inet::InetCounter& c : inet::kInetCounters)
    if (c.name == name) return s.*(c.field);
  throw std::runtime_error("hostile_frames.py named unknown counter " + name);
}

// Every worker's counters summed: with several workers (BYPASS_MS_WORKERS) a frame is handled by
// whichever worker RSS or the software redirect hands it to, so a drop is counted there.
inet::InetStats all_workers_stats() {
  inet::InetStats sum;
  for (unsigned w = 0; w < TapStackEnvironment::stack().num_workers(); ++w) {
    const inet::InetStats one = TapStackEnvironment::inet_stats(w);
    for (const inet::InetCounter& c : inet::kInetCounters) sum.*(c.field) += one.*(c.field);
  }
  return sum;
}

// "name +delta" for every counter that moved, to explain a failure.
std::string counter_changes(const inet::InetStats& before, const inet::InetStats& after) {
  std::string out;
  for (const inet::InetCounter& c : inet::kInetCounters)
    if (after.*(c.field) != before.*(c.field))
      out += " " + std::string(c.name) + " +" + std::to_string(after.*(c.field) - before.*(c.field));
  return out;
}

// Echo both ways after whatever the test did: the stack must still serve byte-exact.
void expect_echo_both_ways(uint16_t server_port, size_t bytes, std::chrono::seconds deadline, uint64_t seed,
                           const char* stack_ip = kStackIp, const char* kernel_ip = kKernelIp) {
  Worker& worker = *TapStackEnvironment::stack().worker(0);
  EchoServer server(worker);
  ASSERT_EQ(server.start(server_port), 0);
  const std::string inbound = random_bytes(bytes, seed);
  EXPECT_EQ(kernel_echo_client(stack_ip, server_port, inbound, deadline), "") << "kernel client -> stack echo";
  EXPECT_EQ(server.errors.load(), 0);
  server.stop();
  const std::string outbound = random_bytes(bytes, seed + 1);
  EXPECT_EQ(stack_echo_to_kernel(worker, kernel_ip, outbound, deadline), "") << "stack client -> kernel echo";
}

// Every mbuf taken by the test's traffic must come back: waits (bounded) for the pools' in-use
// count to fall to `baseline`, as sockets close and the device recycles its rings.
void expect_mbufs_back_to(unsigned baseline) {
  const auto deadline = Clock::now() + 10s;
  unsigned in_use = TapStackEnvironment::mbufs_in_use();
  while (in_use > baseline && Clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
    in_use = TapStackEnvironment::mbufs_in_use();
  }
  std::printf("mbufs in use: %u before the test, %u after\n", baseline, in_use);
  EXPECT_LE(in_use, baseline) << "mbufs still in use 10 s after the traffic ended (leak?)";
}

// Runs hostile_frames.py GROUP against the echo listener on `listen_port` and checks that every
// counter it names grew by at least what it sent.
void run_hostile_frames(const std::string& group, uint16_t listen_port, uint16_t closed_port) {
  const inet::InetStats before = all_workers_stats();
  const std::string command = "/usr/bin/python3 " + hostile_frames_script + " " + group + " --iface " + kTapName +
                              " --stack-ip " + kStackIp + " --peer-ip " + kPeerIp + " --kernel-ip " + kKernelIp +
                              " --stack-ip6 " + kStackIp6 + " --peer-ip6 " + kPeerIp6 + " --listen-port " +
                              std::to_string(listen_port) + " --closed-port " + std::to_string(closed_port);
  const test::CommandResult run = test::run_with_status("timeout 120 " + command + " 2>&1");
  const std::string& output = run.out;
  ASSERT_EQ(run.status, 0) << command << "\n" << output;
  ASSERT_NE(output.find("\nok\n"), std::string::npos) << output;
  std::map<std::string, uint64_t> expected;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string verb, name;
    uint64_t n = 0;
    if (words >> verb >> name >> n && verb == "expect") expected[name] = n;
  }
  ASSERT_FALSE(expected.empty()) << output;
  // Some counters move after the script returns (the reassembly timer); wait for them, bounded.
  const auto deadline = Clock::now() + 10s;
  std::string missing;
  inet::InetStats after;
  do {
    after = all_workers_stats();
    missing.clear();
    for (const auto& [name, n] : expected) {
      const uint64_t grew = counter_by_name(after, name) - counter_by_name(before, name);
      if (grew < n) missing += " " + name + " grew by " + std::to_string(grew) + ", wanted " + std::to_string(n) + ";";
    }
    if (!missing.empty()) std::this_thread::sleep_for(100ms);
  } while (!missing.empty() && Clock::now() < deadline);
  EXPECT_EQ(missing, "") << output << "counters that moved:" << counter_changes(before, after);
}

TEST(TapHostile, MalformedAndOutOfWindowFramesAreDroppedCountedAndHarmless) {
  const unsigned baseline = TapStackEnvironment::mbufs_in_use();
  Worker& worker = *TapStackEnvironment::stack().worker(0);
  EchoServer listener(worker);
  ASSERT_EQ(listener.start(7301), 0);
  run_hostile_frames("malformed", 7301, kClosedPort);
  listener.stop();
  expect_echo_both_ways(7302, kCheckTransferBytes, kCheckDeadline, 11);
  expect_mbufs_back_to(baseline);
}

TEST(TapHostile, DuplicateAndGratuitousArpAreHarmless) {
  const unsigned baseline = TapStackEnvironment::mbufs_in_use();
  run_hostile_frames("arp", 7311, kClosedPort);
  expect_echo_both_ways(7312, kCheckTransferBytes, kCheckDeadline, 21);
  expect_mbufs_back_to(baseline);
}

// The same over IPv6 (hostile_frames.py ipv6): truncated headers and bad payload lengths, extension
// chains at and past the stack's limit, Routing type 0, overlapping, never-completed, tiny-first
// and atomic fragments, Neighbor Discovery with bad hop limits and options, solicitations for other
// addresses, another MAC advertising our address, ICMPv6 errors with garbage quotes, TCP with a bad
// checksum. The never-completed fragments are freed by the reassembly timer (1 s here), so the
// pools must come back to the baseline; TCP over IPv6 still echoes afterwards.
TEST(TapHostile, MalformedIpv6FragmentsAndNeighborDiscoveryAreDroppedCountedAndHarmless) {
  ASSERT_EQ(TapStackEnvironment::wait_ipv6_preferred(kDadBound), "");
  const unsigned baseline = TapStackEnvironment::mbufs_in_use();
  Worker& worker = *TapStackEnvironment::stack().worker(0);
  EchoServer listener(worker);
  ASSERT_EQ(listener.start(7451), 0);
  run_hostile_frames("ipv6", 7451, kClosedPort);
  listener.stop();
  expect_echo_both_ways(7452, 1u << 20, kCheckDeadline, 81, kStackIp6, kKernelIp6);
  expect_mbufs_back_to(baseline);
}

// One handshake segment as tshark decodes it.
struct SynFields {
  std::string source, ack_flag, mss, wscale, sack_permitted, tsval, tsecr;
};

// The SYN and SYN-ACK segments in `pcap` that match the display filter `only`.
// `source_field` is ip.src or ipv6.src.
std::vector<SynFields> read_syns(const std::string& pcap, const std::string& only, std::string* error,
                                 const std::string& source_field = "ip.src") {
  const test::CommandResult run = test::run_with_status(
      "tshark -n -r " + pcap + " -Y 'tcp.flags.syn == 1 && (" + only + ")' -T fields -E separator=, -e " +
      source_field + " -e tcp.flags.ack -e tcp.options.mss_val"
          " -e tcp.options.wscale.shift -e tcp.options.sack_perm -e tcp.options.timestamp.tsval"
          " -e tcp.options.timestamp.tsecr 2>/dev/null");
  const std::string& output = run.out;
  error->clear();
  if (run.status != 0) {
    *error = "tshark -r " + pcap + " failed (status " + std::to_string(run.status) + "): " + output;
    return {};
  }
  std::vector<SynFields> syns;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string v; std::getline(fields, v, ',');) f.push_back(v);
    f.resize(7);
    syns.push_back({f[0], f[1], f[2], f[3], f[4], f[5], f[6]});
  }
  return syns;
}

// One address family's view of the handshake checks.
struct Family {
  const char* kernel_ip;
  const char* stack_ip;
  const char* source_field;    // tshark's source address field
  const char* capture_filter;  // BPF: tcp[...] reads IPv4 only, so IPv6 captures all of its TCP
  int expected_mss;
  uint16_t echo_port;
  const char* pcap_tag;
};

void check_handshake_options(const Family& fam) {
  const std::string pcap = std::string("/tmp/bypass-D-tap-options-") + fam.pcap_tag + "-" + std::to_string(::getpid()) + ".pcap";
  struct RemoveAtExit {
    const std::string& path;
    ~RemoveAtExit() { std::remove(path.c_str()); }
  } remove_pcap{pcap};
  test::Process dumpcap({"dumpcap", "-q", "-i", kTapName, "-f", fam.capture_filter, "-a", "duration:60",
                         "-w", pcap},
                        60s);
  const auto ready_by = Clock::now() + 10s;
  while (dumpcap.err_so_far().find("Capturing on") == std::string::npos && Clock::now() < ready_by) {
    ASSERT_TRUE(dumpcap.running()) << "dumpcap exited (Debian package tshark; tools/setup.sh test): "
                                   << dumpcap.wait().err;
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_NE(dumpcap.err_so_far().find("Capturing on"), std::string::npos)
      << "dumpcap not capturing: " << dumpcap.err_so_far();
  // dumpcap announces itself before its filter is attached: knock on a closed port of the stack
  // until a SYN shows up in the file (written every 100 ms).
  std::string error;
  bool capturing = false;
  for (const auto until = Clock::now() + 10s; !capturing && Clock::now() < until;) {
    kernel_echo_client(fam.stack_ip, kClosedPort, "knock", 1s);
    std::this_thread::sleep_for(200ms);
    capturing = !read_syns(pcap, "tcp.dstport == " + std::to_string(kClosedPort), &error, fam.source_field).empty();
  }
  ASSERT_TRUE(capturing) << "dumpcap captured no SYN to the closed port within 10 s " << error << dumpcap.err_so_far();

  expect_echo_both_ways(fam.echo_port, 64 * 1024, kCheckDeadline, 31, fam.stack_ip, fam.kernel_ip);
  // The kernel hands captured packets to dumpcap in blocks, on a timer: wait (bounded) until the
  // four handshake segments are in the file before stopping it. A read of the live file may end in
  // the middle of a packet dumpcap is still writing (tshark exits 2, "cut short"): read again.
  const std::string handshakes = "tcp.port != " + std::to_string(kClosedPort);
  for (const auto until = Clock::now() + 10s;
       read_syns(pcap, handshakes, &error, fam.source_field).size() < 4 && Clock::now() < until;)
    std::this_thread::sleep_for(100ms);
  dumpcap.interrupt();
  const test::Result captured = dumpcap.wait();
  ASSERT_FALSE(captured.timed_out) << "dumpcap did not stop on SIGINT";
  ASSERT_EQ(captured.exit_code, 0) << captured.err;
  const std::vector<SynFields> syns = read_syns(pcap, handshakes, &error, fam.source_field);
  ASSERT_EQ(error, "");
  // Four handshake segments: our SYN and the kernel's SYN-ACK, the kernel's SYN and our SYN-ACK.
  ASSERT_EQ(syns.size(), 4u) << "dumpcap: " << captured.err;
  std::string decoded;  // for failure messages
  for (const SynFields& s : syns)
    decoded += "\n  src " + s.source + " ack " + s.ack_flag + " mss " + s.mss + " wscale " + s.wscale + " sack " +
               s.sack_permitted + " tsval " + s.tsval + " tsecr " + s.tsecr;
  SCOPED_TRACE("handshake segments captured:" + decoded);
  int stack_syn = 0, stack_syn_ack = 0, kernel_segments = 0;
  std::string kernel_syn_tsval;
  for (const SynFields& s : syns)
    if (s.source == fam.kernel_ip && s.ack_flag == "0") kernel_syn_tsval = s.tsval;
  for (const SynFields& s : syns) {
    const std::string what = s.source + (s.ack_flag == "1" ? " SYN-ACK" : " SYN");
    // Both ends offer all four options, or the connection would run without them.
    EXPECT_FALSE(s.mss.empty()) << what << " has no MSS option";
    EXPECT_FALSE(s.wscale.empty()) << what << " has no window scale option";
    EXPECT_FALSE(s.sack_permitted.empty()) << what << " has no SACK-permitted option";
    EXPECT_FALSE(s.tsval.empty()) << what << " has no timestamp option";
    if (s.source != fam.stack_ip) {
      ++kernel_segments;
      continue;
    }
    // RFC 9293 §3.7.1: MSS is the MTU less the fixed IP (IPv4 20, IPv6 40 bytes, RFC 8200 §8.3)
    // and TCP headers; RFC 7323 §2.2: the shift we offer is tcp.window_scale.
    EXPECT_EQ(s.mss, std::to_string(fam.expected_mss)) << what;
    EXPECT_EQ(s.wscale, std::to_string(kWindowScale)) << what;
    if (s.ack_flag == "1") {
      ++stack_syn_ack;
      // RFC 7323 §3.2: the SYN-ACK echoes the SYN's TSval.
      EXPECT_EQ(s.tsecr, kernel_syn_tsval) << what;
    } else {
      ++stack_syn;
      EXPECT_EQ(s.tsecr, "0") << what;
    }
  }
  EXPECT_EQ(stack_syn, 1);
  EXPECT_EQ(stack_syn_ack, 1);
  EXPECT_EQ(kernel_segments, 2);
}

TEST(TapOptions, SynAndSynAckCarryTheConfiguredOptions) {
  check_handshake_options({kKernelIp, kStackIp, "ip.src", "tcp[tcpflags] & tcp-syn != 0", kExpectedMss, 7321, "v4"});
}

// The same over IPv6: both SYNs and SYN-ACKs carry MSS 1440 (MTU 1500 - 40 - 20), window scale,
// SACK-permitted and timestamps.
TEST(TapIpv6Options, SynAndSynAckCarryTheConfiguredOptions) {
  ASSERT_EQ(TapStackEnvironment::wait_ipv6_preferred(kDadBound), "");
  check_handshake_options({kKernelIp6, kStackIp6, "ipv6.src", "ip6 and tcp", kExpectedMss6, 7421, "v6"});
}

// 64 MiB over IPv6 each way, byte-exact: kernel client -> stack echo server, stack client ->
// kernel echo server.
constexpr size_t kIpv6TransferBytes = 64u << 20;
constexpr size_t kIpv6LossTransferBytes = 64u << 20;

TEST(TapIpv6Echo, KernelClientToStackServer) {
  ASSERT_EQ(TapStackEnvironment::wait_ipv6_preferred(kDadBound), "");
  Worker& worker = *TapStackEnvironment::stack().worker(0);
  EchoServer server(worker);
  ASSERT_EQ(server.start(7401), 0);
  const std::string data = random_bytes(kIpv6TransferBytes, 61);
  const auto start = Clock::now();
  EXPECT_EQ(kernel_echo_client(kStackIp6, 7401, data, 60s), "") << "kernel client -> stack echo over IPv6";
  std::printf("IPv6 kernel -> stack: %zu bytes echoed in %.1f s\n", data.size(),
              std::chrono::duration<double>(Clock::now() - start).count());
  EXPECT_EQ(server.errors.load(), 0);
  EXPECT_EQ(server.echoed.load(), data.size());
  server.stop();
}

TEST(TapIpv6Echo, StackClientToKernelServer) {
  ASSERT_EQ(TapStackEnvironment::wait_ipv6_preferred(kDadBound), "");
  Worker& worker = *TapStackEnvironment::stack().worker(0);
  const std::string data = random_bytes(kIpv6TransferBytes, 62);
  const auto start = Clock::now();
  EXPECT_EQ(stack_echo_to_kernel(worker, kKernelIp6, data, 60s), "") << "stack client -> kernel echo over IPv6";
  std::printf("IPv6 stack -> kernel: %zu bytes echoed in %.1f s\n", data.size(),
              std::chrono::duration<double>(Clock::now() - start).count());
}

// Kernel-side loss: an nftables netdev table on the tap drops 5 % of the frames in each
// direction (ingress: stack -> kernel, egress: kernel -> stack), counting what it dropped.
class NftLoss {
 public:
  static constexpr const char* kTable = "bypass_D_loss";
  explicit NftLoss(int percent) {
    const std::string tap = kTapName, n = std::to_string(percent);
    const std::string script =
        "add table netdev " + std::string(kTable) + "\n" +
        "add chain netdev " + kTable + " in { type filter hook ingress device " + tap + " priority 0; }\n" +
        "add chain netdev " + kTable + " out { type filter hook egress device " + tap + " priority 0; }\n" +
        "add rule netdev " + kTable + " in meta l4proto tcp numgen random mod 100 < " + n + " counter drop\n" +
        "add rule netdev " + kTable + " out meta l4proto tcp numgen random mod 100 < " + n + " counter drop\n";
    const test::CommandResult run = test::run_with_status("printf '" + script + "' | nft -f - 2>&1");
    if (run.status != 0)
      error_ = "nft -f failed (status " + std::to_string(run.status) + "; Debian package nftables): " + run.out;
  }
  ~NftLoss() { run_command(std::string("nft delete table netdev ") + kTable); }
  const std::string& error() const { return error_; }
  // Packets dropped by the ingress and egress rules so far.
  std::vector<uint64_t> dropped() const {
    const std::string listing = test::run_with_status(std::string("nft list table netdev ") + kTable + " 2>&1").out;
    std::vector<uint64_t> out;
    for (size_t at = listing.find("packets "); at != std::string::npos; at = listing.find("packets ", at + 1))
      out.push_back(std::strtoull(listing.c_str() + at + 8, nullptr, 10));
    return out;
  }

 private:
  std::string error_;
};

TEST(TapKernelLoss, EchoBothWaysStaysByteExactUnderNftablesLoss) {
  const unsigned baseline = TapStackEnvironment::mbufs_in_use();
  NftLoss loss(5);
  ASSERT_EQ(loss.error(), "");
  expect_echo_both_ways(7341, kCheckTransferBytes, 120s, 51);
  const std::vector<uint64_t> dropped = loss.dropped();
  ASSERT_EQ(dropped.size(), 2u) << "cannot read the nftables counters";
  EXPECT_GT(dropped[0], 0u) << "the ingress rule (stack -> kernel) dropped nothing";
  EXPECT_GT(dropped[1], 0u) << "the egress rule (kernel -> stack) dropped nothing";
  expect_mbufs_back_to(baseline);
}

// The same over IPv6. `meta l4proto` is set for IPv6 frames too in a netdev chain, so the rules
// drop TCP over IPv6 and leave Neighbor Discovery alone; the counters prove they dropped.
// BYPASS_TEST_IPV6_LOSS_TRANSFER (bytes) overrides the size for measurements.
TEST(TapIpv6KernelLoss, EchoBothWaysStaysByteExactUnderNftablesLoss) {
  ASSERT_EQ(TapStackEnvironment::wait_ipv6_preferred(kDadBound), "");
  const char* size_env = std::getenv("BYPASS_TEST_IPV6_LOSS_TRANSFER");
  const size_t bytes = size_env ? std::strtoull(size_env, nullptr, 0) : kIpv6LossTransferBytes;
  ASSERT_GT(bytes, 0u) << "BYPASS_TEST_IPV6_LOSS_TRANSFER=" << size_env;
  const unsigned baseline = TapStackEnvironment::mbufs_in_use();
  NftLoss loss(5);
  ASSERT_EQ(loss.error(), "");
  const auto start = Clock::now();
  expect_echo_both_ways(7441, bytes, 120s, 71, kStackIp6, kKernelIp6);
  std::printf("IPv6 under 5 %% loss: %zu bytes echoed each way in %.1f s\n", bytes,
              std::chrono::duration<double>(Clock::now() - start).count());
  const std::vector<uint64_t> dropped = loss.dropped();
  ASSERT_EQ(dropped.size(), 2u) << "cannot read the nftables counters";
  EXPECT_GT(dropped[0], 0u) << "the ingress rule (stack -> kernel) dropped no IPv6 frame";
  EXPECT_GT(dropped[1], 0u) << "the egress rule (kernel -> stack) dropped no IPv6 frame";
  expect_mbufs_back_to(baseline);
}

// 64 MiB each way; BYPASS_TEST_FAULT_TRANSFER (bytes) overrides it for measurements.
TEST(TapFaults, EchoBothWaysStaysByteExactUnderLossReorderAndDuplication) {
  const char* size_env = std::getenv("BYPASS_TEST_FAULT_TRANSFER");
  const size_t bytes = size_env ? std::strtoull(size_env, nullptr, 0) : 64u << 20;
  ASSERT_GT(bytes, 0u) << "BYPASS_TEST_FAULT_TRANSFER=" << size_env;
  const unsigned baseline = TapStackEnvironment::mbufs_in_use();
  const auto start = Clock::now();
  expect_echo_both_ways(7331, bytes, 120s, 41);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const pmd::PortStats stats = TapStackEnvironment::port_stats();
  const inet::InetStats inet = TapStackEnvironment::inet_stats();
  std::printf("fault transfer: %zu bytes echoed each way in %.1f s; rx faults: dropped %lu duplicated %lu "
              "reordered %lu of %lu; tx faults: dropped %lu duplicated %lu reordered %lu of %lu; "
              "retransmitted %lu, fast retransmits %lu, timeouts %lu\n",
              bytes, seconds, stats.rx_faults.dropped, stats.rx_faults.duplicated, stats.rx_faults.reordered,
              stats.rx_faults.seen, stats.tx_faults.dropped, stats.tx_faults.duplicated, stats.tx_faults.reordered,
              stats.tx_faults.seen, inet.tcp_retransmitted_segments, inet.tcp_fast_retransmits, inet.tcp_timeouts);
  // The faults must really have happened, both ways, or this test proves nothing.
  for (const pmd::FaultCounters* c : {&stats.rx_faults, &stats.tx_faults}) {
    EXPECT_GT(c->dropped, 0u) << "no packet dropped: are dpdk.fault_drop and dpdk.fault_on=both set?";
    EXPECT_GT(c->duplicated, 0u) << "no packet duplicated: is dpdk.fault_duplicate set?";
    EXPECT_GT(c->reordered, 0u) << "no packet reordered: is dpdk.fault_reorder set?";
  }
  EXPECT_GT(inet.tcp_retransmitted_segments, 0u) << "the stack never retransmitted: its losses went unseen";
  expect_mbufs_back_to(baseline);
}

}  // namespace
}  // namespace bypass::tap_test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s [gtest flags] PATH/hostile_frames.py\n", argv[0]);
    return 2;
  }
  bypass::tap_test::hostile_frames_script = argv[1];
  if (geteuid() != 0) {
    std::printf("SKIP: needs root (creates the tap interface %s and sets its address)\n", bypass::tap_test::kTapName);
    return 77;
  }
  ::testing::AddGlobalTestEnvironment(new bypass::tap_test::TapStackEnvironment(
      {bypass::tap_test::kTapName, bypass::tap_test::kKernelIp, bypass::tap_test::kStackIp,
       {"tcp.window_scale=" + std::to_string(bypass::tap_test::kWindowScale),
        // Incomplete fragments must be reclaimed within the test's wait (RFC 791 timer, and
        // RFC 8200 §4.5's for IPv6).
        "tcp.ip_reassembly_timeout=1s", "dpdk.ipv6_reassembly_timeout=1s",
        // The tap's RTT is tens of microseconds; with the default 200 ms RTO floor every lost
        // retransmission in the loss tests stalls its transfer for 200 ms (about 10x the run time).
        "tcp.rto_min=20ms"},
       bypass::tap_test::kKernelIp6, bypass::tap_test::kStackIp6}));
  return RUN_ALL_TESTS();
}
