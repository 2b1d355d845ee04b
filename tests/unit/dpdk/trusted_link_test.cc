// dpdk.trusted_link on a looped net_ring (the stack talks to itself, --no-huge, one worker):
//   - on an untrusted link (the default) a TCP segment with a corrupted checksum is dropped and
//     counted, while the same segment with its checksum intact is processed;
//   - on a trusted link that segment is taken on trust, and an echo is byte-exact with no TCP
//     checksum computed or verified anywhere;
//   - the setting is refused, naming the option and the driver, on a port that is neither memif
//     nor ring (net_null). A process keeps one DPDK port, so that case runs in its own process
//     (meson: dpdk_trusted_link_refused, --gtest_filter=*Refused*).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include "stack/dpdk/dpdk_stack.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/wire/ethernet.h"
#include "stack/inet/wire/ipv4.h"
#include "stack/inet/wire/tcp.h"
#include "tests/unit/socket/socket_test_handlers.h"

namespace bypass::testing {
namespace {

using namespace std::chrono_literals;

constexpr uint32_t kStackIp = 0x0a4e0001;  // 10.78.0.1
constexpr uint32_t kPeerIp = 0x0a4e0009;   // 10.78.0.9: a host that is not there
constexpr uint16_t kClosedPort = 4321;     // nobody listens: a valid SYN draws a RST

std::vector<std::string> ring_options(bool trusted) {
  return {"ms.type=dpdk",          "ms.workers=1",        "dpdk.vdev=net_ring0",
          "dpdk.host_ip=10.78.0.1", "dpdk.no_huge=yes",    "dpdk.memory=256M",
          "dpdk.idle_sleep=0s",     std::string("dpdk.trusted_link=") + (trusted ? "true" : "false")};
}

struct Counters {
  uint64_t received = 0;     // tcp_segments_received: parsed and handed to TCP
  uint64_t bad_checksum = 0;  // tcp_bad_checksum
  uint64_t rst_sent = 0;
  uint64_t trusted = 0;       // frames whose checksum was taken on trust
  uint64_t software_sums = 0;  // frames whose checksum the TX chain computed
  uint64_t trusted_sends = 0;  // frames sent without one
};

class TrustedLinkTest : public ::testing::Test {
 protected:
  void start(bool trusted) {
    conf_ = std::make_unique<config::Config>(make_test_config(ring_options(trusted)));
    stack_ = NetworkStack::create(*conf_);
    stack_->start();
    pool_ = std::make_unique<HandlerPool>(*stack_);
  }
  void TearDown() override { tear_down_transport(listener_, pool_, stack_); }

  DpdkWorker& worker() { return static_cast<DpdkStack&>(*stack_).dpdk_worker(0); }

  Counters counters() {
    Counters c;
    DpdkWorker& w = worker();
    w.center().submit_and_wait([&] {
      const inet::InetStats& stats = w.inet().stats();
      c.received = stats.tcp_segments_received;
      c.bad_checksum = stats.tcp_bad_checksum;
      c.rst_sent = stats.tcp_rst_sent;
      c.trusted = w.device().rx_checksums_trusted();
      c.software_sums = w.device().tx_counters().software_checksums;
      c.trusted_sends = w.device().tx_counters().trusted_checksums;
    });
    return c;
  }

  // A SYN from kPeerIp to kClosedPort, as a peer's frame; `corrupt` flips a payload bit after the
  // checksum was computed, as a bad link would.
  inet::Packet syn_frame(bool corrupt) {
    constexpr size_t kPayload = 16;
    constexpr size_t kFrame = inet::EthernetHeader::kLength + inet::Ipv4Header::kMinLength + inet::TcpHeader::kMinLength + kPayload;
    uint8_t bytes[kFrame] = {};
    inet::EthernetHeader{worker().device().mac(), {{2, 0, 0, 0, 0, 9}}, 0x0800}.emit(bytes);
    inet::Ipv4Header ip;
    ip.total_length = static_cast<uint16_t>(kFrame - inet::EthernetHeader::kLength);
    ip.protocol = 6;
    ip.source = inet::Ipv4Address{kPeerIp};
    ip.destination = inet::Ipv4Address{kStackIp};
    ip.emit(bytes + inet::EthernetHeader::kLength, true);
    inet::TcpHeader tcp;
    tcp.source_port = 40000;
    tcp.destination_port = kClosedPort;
    tcp.seq = 1000;
    tcp.flags = inet::kTcpSyn;
    tcp.window = 65535;
    uint8_t* segment = bytes + inet::EthernetHeader::kLength + inet::Ipv4Header::kMinLength;
    tcp.emit(segment);
    std::memset(segment + inet::TcpHeader::kMinLength, 'x', kPayload);
    BufferList summed;
    summed.append_copy(segment, inet::TcpHeader::kMinLength + kPayload);
    inet::store_be16(segment + 16, inet::tcp_checksum(ip.source, ip.destination, summed));
    if (corrupt) segment[inet::TcpHeader::kMinLength + 3] ^= 0x10;
    inet::Packet frame;
    frame.data.append_copy(bytes, kFrame);
    return frame;
  }

  // Sends `frame` on the ring from the worker's thread: it comes back on the worker's RX queue.
  void inject(inet::Packet frame) {
    DpdkWorker& w = worker();
    w.center().submit_and_wait([&] { w.device().transmit(std::move(frame)); });
  }

  // Waits (bounded) until `done(counters())` holds; returns the last reading.
  template <class Done>
  Counters wait_until(Done done) {
    Counters c = counters();
    for (int i = 0; i < 500 && !done(c); ++i) {
      std::this_thread::sleep_for(10ms);
      c = counters();
    }
    return c;
  }

  std::unique_ptr<config::Config> conf_;
  std::shared_ptr<NetworkStack> stack_;
  std::unique_ptr<HandlerPool> pool_;
  std::unique_ptr<TestListener> listener_;
};

TEST_F(TrustedLinkTest, UntrustedLinkDropsAndCountsACorruptedSegment) {
  start(false);
  const Counters before = counters();
  inject(syn_frame(/*corrupt=*/true));
  const Counters dropped = wait_until([&](const Counters& c) { return c.bad_checksum > before.bad_checksum; });
  EXPECT_EQ(dropped.bad_checksum, before.bad_checksum + 1);
  EXPECT_EQ(dropped.received, before.received) << "a corrupted segment reached TCP";
  EXPECT_EQ(dropped.rst_sent, before.rst_sent);
  EXPECT_EQ(dropped.trusted, 0u);
  // The same segment intact is processed: the checksum alone made the difference.
  inject(syn_frame(/*corrupt=*/false));
  const Counters answered = wait_until([&](const Counters& c) { return c.rst_sent > dropped.rst_sent; });
  EXPECT_EQ(answered.received, dropped.received + 1);
  EXPECT_EQ(answered.rst_sent, dropped.rst_sent + 1);
  EXPECT_EQ(answered.bad_checksum, dropped.bad_checksum);
}

TEST_F(TrustedLinkTest, TrustedLinkTakesSegmentsOnTrust) {
  start(true);
  const Counters before = counters();
  inject(syn_frame(/*corrupt=*/true));
  const Counters after = wait_until([&](const Counters& c) { return c.rst_sent > before.rst_sent; });
  EXPECT_EQ(after.received, before.received + 1);
  EXPECT_EQ(after.rst_sent, before.rst_sent + 1);
  EXPECT_EQ(after.bad_checksum, before.bad_checksum);
  EXPECT_GT(after.trusted, before.trusted);
}

TEST_F(TrustedLinkTest, TrustedLinkEchoesByteExactWithoutChecksums) {
  start(true);
  constexpr size_t kBytes = 4 << 20;
  auto blob = std::make_shared<std::string>(kBytes, '\0');
  std::mt19937_64 rng(0x7157);
  for (char& b : *blob) b = static_cast<char>(rng());
  listener_ = std::make_unique<TestListener>(
      *stack_, [this](Worker& w, ConnectedSocket s) { pool_->spawn<EchoServer>(w, std::move(s)); });
  ASSERT_EQ(listener_->listen(SocketAddress::ipv4(kStackIp, 0), ListenOptions{}, SocketOptions{}), 0);
  const Counters before = counters();
  ClientSpec spec;
  spec.payload.append(BufferSegment::borrow(blob->data(), blob->size()));
  spec.expected = blob;
  spec.expected_length = kBytes;
  ClientResult result;
  Completion done;
  Worker& w = *stack_->worker(0);
  const SocketAddress peer = listener_->connect_address();
  run_on(w, [&] { pool_->spawn<StreamClient>(w, peer, std::move(spec), &result, &done); });
  const bool finished = done.wait_for(1, 60s);
  if (!finished) pool_->clear();  // the client writes into `result` and `done`: it goes first
  ASSERT_TRUE(finished);
  EXPECT_EQ(result.error, 0) << result.detail;
  EXPECT_TRUE(result.verified) << result.detail;
  const Counters after = counters();
  EXPECT_EQ(after.software_sums, before.software_sums) << "a TCP checksum was computed on a trusted link";
  EXPECT_GT(after.trusted_sends, before.trusted_sends);
  EXPECT_GT(after.trusted, before.trusted);
  EXPECT_EQ(after.bad_checksum, 0u);
}

// Its own process (a process keeps one DPDK port): net_null is neither memif nor ring.
TEST(TrustedLinkRefused, OnAPortThatIsNotMemifOrRing) {
  std::vector<std::string> options = ring_options(true);
  options[2] = "dpdk.vdev=net_null0";
  const config::Config conf = make_test_config(options);
  try {
    NetworkStack::create(conf);
    FAIL() << "dpdk.trusted_link accepted on net_null";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("dpdk.trusted_link"), std::string::npos) << what;
    EXPECT_NE(what.find("net_null"), std::string::npos) << what;
    EXPECT_NE(what.find("net_memif and net_ring"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace bypass::testing
