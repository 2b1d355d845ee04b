// The test wire's pcap files (BYPASS_TEST_PCAP, Wire::record_pcap): tshark reads them, sees both
// families' handshakes, and stamps each frame with the virtual time it crossed the wire.
#include <sys/stat.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "tests/support/subprocess.h"
#include "tests/unit/inet/harness.h"

namespace bypass::inet::test {
namespace {

// A directory of our own under TMPDIR (or /tmp), removed with what it holds when done.
class TempDirectory {
 public:
  TempDirectory() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/bypass-wire-pcap.XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDirectory() {
    if (!path_.empty()) bypass::test::run_with_status("rm -rf '" + path_ + "'");
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool tshark_installed() { return bypass::test::run_with_status("command -v tshark >/dev/null 2>&1").status == 0; }

// A virtual time as tshark prints frame.time_epoch for a nanosecond file (the clock's epoch is
// 1970's).
std::string epoch_text(TimePoint at) {
  char text[40];
  std::snprintf(text, sizeof(text), "%" PRId64 ".%09" PRId64, static_cast<int64_t>(at.count() / 1'000'000'000),
                static_cast<int64_t>(at.count() % 1'000'000'000));
  return text;
}

TEST(TestWirePcap, TsharkDecodesBothHandshakesWithVirtualTimes) {
  if (!tshark_installed()) GTEST_SKIP() << "tshark is not installed (tools/setup.sh test installs it)";
  TempDirectory dir;
  ASSERT_FALSE(dir.path().empty()) << "mkdtemp failed";
  ASSERT_EQ(::setenv("BYPASS_TEST_PCAP", dir.path().c_str(), 1), 0);
  InetSettings dual_stack;
  dual_stack.ipv6.address = *Ipv6Address::from_string("2001:db8::");
  std::vector<SeenSegment> expected;
  {
    TwoHosts hosts(61, dual_stack);
    ::unsetenv("BYPASS_TEST_PCAP");
    SegmentRecorder recorder(hosts);
    for (const IpAddress& server : {IpAddress(ip_of(2)), IpAddress(hosts.settings_b.ipv6.address)}) {
      auto [client, accepted] = connect_pair(hosts, server, server.is_v4() ? 80 : 81);
      ASSERT_TRUE(client && accepted);
      ASSERT_TRUE(transfer(hosts, client, accepted, 3000, 5s).complete);
    }
    expected = recorder.segments();
  }  // the file is complete once the wire is gone
  const std::string file = dir.path() + "/TestWirePcap.TsharkDecodesBothHandshakesWithVirtualTimes.pcap";
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0) << file << " was not written";

  // One line per TCP frame: time, EtherType, SYN and ACK flags, sequence number as sent.
  const std::string errors = dir.path() + "/tshark.stderr";
  const auto tshark = bypass::test::run_with_status(
      "tshark -r '" + file + "' -Y tcp -T fields -E separator=' ' -e frame.time_epoch -e eth.type "
      "-e tcp.flags.syn -e tcp.flags.ack -e tcp.seq_raw 2>'" + errors + "'");
  ASSERT_EQ(tshark.status, 0) << tshark.out << bypass::test::slurp(errors);
  std::istringstream lines(tshark.out);
  std::vector<std::string> got;
  for (std::string line; std::getline(lines, line);) got.push_back(line);
  ASSERT_EQ(got.size(), expected.size()) << tshark.out;
  int handshakes[2] = {0, 0};  // SYNs (with and without ACK) seen, by family
  for (size_t i = 0; i < got.size(); ++i) {
    const SeenSegment& s = expected[i];
    // tshark 4.0 prints flags as 1/0, later versions as True/False: both are accepted.
    std::istringstream fields(got[i]);
    std::string time, ethertype, syn, ack, seq;
    fields >> time >> ethertype >> syn >> ack >> seq;
    SCOPED_TRACE("frame " + std::to_string(i) + ": " + got[i]);
    EXPECT_EQ(time, epoch_text(s.at));
    EXPECT_EQ(ethertype, s.ipv6 ? "0x86dd" : "0x0800");
    const bool is_syn = syn == "1" || syn == "True";
    EXPECT_EQ(is_syn, s.header.has(kTcpSyn));
    EXPECT_EQ(ack == "1" || ack == "True", s.header.has(kTcpAck));
    EXPECT_EQ(seq, std::to_string(s.header.seq.raw()));
    if (is_syn) ++handshakes[s.ipv6];
  }
  EXPECT_EQ(handshakes[0], 2) << "IPv4: a SYN and a SYN-ACK";
  EXPECT_EQ(handshakes[1], 2) << "IPv6: a SYN and a SYN-ACK";
}

}  // namespace
}  // namespace bypass::inet::test
