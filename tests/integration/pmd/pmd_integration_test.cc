// bypass-pmd end to end, as root: net_ring, net_tap (checked from Linux with `ip link`), two memif
// processes forwarding with counters that agree, af_packet over a veth pair between two network
// namespaces, each with and without hugepages where the host has them; the forwarding modes checked
// frame by frame on net_pcap files; --json output parsed as JSON; the interactive shell fed from
// stdin; and bad input giving one clear line and a non-zero exit (command-line mistakes before the
// EAL starts). Every process runs under a deadline; namespaces, links and files are removed even
// when a test fails.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "config/json_reader.h"
#include "tests/support/subprocess.h"

namespace {

using bypass::config::JsonValue;
using bypass::config::parse_json_lines;
using bypass::test::Process;
using bypass::test::Result;
using bypass::test::slurp;

std::string g_tool;  // path of bypass-pmd
const std::string g_tag = std::to_string(getpid());

Result run(const std::vector<std::string>& argv, std::chrono::seconds deadline = std::chrono::seconds(30)) {
  return Process(argv, deadline).wait();
}

// bypass-pmd -i reading `commands` from stdin, as an operator would pipe them in.
Result run_shell(std::vector<std::string> argv, const std::string& commands) {
  argv.insert(argv.begin(), {"env", "HOME=/tmp"});  // the history file goes to /tmp
  argv.push_back("-i");
  return Process(argv, std::chrono::seconds(30), commands).wait();
}

bool sh(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

// bypass-pmd with the memory settings every test uses (small, so parallel tests fit in hugepages).
std::vector<std::string> tool(const std::string& huge, std::vector<std::string> args) {
  std::vector<std::string> argv = {g_tool, "--set", "ms.workers=1", "--set", "dpdk.memory=128M",
                                   "--set", "dpdk.mbufs=8191", "--set", "dpdk.no_huge=" + huge};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::vector<std::string> in_netns(const std::string& ns, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"ip", "netns", "exec", ns});
  return argv;
}

// Waits (bounded) until a memif server listens on the abstract socket `path`: a client started
// earlier fails at once, and a fixed sleep is not enough when the machine is busy.
bool wait_for_memif_server(const std::string& path, Process& server) {
  for (int i = 0; i < 400 && server.running(); ++i) {
    std::ifstream unix_sockets("/proc/net/unix");
    std::string line;
    while (std::getline(unix_sockets, line))
      if (line.size() > path.size() && line.compare(line.size() - path.size() - 1, std::string::npos, "@" + path) == 0)
        return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Two bypass-pmd processes over memif: `server` (role=server) until it listens on `socket`, then
// `client` to its end; both results once both exited. listened is false when the server never did.
struct MemifPair {
  bool listened = false;
  Result server, client;
};
MemifPair run_memif_pair(const std::vector<std::string>& server, const std::string& socket,
                         const std::vector<std::string>& client) {
  Process server_process(server, std::chrono::seconds(60));
  MemifPair pair;
  pair.listened = wait_for_memif_server(socket, server_process);
  if (pair.listened) pair.client = run(client, std::chrono::seconds(60));
  pair.server = server_process.wait();
  return pair;
}

bool hugepages_free() {
  std::ifstream in("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages");
  unsigned long pages = 0;
  in >> pages;
  return pages >= 256 && sh("mountpoint -q /dev/hugepages");
}

std::string describe(const Result& r) {
  return "exit " + std::to_string(r.exit_code) + " signal " + std::to_string(r.signal) +
         (r.timed_out ? " (timed out)" : "") + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

// The summary object of `fwd --json` output (its last line); every line must be valid JSON.
JsonValue fwd_summary(const std::string& out) {
  const std::vector<JsonValue> docs = parse_json_lines(out);
  if (docs.empty() || docs.back().at("type").text != "summary") throw std::runtime_error("no fwd summary in: " + out);
  return docs.back();
}

// One counter of the first port in the `fwd --json` summary.
uint64_t summary_field(const std::string& out, const std::string& field) {
  return fwd_summary(out).at("ports").at(0).at(field).count();
}

// ---- pcap files: net_pcap replays a file we write and records what the port sends, so a test can
// compare frames byte for byte without a second process or a kernel interface.

using Frame = std::vector<uint8_t>;

void write_pcap(const std::string& path, const std::vector<Frame>& frames) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  auto u32 = [&](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [&](uint16_t v) { out.write(reinterpret_cast<const char*>(&v), 2); };
  u32(0xa1b2c3d4);  // microsecond timestamps, host byte order
  u16(2);
  u16(4);
  u32(0);      // time zone
  u32(0);      // timestamp accuracy
  u32(65535);  // snap length
  u32(1);      // LINKTYPE_ETHERNET
  uint32_t usec = 0;
  for (const Frame& f : frames) {
    u32(1);
    u32(usec++);
    u32(static_cast<uint32_t>(f.size()));
    u32(static_cast<uint32_t>(f.size()));
    out.write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
  }
}

// Frames of a pcap file in host byte order (what net_pcap writes: micro- or nanosecond magic).
std::vector<Frame> read_pcap(const std::string& path) {
  const std::string bytes = slurp(path);
  std::vector<Frame> frames;
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    std::memcpy(&v, bytes.data() + at, 4);
    return v;
  };
  if (bytes.size() < 24 || (u32(0) != 0xa1b2c3d4 && u32(0) != 0xa1b23c4d))
    throw std::runtime_error(path + ": not a pcap file in host byte order");
  for (size_t at = 24; at + 16 <= bytes.size();) {
    const uint32_t captured = u32(at + 8);
    if (at + 16 + captured > bytes.size()) throw std::runtime_error(path + ": truncated record");
    frames.emplace_back(bytes.begin() + static_cast<std::ptrdiff_t>(at + 16),
                        bytes.begin() + static_cast<std::ptrdiff_t>(at + 16 + captured));
    at += 16 + captured;
  }
  return frames;
}

// `count` 64-byte Ethernet/IPv4/UDP frames, each from its own source MAC and carrying its index,
// so reordering, loss, duplication or a wrong rewrite all show.
std::vector<Frame> numbered_frames(int count) {
  std::vector<Frame> frames;
  for (int i = 0; i < count; ++i) {
    Frame f(64, 0);
    const uint8_t dst[6] = {0x02, 0x00, 0x00, 0x00, 0x01, 0x00};
    const uint8_t src[6] = {0x02, 0x00, 0x00, 0x00, 0x00, static_cast<uint8_t>(i)};
    std::memcpy(&f[0], dst, 6);
    std::memcpy(&f[6], src, 6);
    f[12] = 0x08;  // IPv4
    f[14] = 0x45;
    f[17] = 64 - 14;  // total length
    f[22] = 64;       // TTL
    f[23] = 17;       // UDP
    const uint8_t addresses[8] = {198, 18, 0, 1, 198, 18, 0, 2};
    std::memcpy(&f[26], addresses, 8);
    f[34] = 0x04;  // source port 1024 + i
    f[35] = static_cast<uint8_t>(i);
    f[37] = 9;  // discard
    f[39] = 64 - 34;
    for (size_t b = 42; b < f.size(); ++b) f[b] = static_cast<uint8_t>(i + b);
    frames.push_back(std::move(f));
  }
  return frames;
}

std::string mac_text(const Frame& f, size_t offset) {
  char text[18];
  std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x", f[offset], f[offset + 1], f[offset + 2],
                f[offset + 3], f[offset + 4], f[offset + 5]);
  return text;
}

// A pcap input file and the path net_pcap records into; both removed at scope exit.
struct PcapFiles {
  std::string in, out;
  explicit PcapFiles(const std::string& name)
      : in("/tmp/bypass-pmd-it-" + g_tag + "-" + name + "-in.pcap"),
        out("/tmp/bypass-pmd-it-" + g_tag + "-" + name + "-out.pcap") {
    std::remove(out.c_str());
  }
  ~PcapFiles() {
    std::remove(in.c_str());
    std::remove(out.c_str());
  }
  std::string vdev() const { return "net_pcap0,rx_pcap=" + in + ",tx_pcap=" + out; }
};

// Hugepages "no" runs only where the host has them; "yes" (plain memory) always runs.
class WithAndWithoutHugepages : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "no" && !hugepages_free()) GTEST_SKIP() << "SKIP: no free hugepages on this host";
  }
  const std::string& huge() const { return GetParam(); }
};

TEST_P(WithAndWithoutHugepages, RingPortComesUp) {
  const Result r = run(tool(huge(), {"--vdev", "net_ring0", "--json", "ports"}));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const std::vector<JsonValue> docs = parse_json_lines(r.out);
  ASSERT_EQ(docs.size(), 1u) << r.out;
  const JsonValue& ports = docs[0].at("ports");
  ASSERT_EQ(ports.items.size(), 1u) << r.out;
  const JsonValue& port = ports.at(0);
  EXPECT_EQ(port.at("driver").text, "net_ring");
  EXPECT_EQ(port.at("name").text, "net_ring0");
  EXPECT_TRUE(port.at("link").at("up").boolean) << r.out;
  EXPECT_EQ(port.at("mtu").count(), 1500u);
  EXPECT_EQ(port.at("workers").count(), 1u);
  // What we enabled is a subset of what the port can do; what it cannot do is a reported fallback.
  for (const JsonValue& enabled : port.at("enabled").items) {
    bool capable = false;
    for (const JsonValue& c : port.at("capabilities").items) capable |= c.text == enabled.text;
    EXPECT_TRUE(capable) << enabled.text << " enabled but not among the capabilities: " << r.out;
  }
  bool tso_fallback = false;
  for (const JsonValue& f : port.at("fallbacks").items)
    tso_fallback |= f.text.find("tso: not supported by net_ring") == 0;
  EXPECT_TRUE(tso_fallback) << r.out;
}

TEST_P(WithAndWithoutHugepages, TapInterfaceAppearsInLinuxAndGoesAway) {
  if (!std::filesystem::exists("/dev/net/tun")) GTEST_SKIP() << "SKIP: /dev/net/tun missing";
  const std::string iface = "bpt" + g_tag + huge().substr(0, 1);
  Process p(tool(huge(), {"--vdev", "net_tap0,iface=" + iface, "stats", "--watch", "200ms", "--duration", "4s"}),
            std::chrono::seconds(30));
  bool seen = false;
  for (int i = 0; i < 200 && !seen && p.running(); ++i) {
    seen = sh("ip link show dev " + iface);
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(seen) << "ip link never showed " << iface;
  const Result r = p.wait();
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("RX-packets"), std::string::npos);
  EXPECT_FALSE(sh("ip link show dev " + iface)) << iface << " left behind";
  // The tap offers checksums and TSO but no LRO: enabled vs fallback as data.
  const Result ports = run(tool(huge(), {"--vdev", "net_tap0,iface=" + iface, "--json", "ports"}));
  ASSERT_EQ(ports.exit_code, 0) << describe(ports);
  EXPECT_NE(ports.out.find("\"enabled\":[\"rx-ipv4-cksum\""), std::string::npos) << ports.out;
  EXPECT_NE(ports.out.find("lro: not supported by net_tap"), std::string::npos) << ports.out;
}

// Memif generators linger (idle, port open) until the receiver leaves, so it drains all they sent.
TEST_P(WithAndWithoutHugepages, MemifForwardingCountersAgree) {
  const std::string socket = "/run/bypass-pmd-it-" + g_tag + "-" + huge() + ".sock";  // abstract: no file
  const MemifPair p = run_memif_pair(
      tool(huge(), {"--set", "ms.cpus=0", "--set", "dpdk.link_wait=15s", "--vdev",
                    "net_memif0,role=server,socket=" + socket, "--json", "fwd", "rxonly", "--duration", "8s"}),
      socket,
      tool(huge(), {"--set", "ms.cpus=1", "--set", "dpdk.link_wait=15s", "--vdev", "net_memif0,role=client,socket=" + socket,
                    "--json", "fwd", "txonly", "--size", "64", "--duration", "2s", "--linger", "20s"}));
  ASSERT_TRUE(p.listened) << describe(p.server);
  const Result &client = p.client, &srv = p.server;
  ASSERT_EQ(client.exit_code, 0) << describe(client);
  ASSERT_EQ(srv.exit_code, 0) << describe(srv);
  const uint64_t sent = summary_field(client.out, "tx_packets");
  const uint64_t received = summary_field(srv.out, "rx_packets");
  EXPECT_GT(sent, 1000u) << client.out;
  EXPECT_EQ(received, sent) << "server:\n" << srv.out << "\nclient:\n" << client.out;
}

// Every frame a memif sender transmits is accounted for by the receiver: received, or one of the
// drop counters of its fwd summary (redirect ring full, rx missed, rx nombuf, rx errors), whatever
// the worker count of either side. A 64-slot redirect ring makes a two-worker receiver drop, so the
// drop path is counted too; the receiver outlasts the sender's traffic, so nothing is in flight.
struct AccountingCase {
  unsigned receiver_workers, sender_workers, redirect_ring;
};

class MemifAccounting : public testing::TestWithParam<AccountingCase> {};

TEST_P(MemifAccounting, ReceivedPlusDroppedEqualsSent) {
  const AccountingCase c = GetParam();
  const std::string socket = "/run/bypass-pmd-it-" + g_tag + "-acct.sock";  // abstract: no file
  auto side = [&](unsigned workers, const std::string& cpus, std::vector<std::string> args) {
    std::vector<std::string> argv = tool("yes", {"--set", "ms.workers=" + std::to_string(workers), "--set",
                                                 "ms.cpus=" + cpus, "--set", "dpdk.link_wait=15s", "--set",
                                                 "dpdk.redirect_ring=" + std::to_string(c.redirect_ring)});
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  };
  const MemifPair p = run_memif_pair(
      side(c.receiver_workers, "0-1",
           {"--vdev", "net_memif0,role=server,socket=" + socket, "--json", "fwd", "rxonly", "--duration", "8s"}),
      socket,
      side(c.sender_workers, "1,0",
           {"--vdev", "net_memif0,role=client,socket=" + socket, "--json", "fwd", "txonly", "--size", "64",
            "--duration", "2s", "--linger", "20s"}));
  ASSERT_TRUE(p.listened) << describe(p.server);
  const Result &sender = p.client, &rx = p.server;
  ASSERT_EQ(sender.exit_code, 0) << describe(sender);
  ASSERT_EQ(rx.exit_code, 0) << describe(rx);
  const JsonValue sent_summary = fwd_summary(sender.out), rx_summary = fwd_summary(rx.out);
  const JsonValue& s = sent_summary.at("ports").at(0);
  const JsonValue& r = rx_summary.at("ports").at(0);
  const uint64_t sent = s.at("tx_packets").count();
  ASSERT_GT(sent, 1000u) << sender.out;
  const uint64_t drops = r.at("redirect_drops").count() + r.at("rx_missed").count() + r.at("rx_nombuf").count() +
                         r.at("rx_errors").count();
  EXPECT_EQ(r.at("dropped").count(), drops) << rx.out;
  EXPECT_EQ(r.at("rx_packets").count() + drops, sent) << "receiver:\n" << rx.out << "\nsender:\n" << sender.out;
  // The per-worker lines add up to the port's.
  uint64_t worker_rx = 0, worker_redirect_drops = 0;
  ASSERT_EQ(r.at("workers").items.size(), c.receiver_workers) << rx.out;
  for (const JsonValue& w : r.at("workers").items) {
    worker_rx += w.at("rx_packets").count();
    worker_redirect_drops += w.at("redirect_drops").count();
  }
  EXPECT_EQ(worker_rx, r.at("rx_packets").count());
  EXPECT_EQ(worker_redirect_drops, r.at("redirect_drops").count());
  if (c.receiver_workers > 1 && c.redirect_ring == 64) {
    EXPECT_GT(r.at("redirect_drops").count(), 0u) << rx.out;
  }
}

INSTANTIATE_TEST_SUITE_P(Workers, MemifAccounting,
                         testing::Values(AccountingCase{1, 1, 4096}, AccountingCase{2, 2, 4096},
                                         AccountingCase{2, 2, 64}, AccountingCase{2, 1, 4096},
                                         AccountingCase{1, 2, 4096}),
                         [](const testing::TestParamInfo<AccountingCase>& i) {
                           return "Receiver" + std::to_string(i.param.receiver_workers) + "Sender" +
                                  std::to_string(i.param.sender_workers) + "Ring" +
                                  std::to_string(i.param.redirect_ring);
                         });

TEST_P(WithAndWithoutHugepages, AfPacketOverVethBetweenNamespaces) {
  const std::string a = "bpa" + g_tag + huge().substr(0, 1), b = "bpb" + g_tag + huge().substr(0, 1);
  struct Cleanup {
    std::string a, b;
    ~Cleanup() {
      sh("ip netns del " + a);
      sh("ip netns del " + b);
      sh("ip link del " + a);
    }
  } cleanup{a, b};
  ASSERT_TRUE(sh("ip netns add " + a) && sh("ip netns add " + b)) << "cannot create network namespaces";
  ASSERT_TRUE(sh("ip link add " + a + " type veth peer name " + b));
  ASSERT_TRUE(sh("ip link set " + a + " netns " + a) && sh("ip link set " + b + " netns " + b));
  // The kernel would otherwise send its own frames on the veth as it comes up (IPv6 router and
  // neighbour solicitations, MLD reports), which the receiver counts on top of the sender's.
  for (const std::string& ns : {a, b}) {
    ASSERT_TRUE(sh("ip netns exec " + ns + " sysctl -qw net.ipv6.conf.all.disable_ipv6=1") &&
                sh("ip netns exec " + ns + " sysctl -qw net.ipv6.conf.default.disable_ipv6=1"));
    ASSERT_TRUE(sh("ip -n " + ns + " link set " + ns + " multicast off arp off up"));
  }
  Process receiver(in_netns(b, tool(huge(), {"--set", "ms.cpus=0", "--vdev", "net_af_packet0,iface=" + b, "--json",
                                             "fwd", "rxonly", "--duration", "6s"})),
                   std::chrono::seconds(60));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const Result sender = run(in_netns(a, tool(huge(), {"--set", "ms.cpus=1", "--vdev", "net_af_packet0,iface=" + a,
                                                      "--json", "fwd", "txonly", "--duration", "2s"})),
                            std::chrono::seconds(60));
  const Result rx = receiver.wait();
  ASSERT_EQ(sender.exit_code, 0) << describe(sender);
  ASSERT_EQ(rx.exit_code, 0) << describe(rx);
  const uint64_t sent = summary_field(sender.out, "tx_packets");
  const uint64_t received = summary_field(rx.out, "rx_packets");
  EXPECT_GT(sent, 0u);
  EXPECT_GT(received, 0u) << rx.out;
  EXPECT_LE(received, sent);  // a veth may drop under load; it never invents frames
}

INSTANTIATE_TEST_SUITE_P(Memory, WithAndWithoutHugepages, testing::Values("yes", "no"),
                         [](const testing::TestParamInfo<std::string>& i) {
                           return i.param == "yes" ? std::string("NoHuge") : std::string("Hugepages");
                         });

TEST(Shell, CommandsFromStdinWithErrorsThatDoNotEndTheSession) {
  const std::string script = "printf 'ports --json\\nbogus\\nstats --json\\nreset-stats\\nmempool --json\\nquit\\n' | HOME=/tmp " +
                             g_tool + " --set ms.workers=1 --set dpdk.no_huge=yes --vdev net_ring0 -i";
  const Result r = run({"sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("\"driver\":\"net_ring\""), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("error: unknown command 'bogus'"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("\"rx_nombuf\":0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("statistics of 1 ports reset"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"mempools\":[{"), std::string::npos) << r.out;
}

// Bad input: a clear one-line error naming what to change, a non-zero exit, no signal.
Result expect_clean_error(const std::vector<std::string>& argv, const std::string& needle, bool single_line = true) {
  const Result r = run(argv);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.signal, 0) << describe(r);
  EXPECT_GT(r.exit_code, 0) << describe(r);
  std::string last = r.err;
  while (!last.empty() && last.back() == '\n') last.pop_back();
  if (single_line) {
    EXPECT_EQ(last.find('\n'), std::string::npos) << "more than one line:\n" << r.err;
  }
  last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
  EXPECT_EQ(last.rfind("bypass-pmd: ", 0), 0u) << r.err;
  EXPECT_NE(last.find(needle), std::string::npos) << "expected '" << needle << "' in: " << last;
  return r;
}

TEST(BadInput, UnknownVirtualDevice) {
  expect_clean_error(tool("yes", {"--vdev", "net_bogus0", "ports"}), "dpdk.vdev: unknown virtual device 'net_bogus0'");
}

TEST(BadInput, MissingMemifSocket) {
  const std::string path = "/tmp/bypass-pmd-no-server-" + g_tag + ".sock";
  expect_clean_error(tool("yes", {"--vdev", "net_memif0,role=client,socket-abstract=no,socket=" + path, "ports"}),
                     "memif socket '" + path + "' of 'net_memif0' does not exist");
}

TEST(BadInput, MemifPeerThatNeverComes) {
  // An abstract socket cannot be checked up front: the client's start fails and says why.
  expect_clean_error(tool("yes", {"--set", "dpdk.link_wait=1s", "--vdev",
                                  "net_memif0,role=client,socket=/run/bypass-pmd-nobody-" + g_tag + ".sock", "fwd",
                                  "rxonly", "--duration", "1s"}),
                     "needs its role=server peer listening on the same socket; check dpdk.vdev", false);
  // A server whose client never comes: the link wait names its option.
  expect_clean_error(tool("yes", {"--set", "dpdk.link_wait=1s", "--vdev",
                                  "net_memif0,role=server,socket=/run/bypass-pmd-lonely-" + g_tag + ".sock", "fwd",
                                  "rxonly", "--duration", "1s"}),
                     "dpdk.link_wait: port 0 (net_memif0) link still down after 1s", false);
}

TEST(BadInput, ZeroHugepages) {
  const std::string dir = "/tmp/bypass-pmd-not-hugetlbfs-" + g_tag;
  std::filesystem::create_directories(dir);
  expect_clean_error({g_tool, "--set", "dpdk.no_huge=no", "--set", "dpdk.huge_dir=" + dir, "--vdev", "net_ring0",
                      "ports"},
                     "dpdk.huge_dir: '" + dir + "' is not a hugetlbfs mount");
  std::filesystem::remove(dir);
  // More than the host has: hugepages required, none to be had.
  expect_clean_error({g_tool, "--set", "dpdk.no_huge=no", "--set", "dpdk.memory=1T", "--vdev", "net_ring0", "ports"},
                     "dpdk.no_huge: hugepages required but");
}

TEST(BadInput, WorkerCpuThatDoesNotExist) {
  expect_clean_error({g_tool, "--set", "ms.cpus=1000", "--vdev", "net_ring0", "ports"}, "ms.cpus: CPU 1000 does not exist");
}

// Command-line mistakes are caught before the EAL starts: with info logging on, a started EAL
// would log its arguments, so exactly one line on stderr proves it never started.
TEST(BadInput, ArgumentsAreCheckedBeforeTheEalStarts) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"frobnicate"},
       "unknown command 'frobnicate' (expected ports, stats, xstats, reset-stats, fwd, mempool, flow, stack, doctor, help)"},
      {{"--frobnicate", "ports"}, "unknown option '--frobnicate' (expected -c FILE, --set key=value"},
      {{"quit"}, "quit: only inside the interactive shell (-i)"},
      {{"-i", "ports"}, "-i takes no command"},
      {{"--json", "-i"}, "--json with -i: give --json to each command inside the shell"},
      {{"ports", "--vdev"}, "ports: unknown option '--vdev' (it takes only --json)"},
      {{"ports", "--all"}, "ports: unknown option '--all' (it takes only --json)"},
      {{"mempool", "extra"}, "mempool: unexpected argument 'extra'"},
      {{"fwd"}, "fwd: needs a mode: io, mac, rxonly, txonly or flowgen"},
      {{"fwd", "sideways"}, "fwd: unknown mode 'sideways' (expected io, mac, rxonly, txonly or flowgen)"},
      {{"fwd", "io", "rxonly"}, "fwd: unexpected argument 'rxonly' after the mode"},
      {{"fwd", "txonly", "--speed", "1"},
       "fwd: unknown option '--speed' (expected --size, --burst, --flows, --duration"},
      {{"fwd", "txonly", "--size", "10"}, "fwd --size: '10' must be a whole number in 42..2048"},
      {{"fwd", "txonly", "--size", "100000"}, "fwd --size: '100000' must be a whole number in 42..2048"},
      {{"fwd", "txonly", "--size", "-64"}, "fwd --size: '-64' must be a whole number in 42..2048"},
      {{"fwd", "txonly", "--size=big"}, "fwd --size: 'big' must be a whole number in 42..2048"},
      {{"fwd", "txonly", "--burst", "0"}, "fwd --burst: '0' must be a whole number in 1..512"},
      {{"fwd", "txonly", "--burst", "99999999999999999999999"}, "fwd --burst: '99999999999999999999999' must be"},
      {{"fwd", "flowgen", "--flows", "0"}, "fwd --flows: '0' must be a whole number in 1..64511"},
      {{"fwd", "io", "--duration", "soon"}, "fwd --duration: 'soon' is not a duration"},
      {{"fwd", "io", "--duration"}, "fwd --duration: needs a value"},
      {{"fwd", "txonly", "--linger", "later"}, "fwd --linger: 'later' is not a duration"},
      {{"stats", "--watch", "1ms"}, "stats --watch: '1ms' is too short; use 10ms or more"},
      {{"stats", "--watch", "often"}, "stats --watch: 'often' is not a duration"},
      {{"xstats", "--filter", "(["}, "xstats --filter: '([' is not a valid regular expression"},
      {{"xstats", "--filter"}, "xstats --filter: needs a value"},
      {{"xstats", "rx_"}, "xstats: unexpected argument 'rx_'"},
      {{"flow"}, "flow: needs a command: list, isolate, validate, create, destroy or flush"},
      {{"flow", "create"}, "flow create: needs a port id (e.g. flow create 0 ...)"},
      {{"flow", "isolate", "0", "maybe"}, "flow isolate PORT: expected on or off, got 'maybe'"},
      {{"flow", "create", "0", "ingress", "pattern", "eth", "/", "sctp", "/", "end", "actions", "drop", "/", "end"},
       "flow create: pattern: unknown item 'sctp' (expected eth, ipv4, ipv6, arp_eth_ipv4, tcp, udp or end)"},
      {{"flow", "validate", "0", "ingress", "pattern", "eth", "/", "end", "actions", "queue", "index", "x", "/", "end"},
       "flow validate: queue index: 'x' is not a number in 0..65535"},
      {{"flow", "destroy", "0"}, "flow destroy PORT: needs rule IDs (flow destroy 0 rule 3)"},
  };
  for (const auto& [args, needle] : cases) {
    SCOPED_TRACE(needle);
    std::vector<std::string> argv = {"env", "BYPASS_LOG=info", g_tool, "--set",
                                     "dpdk.no_huge=yes", "--vdev", "net_ring0"};
    argv.insert(argv.end(), args.begin(), args.end());
    const Result r = expect_clean_error(argv, needle);
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_EQ(r.out, "") << "a rejected command prints nothing on stdout";
  }
  // A larger mbuf raises the --size limit: the bound comes from the configuration.
  expect_clean_error({g_tool, "--set", "dpdk.mbuf_size=4224", "fwd", "txonly", "--size", "5000"},
                     "fwd --size: '5000' must be a whole number in 42..4096");
}

// rte_flow on ports that cannot do it: one line naming what the port lacks or refuses. net_ring has
// no flow operations at all; net_tap's rte_flow has no ARP item on any kernel (and on a kernel
// without the multiq qdisc, like this host's, no rules at all: its log says "Disabling rte flow
// support"). The working case runs in the guest (flow_isolation_guest).
TEST(BadInput, FlowIsolationAndRulesThePortCannotTake) {
  expect_clean_error(tool("yes", {"--vdev", "net_ring0", "flow", "isolate", "0", "on"}),
                     "port 0 (net_ring0): driver net_ring cannot enter rte_flow isolated mode: the driver has no "
                     "rte_flow support");
  expect_clean_error(tool("yes", {"--vdev", "net_ring0", "--set", "dpdk.flow_isolate=true", "ports"}),
                     "dpdk.flow_isolate: port 0 (net_ring0): driver net_ring cannot isolate its traffic with rte_flow: "
                     "the driver has no rte_flow support");
  expect_clean_error(tool("yes", {"--vdev", "net_ring0", "--set", "dpdk.flow_isolate=true", "--set",
                                  "dpdk.host_ip=10.93.0.2", "stack", "ping", "10.93.0.1", "-c", "1"}),
                     "dpdk.flow_isolate: port 0 (net_ring0): driver net_ring cannot isolate its traffic");
  expect_clean_error(tool("yes", {"--vdev", "net_ring0", "flow", "create", "0", "ingress", "pattern", "eth", "/",
                                  "ipv4", "dst", "is", "10.93.0.2", "/", "end", "actions", "queue", "index", "0", "/",
                                  "end"}),
                     "flow create: port 0 (net_ring0) refuses the rule: the driver has no rte_flow support");
  expect_clean_error(tool("yes", {"--vdev", "net_ring0", "flow", "list", "5"}), "flow: no port 5 (1 ports open");
  const std::string tap = "bpflow" + g_tag;
  expect_clean_error(tool("yes", {"--vdev", "net_tap0,iface=" + tap, "flow", "create", "0", "ingress", "pattern", "eth",
                                  "/", "arp_eth_ipv4", "tpa", "is", "10.93.0.2", "/", "end", "actions", "queue", "index",
                                  "0", "/", "end"}),
                     "flow create: port 0 (net_tap0) refuses the rule: item not supported (Operation not supported) "
                     "at pattern item 2 (arp_eth_ipv4)",
                     false);  // net_tap logs its own lines about the qdisc first
  // Where the kernel lacks the multiq qdisc (this host's does), net_tap has no rte_flow at all.
  const bool multiq = sh("ip tuntap add dev " + tap + " mode tap multi_queue") &&
                      sh("tc qdisc add dev " + tap + " root multiq");
  sh("ip link del " + tap);
  if (!multiq)
    expect_clean_error(tool("yes", {"--vdev", "net_tap0,iface=" + tap, "--set", "dpdk.flow_isolate=true", "--set",
                                    "dpdk.host_ip=10.93.0.2", "stack", "ping", "10.93.0.1", "-c", "1"}),
                       "dpdk.flow_isolate: port 0 (net_tap0): driver net_tap cannot isolate its traffic with rte_flow: "
                       "TC rule creation failed",
                       false);
  sh("ip link del " + tap);
}

// ---- forwarding modes, checked frame by frame on a pcap port: one process, a fixed number of
// frames from a file, and a recorded output file to compare with what went in.

TEST(Forwarding, IoSendsEveryFrameBackUnchangedAndInOrder) {
  PcapFiles files("io");
  const std::vector<Frame> frames = numbered_frames(100);
  write_pcap(files.in, frames);
  const Result r = run(tool("yes", {"--vdev", files.vdev(), "--json", "fwd", "io", "--duration", "1s"}));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const JsonValue summary = fwd_summary(r.out);
  EXPECT_EQ(summary.at("mode").text, "io");
  const JsonValue& port = summary.at("ports").at(0);
  EXPECT_EQ(port.at("rx_packets").count(), 100u) << r.out;
  EXPECT_EQ(port.at("tx_packets").count(), 100u) << r.out;
  EXPECT_EQ(port.at("rx_bytes").count(), 6400u) << r.out;
  EXPECT_EQ(port.at("tx_bytes").count(), 6400u) << r.out;
  EXPECT_EQ(port.at("dropped").count(), 0u) << r.out;
  EXPECT_TRUE(read_pcap(files.out) == frames) << "io must forward every frame unchanged and in order";
}

TEST(Forwarding, MacRewritesSourceToThePortAndDestinationToTheSender) {
  PcapFiles files("mac");
  const std::vector<Frame> frames = numbered_frames(50);
  write_pcap(files.in, frames);
  // One shell session, so the port whose MAC we read is the port that forwards.
  const Result r =
      run_shell(tool("yes", {"--vdev", files.vdev()}), "ports --json\nfwd mac --json --duration 1s\nquit\n");
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const std::vector<JsonValue> docs = parse_json_lines(r.out);
  ASSERT_GE(docs.size(), 2u) << r.out;
  const std::string port_mac = docs.front().at("ports").at(0).at("mac").text;
  const JsonValue summary = fwd_summary(r.out);
  const JsonValue& counters = summary.at("ports").at(0);
  EXPECT_EQ(counters.at("rx_packets").count(), 50u) << r.out;
  EXPECT_EQ(counters.at("tx_packets").count(), 50u) << r.out;
  const std::vector<Frame> sent = read_pcap(files.out);
  ASSERT_EQ(sent.size(), frames.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    SCOPED_TRACE("frame " + std::to_string(i));
    ASSERT_EQ(sent[i].size(), frames[i].size());
    EXPECT_EQ(mac_text(sent[i], 0), mac_text(frames[i], 6)) << "destination must be the old source";
    EXPECT_EQ(mac_text(sent[i], 6), port_mac) << "source must be the port's own MAC";
    EXPECT_TRUE(std::equal(sent[i].begin() + 12, sent[i].end(), frames[i].begin() + 12)) << "payload changed";
  }
}

TEST(Forwarding, MemifFlowgenAgainstIoEchoCountersAgree) {
  const std::string socket = "/run/bypass-pmd-it-" + g_tag + "-echo.sock";  // abstract: no file
  const MemifPair p = run_memif_pair(
      tool("yes", {"--set", "ms.cpus=0", "--set", "dpdk.link_wait=15s", "--vdev",
                   "net_memif0,role=server,socket=" + socket, "--json", "fwd", "io", "--duration", "6s"}),
      socket,
      tool("yes", {"--set", "ms.cpus=1", "--set", "dpdk.link_wait=15s", "--vdev", "net_memif0,role=client,socket=" + socket,
                   "--json", "fwd", "flowgen", "--flows", "64", "--size", "128", "--duration", "2s", "--linger", "20s"}));
  ASSERT_TRUE(p.listened) << describe(p.server);
  const Result &gen = p.client, &io = p.server;
  ASSERT_EQ(gen.exit_code, 0) << describe(gen);
  ASSERT_EQ(io.exit_code, 0) << describe(io);
  const JsonValue gen_summary = fwd_summary(gen.out), echo_summary = fwd_summary(io.out);
  const JsonValue& g = gen_summary.at("ports").at(0);
  const JsonValue& e = echo_summary.at("ports").at(0);
  const uint64_t generated = g.at("tx_packets").count();
  EXPECT_GT(generated, 1000u) << gen.out;
  EXPECT_EQ(g.at("tx_bytes").count(), generated * 128);
  // memif loses nothing between the rings: the echo received exactly what was generated ...
  EXPECT_EQ(e.at("rx_packets").count(), generated) << "echo:\n" << io.out << "\ngenerator:\n" << gen.out;
  // ... and accounted for each frame: sent back, or dropped once the generator stopped reading.
  EXPECT_EQ(e.at("rx_packets").count(), e.at("tx_packets").count() + e.at("dropped").count()) << io.out;
  EXPECT_GT(g.at("rx_packets").count(), 0u) << "nothing came back: " << gen.out;
  EXPECT_LE(g.at("rx_packets").count(), e.at("tx_packets").count());
}

// ---- stats, xstats and reset in one session, after a known number of frames went through.

TEST(Shell, CountersAfterForwardingAFileThenReset) {
  PcapFiles files("shell");
  write_pcap(files.in, numbered_frames(40));
  const Result r = run_shell(tool("yes", {"--vdev", files.vdev()}),
                             "fwd io --json --duration 1s\n"
                             "stats --json\n"
                             "xstats --json\n"
                             "xstats --json --filter ^rx_q0_\n"
                             "reset-stats --json\n"
                             "stats --json\n"
                             "quit\n");
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(r.err.find("error"), std::string::npos) << r.err;
  std::vector<JsonValue> docs = parse_json_lines(r.out);
  // Skip fwd's per-second lines: everything after its summary is the five commands that follow.
  size_t first = 0;
  while (first < docs.size() && !(docs[first].find("type") && docs[first].at("type").text == "summary")) ++first;
  ASSERT_EQ(docs.size(), first + 6) << r.out;
  const JsonValue& stats = docs[first + 1].at("ports").at(0);
  EXPECT_EQ(stats.at("rx_packets").count(), 40u);
  EXPECT_EQ(stats.at("tx_packets").count(), 40u);
  EXPECT_EQ(stats.at("rx_bytes").count(), 40u * 64);
  EXPECT_EQ(stats.at("rx_queues").at(0).at("packets").count(), 40u);
  EXPECT_EQ(stats.at("tx_queues").at(0).at("packets").count(), 40u);
  EXPECT_EQ(stats.at("workers").at(0).at("rx_packets").count(), 40u);
  EXPECT_EQ(stats.at("rx_nombuf").count(), 0u);

  const JsonValue& all = docs[first + 2].at("ports").at(0).at("xstats");
  EXPECT_EQ(all.at("rx_good_packets").count(), 40u);
  EXPECT_EQ(all.at("tx_good_packets").count(), 40u);
  const JsonValue& filtered = docs[first + 3].at("ports").at(0).at("xstats");
  ASSERT_FALSE(filtered.members.empty()) << r.out;
  EXPECT_LT(filtered.members.size(), all.members.size());
  for (const auto& [name, value] : filtered.members) EXPECT_EQ(name.rfind("rx_q0_", 0), 0u) << name;
  EXPECT_EQ(filtered.at("rx_q0_packets").count(), 40u);

  EXPECT_EQ(docs[first + 4].at("reset").count(), 1u);
  const JsonValue& after = docs[first + 5].at("ports").at(0);
  EXPECT_EQ(after.at("rx_packets").count(), 0u);
  EXPECT_EQ(after.at("tx_packets").count(), 0u);
}

TEST(Xstats, TextFilterPrintsOnlyMatchingNames) {
  const Result all = run(tool("yes", {"--vdev", "net_ring0", "xstats"}));
  const Result errors = run(tool("yes", {"--vdev", "net_ring0", "xstats", "--filter", "errors$"}));
  const Result none = run(tool("yes", {"--vdev", "net_ring0", "xstats", "--filter", "^no_such_counter$"}));
  ASSERT_EQ(all.exit_code, 0) << describe(all);
  ASSERT_EQ(errors.exit_code, 0) << describe(errors);
  ASSERT_EQ(none.exit_code, 0) << describe(none);
  // Counter lines are "  name value"; the per-port header starts with '#'.
  auto names = [](const std::string& out) {
    std::vector<std::string> found;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream words(line);
      std::string name;
      words >> name;
      found.push_back(name);
    }
    return found;
  };
  const std::vector<std::string> every = names(all.out), matching = names(errors.out);
  ASSERT_FALSE(matching.empty()) << errors.out;
  EXPECT_LT(matching.size(), every.size()) << all.out;
  for (const auto& name : matching) EXPECT_TRUE(name.ends_with("errors")) << name;
  size_t expected = 0;
  for (const auto& name : every) expected += name.ends_with("errors");
  EXPECT_EQ(matching.size(), expected) << "the filter dropped a matching counter:\n" << errors.out;
  EXPECT_TRUE(names(none.out).empty()) << none.out;
  EXPECT_NE(none.out.find("######## port 0"), std::string::npos) << none.out;
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const char* tool_path = std::getenv("PMD_INTEGRATION_TOOL");
  if (!tool_path || !std::filesystem::exists(tool_path)) {
    std::printf("FAILED: PMD_INTEGRATION_TOOL does not name the bypass-pmd binary\n");
    return 1;
  }
  g_tool = tool_path;
  if (geteuid() != 0) {
    std::printf("SKIP: needs root (tap, network namespaces, memif sockets in /run)\n");
    return 77;
  }
  if (!sh("ip -V")) {
    std::printf("SKIP: iproute2 (ip) is not installed\n");
    return 77;
  }
  return RUN_ALL_TESTS();
}
