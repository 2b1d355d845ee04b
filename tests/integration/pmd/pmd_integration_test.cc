// bypass-pmd end to end, as root: net_ring, net_tap (checked from Linux with `ip link`), two memif
// processes forwarding with counters that agree, af_packet over a veth pair between two network
// namespaces, each with and without hugepages where the host has them; and bad input giving one
// clear line and a non-zero exit. Every process runs under a deadline; namespaces and links are
// removed even when a test fails.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string g_tool;  // path of bypass-pmd
const std::string g_tag = std::to_string(getpid());

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Result {
  int exit_code = -1;   // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  std::string out, err;
};

// A child process in its own process group, output captured in files, killed at its deadline.
class Process {
 public:
  Process(const std::vector<std::string>& argv, std::chrono::seconds deadline) : deadline_(deadline) {
    static int counter = 0;
    const std::string base = "/tmp/bypass-pmd-it-" + g_tag + "-" + std::to_string(counter++);
    out_path_ = base + ".out";
    err_path_ = base + ".err";
    start_ = std::chrono::steady_clock::now();
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      const int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(out, 1);
      dup2(err, 2);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    setpgid(pid_, pid_);
  }
  ~Process() {
    if (!reaped_) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::remove(out_path_.c_str());
    std::remove(err_path_.c_str());
  }
  bool running() {
    if (reaped_) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      record(status);
      return false;
    }
    return true;
  }
  Result wait() {
    while (!reaped_) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        record(status);
        break;
      }
      if (std::chrono::steady_clock::now() - start_ > deadline_) {
        result_.timed_out = true;
        kill(-pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        record(status);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    result_.out = slurp(out_path_);
    result_.err = slurp(err_path_);
    return result_;
  }

 private:
  void record(int status) {
    reaped_ = true;
    if (WIFEXITED(status)) result_.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result_.signal = WTERMSIG(status);
  }
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::chrono::seconds deadline_;
  std::chrono::steady_clock::time_point start_;
  std::string out_path_, err_path_;
  Result result_;
};

Result run(const std::vector<std::string>& argv, std::chrono::seconds deadline = std::chrono::seconds(30)) {
  return Process(argv, deadline).wait();
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

uint64_t summary_field(const std::string& json_lines, const std::string& field) {
  // The last line of `fwd --json` is {"type":"summary",...,"ports":[{...}]}.
  const size_t at = json_lines.rfind("\"type\":\"summary\"");
  if (at == std::string::npos) return UINT64_MAX;
  const std::string key = "\"" + field + "\":";
  const size_t value = json_lines.find(key, at);
  if (value == std::string::npos) return UINT64_MAX;
  return std::stoull(json_lines.substr(value + key.size()));
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
  EXPECT_NE(r.out.find("\"driver\":\"net_ring\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"up\":true"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tso: not supported by net_ring"), std::string::npos) << r.out;
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

TEST_P(WithAndWithoutHugepages, MemifForwardingCountersAgree) {
  const std::string socket = "/run/bypass-pmd-it-" + g_tag + "-" + huge() + ".sock";  // abstract: no file
  Process server(tool(huge(), {"--set", "ms.cpus=0", "--set", "dpdk.link_wait=15s", "--vdev",
                               "net_memif0,role=server,socket=" + socket, "--json", "fwd", "rxonly", "--duration", "8s"}),
                 std::chrono::seconds(60));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const Result client = run(tool(huge(), {"--set", "ms.cpus=1", "--set", "dpdk.link_wait=15s", "--vdev",
                                          "net_memif0,role=client,socket=" + socket, "--json", "fwd", "txonly",
                                          "--size", "64", "--duration", "2s"}),
                            std::chrono::seconds(60));
  const Result srv = server.wait();
  ASSERT_EQ(client.exit_code, 0) << describe(client);
  ASSERT_EQ(srv.exit_code, 0) << describe(srv);
  const uint64_t sent = summary_field(client.out, "tx_packets");
  const uint64_t received = summary_field(srv.out, "rx_packets");
  EXPECT_GT(sent, 1000u) << client.out;
  EXPECT_EQ(received, sent) << "server:\n" << srv.out << "\nclient:\n" << client.out;
}

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
void expect_clean_error(const std::vector<std::string>& argv, const std::string& needle, bool single_line = true) {
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

TEST(BadInput, UnknownCommandAndBadFlags) {
  expect_clean_error({g_tool, "--vdev", "net_ring0", "frobnicate"}, "unknown command 'frobnicate'");
  expect_clean_error(tool("yes", {"--vdev", "net_ring0", "fwd", "sideways"}), "fwd: unknown mode 'sideways'", false);
  expect_clean_error(tool("yes", {"--vdev", "net_ring0", "xstats", "--filter", "(["}), "not a valid regular expression",
                     false);
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
