// The rdma transport on real verbs (run inside tools/rxe-vm, suite 'rdma'): resources come back
// after 10,000 connect/close cycles, an empty chunk pool is backpressure (bounded memory, then
// every byte arrives), a connection whose reader stalls holds no more than its receive window and
// cannot starve the other connections of its worker (credit flow control), the death of the peer
// process surfaces as a reset, per-QP receive queues (rdma.srq=false) carry data as the SRQ does,
// and two processes on two rxe devices joined by a veth pair (tests/rdma/rxe_veth_pair.sh)
// exchange data across it in both connect modes; rdma.gid_index auto finds the GID of rxe0's IPv4
// address in its real table.
// BYPASS_RDMA_CONNECT_MODE=rdma_cm (with BYPASS_TEST_ADDR on the rxe netdev) runs them over rdma_cm.
#include <arpa/inet.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/rdma/rdma_test_support.h"

namespace bypass::testing {
namespace {

// Echoes with copying read() and send(): unlike EchoServer (zero_copy_read) it never holds received
// chunks itself, so the receive pool only holds what the transport queues.
class CopyingEchoServer final : public StreamHandler {
 public:
  using StreamHandler::StreamHandler;
  void start() override { set_interest(kEventReadable); }

 private:
  void on_readable() override {
    char buf[16384];
    for (int i = 0; i < 16 && pending_.length() < kMaxPending; ++i) {
      const ssize_t n = socket_.read(buf, sizeof(buf));
      if (n == -EAGAIN) break;
      if (n < 0) return finish();
      if (n == 0) {
        eof_ = true;
        break;
      }
      pending_.append_copy(std::string_view(buf, static_cast<size_t>(n)));
    }
    flush();
  }
  void on_writable() override { flush(); }
  void flush() {
    if (!pending_.empty()) {
      const ssize_t n = socket_.send(pending_, false);
      if (n < 0 && n != -EAGAIN) return finish();
    }
    if (pending_.empty() && eof_) {
      socket_.shutdown();
      return finish();
    }
    int mask = kEventNone;
    if (!pending_.empty()) mask |= kEventWritable;
    if (!eof_ && pending_.length() < kMaxPending) mask |= kEventReadable;
    set_interest(mask);
  }

  static constexpr size_t kMaxPending = 256 * 1024;
  BufferList pending_;
  bool eof_ = false;
};

// Connects and closes `cycles` times in a row on one worker.
class CycleClient {
 public:
  CycleClient(Worker& w, SocketAddress addr, int cycles, Completion* done)
      : worker_(w), addr_(addr), left_(cycles), done_(done) {}
  void next() {
    if (left_ == 0) return done_->signal();
    int rc = worker_.connect(addr_, SocketOptions{}, &sock_);
    if (rc != 0) return fail(rc);
    worker_.center().create_file_event(sock_.fd(), kEventWritable, [this](int, int) { progress(); });
  }
  int error() const { return error_.load(); }
  int completed() const { return completed_.load(); }

 private:
  void progress() {
    const int rc = sock_.is_connected();
    if (rc == 0) return;
    worker_.center().delete_file_event(sock_.fd(), kEventWritable);
    sock_.close();
    if (rc < 0) return fail(rc);
    --left_;
    completed_.fetch_add(1);
    next();
  }
  void fail(int rc) {
    error_.store(rc);
    done_->signal();
  }

  Worker& worker_;
  SocketAddress addr_;
  int left_;
  Completion* done_;
  ConnectedSocket sock_;
  std::atomic<int> error_{0};
  std::atomic<int> completed_{0};
};

TEST_F(RdmaTransport, ConnectCloseCyclesLeaveNoQueuePairsChunksOrRegions) {
  const char* env = std::getenv("RDMA_TEST_CYCLES");
  const int cycles = env ? std::atoi(env) : 10000;
  start({"ms.workers=2", "rdma.chunk_count=64", "rdma.chunk_size=4K"});
  const SocketAddress addr = listen([](Worker&, ConnectedSocket s) { s.close(); });
  const int qps_before = kernel_resources("qp");
  Completion done;
  CycleClient client(*stack_->worker(0), addr, cycles, &done);
  StopFirst stop_first{this};
  run_on(*stack_->worker(0), [&] { client.next(); });
  ASSERT_TRUE(done.wait_for(1, 600s)) << client.completed() << " of " << cycles << " cycles in 600 s";
  ASSERT_EQ(client.error(), 0) << socket_error_name(client.error()) << " after " << client.completed();
  EXPECT_EQ(client.completed(), cycles);
  ASSERT_TRUE(wait_idle(30s)) << "connections still draining 30 s after the last close";
  uint64_t created = 0, destroyed = 0;
  for (unsigned i = 0; i < stack_->num_workers(); ++i) {
    const auto s = rdma().worker_stats(i);
    created += s.qps_created;
    destroyed += s.qps_destroyed;
    EXPECT_EQ(s.tx_chunks_in_use, 0u) << "worker " << i;
    EXPECT_EQ(s.rx_chunks_held, 0u) << "worker " << i;
    EXPECT_EQ(s.rx_chunks_posted, s.rx_chunks_total) << "worker " << i << ": SRQ not refilled";
    EXPECT_EQ(s.sends_outstanding, 0u) << "worker " << i;
    EXPECT_EQ(s.memory_regions, 2) << "worker " << i;
  }
  EXPECT_EQ(created, 2u * static_cast<uint64_t>(cycles));
  EXPECT_EQ(destroyed, created);
  // The kernel's view: no QP of ours is left; the MRs are the pools' two per worker.
  const int qps_after = kernel_resources("qp");
  if (qps_before < 0 || qps_after < 0) GTEST_SKIP() << "rdma resource show unavailable";
  EXPECT_EQ(qps_after, 0) << "kernel still tracks QPs of this process (before: " << qps_before << ")";
  // The chunk pools' two per worker and the stack's RegisteredMemory; the registration cache
  // registered nothing (no payload was sent).
  EXPECT_EQ(kernel_resources("mr"), 2 * static_cast<int>(stack_->num_workers()) + 1);
  // rdma_cm mode: every connection's id is gone; only the listening id (one for both workers'
  // listeners, rdma_cm having no SO_REUSEPORT) is left.
  const bool cm = conf_.get_string("rdma.connect_mode") == "rdma_cm";
  EXPECT_EQ(kernel_resources("cm_id"), cm ? 1 : 0) << "rdma_cm ids of this process left over";
}

TEST_F(RdmaTransport, EmptyChunkPoolIsBackpressureNotGrowth) {
  // 16 chunks of 4 KiB each way: the receiver holds its window (4, a quarter of the pool), then
  // the sender has no credits and send() refuses. Two-sided only: rendezvous would bypass the
  // chunks (tested in rdma_rendezvous_test.cc).
  start({"ms.workers=2", "rdma.chunk_count=16", "rdma.chunk_size=4K", "rdma.rendezvous_threshold=0"});
  constexpr size_t kTotal = 8 << 20;
  std::atomic<size_t> received{0};
  std::atomic<int> sink_result{0};
  Completion sink_done, source_done;
  std::atomic<int> eagains{0};
  StopFirst stop_first{this};
  const SocketAddress addr = listen([&](Worker& w, ConnectedSocket s) {
    pool_->spawn<PatternSink>(w, std::move(s), 1500ms, &received, &sink_result, &sink_done);
  });
  run_on(*stack_->worker(0), [&] {
    ConnectedSocket s;
    ASSERT_EQ(stack_->worker(0)->connect(addr, SocketOptions{}, &s), 0);
    pool_->spawn<PatternSource>(*stack_->worker(0), std::move(s), kTotal, &eagains, &source_done);
  });
  std::this_thread::sleep_for(1000ms);  // the sink is not reading yet
  const auto stalled = rdma().worker_stats(0);
  EXPECT_GT(eagains.load(), 0) << "sends were never refused while the peer did not read";
  EXPECT_LE(stalled.tx_chunks_in_use, stalled.tx_chunks_total);
  EXPECT_LT(received.load(), size_t{1});
  ASSERT_TRUE(sink_done.wait_for(1, 240s)) << received.load() << " of " << kTotal << " bytes";
  EXPECT_EQ(sink_result.load(), 1) << "sink ended with " << socket_error_name(sink_result.load());
  EXPECT_EQ(received.load(), kTotal);
  EXPECT_TRUE(source_done.wait_for(1, 10s));
  EXPECT_GT(rdma().worker_stats(0).send_eagain + rdma().worker_stats(1).send_eagain, 0u);
  pool_->clear();
  EXPECT_TRUE(wait_idle(30s));
}

TEST_F(RdmaTransport, PeerProcessDeathSurfacesAsReset) {
  start({"ms.workers=1"});
  std::atomic<size_t> received{0};
  std::atomic<int> result{0};
  Completion done;
  StopFirst stop_first{this};
  const SocketAddress addr = listen([&](Worker& w, ConnectedSocket s) {
    pool_->spawn<PatternSink>(w, std::move(s), 0ms, &received, &result, &done);
  });
  // A separate process with its own stack connects, sends, and is killed without closing.
  const pid_t child = spawn_self({"--rdma-peer-child", addr.to_string()});
  ASSERT_GE(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
  ASSERT_TRUE(done.wait_for(1, 30s)) << "the server never noticed the dead peer";
  EXPECT_EQ(result.load(), -ECONNRESET) << socket_error_name(result.load());
  EXPECT_GT(received.load(), 0u);
}

TEST_F(RdmaTransport, PerQpReceiveQueuesCarryDataLikeTheSrq) {
  start({"ms.workers=2", "rdma.srq=false", "rdma.chunk_count=256", "rdma.qp_depth=16"});
  const SocketAddress addr = listen([this](Worker& w, ConnectedSocket s) {
    pool_->spawn<EchoServer>(w, std::move(s));
  });
  auto blob = std::make_shared<std::string>(3 << 20, '\0');
  for (size_t i = 0; i < blob->size(); ++i) (*blob)[i] = pattern_byte(i);
  constexpr int kClients = 4;
  std::vector<ClientResult> results(kClients);
  Completion done;
  StopFirst stop_first{this};
  for (int i = 0; i < kClients; ++i) {
    Worker& w = *stack_->worker(static_cast<unsigned>(i) % 2);
    run_on(w, [&, i] {
      ClientSpec spec;
      spec.payload.append(BufferSegment::borrow(blob->data(), blob->size()));
      spec.expected = blob;
      spec.expected_length = blob->size();
      spec.zero_copy = (i % 2) == 1;
      pool_->spawn<StreamClient>(w, addr, std::move(spec), &results[i], &done);
    });
  }
  ASSERT_TRUE(done.wait_for(kClients, 240s));
  for (int i = 0; i < kClients; ++i)
    EXPECT_TRUE(results[i].verified) << i << ": " << socket_error_name(results[i].error) << " " << results[i].detail;
  pool_->clear();
  EXPECT_TRUE(wait_idle(30s));
}

TEST_F(RdmaTransport, StalledReaderCannotStarveOtherConnectionsOfItsWorker) {
  // One worker, one pool of 64 receive chunks shared by all four ends of A and B. A's receiver
  // stops reading while A's sender keeps sending; without per-connection flow control A soaks up
  // every receive chunk and B (on the same SRQ) never receives again. With credits A may hold at
  // most its window (rdma.rx_window's 32, capped at a quarter of the pool: 16).
  // Two-sided only, as the pool is what is shared.
  start({"ms.workers=1", "rdma.chunk_count=64", "rdma.chunk_size=4K", "rdma.rendezvous_threshold=0"});
  constexpr size_t kWindow = 16;
  constexpr size_t kStalledBytes = 8 << 20;
  constexpr size_t kEchoBytes = 16 << 20;
  std::atomic<size_t> a_received{0};
  std::atomic<int> a_result{0}, a_send_result{-1}, a_eagains{0};
  Completion a_sink_done, a_source_done, b_done;
  std::atomic<PatternSink*> a_sink{nullptr};
  std::atomic<int> accepted{0};
  StopFirst stop_first{this};
  const SocketAddress addr = listen([&](Worker& w, ConnectedSocket s) {
    if (accepted.fetch_add(1) == 0) {
      a_sink = pool_->spawn<PatternSink>(w, std::move(s), -1ms, &a_received, &a_result, &a_sink_done);
    } else {
      pool_->spawn<CopyingEchoServer>(w, std::move(s));
    }
  });
  Worker& w = *stack_->worker(0);
  run_on(w, [&] {
    ConnectedSocket s;
    ASSERT_EQ(w.connect(addr, SocketOptions{}, &s), 0);
    pool_->spawn<PatternSource>(w, std::move(s), kStalledBytes, &a_eagains, &a_source_done, &a_send_result);
  });
  // A's sender runs into backpressure while its receiver reads nothing.
  for (int i = 0; i < 500 && a_eagains.load() == 0; ++i) std::this_thread::sleep_for(20ms);
  ASSERT_GT(a_eagains.load(), 0) << "A's sender was never refused";
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(a_received.load(), 0u);

  // B: 16 MiB out and echoed back on the same worker, bounded in time.
  auto blob = std::make_shared<std::string>(kEchoBytes, '\0');
  for (size_t i = 0; i < blob->size(); ++i) (*blob)[i] = pattern_byte(i * 7 + 3);
  ClientResult b_result;
  const auto b_start = std::chrono::steady_clock::now();
  run_on(w, [&] {
    ClientSpec spec;
    spec.payload.append(BufferSegment::borrow(blob->data(), blob->size()));
    spec.expected = blob;
    spec.expected_length = blob->size();
    pool_->spawn<StreamClient>(w, addr, std::move(spec), &b_result, &b_done);
  });
  const bool b_finished = b_done.wait_for(1, 120s);
  const auto during = rdma().worker_stats(0);
  ASSERT_TRUE(b_finished) << "B stalled behind A (cross-connection starvation): rx chunks held "
                          << during.rx_chunks_held << " of " << during.rx_chunks_total << ", posted "
                          << during.rx_chunks_posted << ", sends outstanding " << during.sends_outstanding;
  EXPECT_TRUE(b_result.verified) << socket_error_name(b_result.error) << " " << b_result.detail;
  std::fprintf(stderr, "B echoed %zu MiB in %.1f s while A's reader was stalled\n", kEchoBytes >> 20,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - b_start).count());

  // B is gone (its echo server finished at EOF): what the worker still holds is A's queue, within
  // its window.
  for (int i = 0; i < 500 && rdma().worker_stats(0).live_connections > 2; ++i)
    std::this_thread::sleep_for(20ms);
  const auto held = rdma().worker_stats(0);
  EXPECT_EQ(held.live_connections, 2u);
  EXPECT_EQ(held.rx_window, kWindow);
  std::fprintf(stderr, "A's stalled receiver holds %zu receive chunks (window %u, pool %zu)\n",
               held.rx_chunks_held, held.rx_window, held.rx_chunks_total);
  EXPECT_GT(held.rx_chunks_held, 0u);
  EXPECT_LE(held.rx_chunks_held, kWindow) << "A's receiver holds more than its window";
  EXPECT_EQ(a_received.load(), 0u);

  // A resumes: every byte arrives, in order (PatternSink checks), then EOF.
  run_on(w, [&] { a_sink.load()->resume(); });
  ASSERT_TRUE(a_sink_done.wait_for(1, 240s)) << a_received.load() << " of " << kStalledBytes << " bytes";
  EXPECT_EQ(a_result.load(), 1) << "sink ended with " << socket_error_name(a_result.load());
  EXPECT_EQ(a_received.load(), kStalledBytes);
  EXPECT_TRUE(a_source_done.wait_for(1, 10s));
  EXPECT_EQ(a_send_result.load(), 0) << socket_error_name(a_send_result.load());
  pool_->clear();
  EXPECT_TRUE(wait_idle(30s));
}

// ---------------------------------------------------------------- two devices on a veth pair

// BYPASS_TEST_RDMA_PAIR, as tests/rdma/rxe_veth_pair.sh prints it: "DEV_A IP_A DEV_B IP_B".
struct DevicePair {
  std::string client_device, client_ip, server_device, server_ip;
};

bool device_pair(DevicePair* out) {
  const char* text = std::getenv("BYPASS_TEST_RDMA_PAIR");
  if (text == nullptr) return false;
  std::istringstream in(text);
  return static_cast<bool>(in >> out->client_device >> out->client_ip >> out->server_device >> out->server_ip);
}

uint64_t netdev_counter(const std::string& netdev, const char* name) {
  std::ifstream in("/sys/class/net/" + netdev + "/statistics/" + name);
  uint64_t v = 0;
  in >> v;
  return v;
}

std::vector<std::string> device_overrides(const std::string& device, const std::string& mode) {
  // rdma.gid_index auto (the default) picks the device's IPv4-mapped RoCE v2 GID, so the QP's
  // packets take the IPv4 route that rxe_veth_pair.sh sends across the veth (rxe's index 0 is the
  // IPv6 link-local one).
  return {"ms.workers=1", "rdma.device=" + device, "rdma.connect_mode=" + mode};
}

constexpr size_t kTwoDeviceBytes = 4 << 20;

class RdmaTwoDevices : public RdmaTransport, public ::testing::WithParamInterface<const char*> {};

TEST_P(RdmaTwoDevices, PeersOnTwoRxeDevicesExchangeDataAcrossTheVeth) {
  DevicePair pair;
  ASSERT_TRUE(device_pair(&pair))
      << "BYPASS_TEST_RDMA_PAIR unset or malformed: run through tests/rdma/run_in_guest.sh, which sets "
         "up two rxe devices with tests/rdma/rxe_veth_pair.sh";
  const std::string mode = GetParam();
  start(device_overrides(pair.server_device, mode));
  std::atomic<size_t> received{0};
  std::atomic<int> result{0};
  Completion done;
  StopFirst stop_first{this};
  listener_ = std::make_unique<TestListener>(*stack_, [&](Worker& w, ConnectedSocket s) {
    pool_->spawn<PatternSink>(w, std::move(s), 0ms, &received, &result, &done);
  });
  SocketAddress listen_addr;
  ASSERT_TRUE(SocketAddress::parse(pair.server_ip + ":0", &listen_addr));
  ASSERT_EQ(listener_->listen(listen_addr, ListenOptions{}, SocketOptions{}), 0);
  const std::string server = listener_->connect_address().to_string();
  // The client's netdev is the veth end of its device: rxe_veth_pair.sh names them alike.
  const std::string client_netdev = "veth" + pair.client_device.substr(3);
  const uint64_t tx_before = netdev_counter(client_netdev, "tx_bytes");
  const pid_t child = spawn_self({"--rdma-pair-child", pair.client_device, mode, server});
  ASSERT_GE(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "client process status " << status;
  ASSERT_TRUE(done.wait_for(1, 60s)) << received.load() << " of " << kTwoDeviceBytes << " bytes";
  EXPECT_EQ(result.load(), 1) << "sink ended with " << socket_error_name(result.load());
  EXPECT_EQ(received.load(), kTwoDeviceBytes);
  // The payload left through the client's veth end (RoCE v2 in UDP), not through lo.
  EXPECT_GE(netdev_counter(client_netdev, "tx_bytes") - tx_before, kTwoDeviceBytes)
      << client_netdev << " did not carry the payload";
}

INSTANTIATE_TEST_SUITE_P(ConnectModes, RdmaTwoDevices, ::testing::Values("tcp", "rdma_cm"),
                         [](const auto& info) { return std::string(info.param); });

// The client half of PeersOnTwoRxeDevicesExchangeDataAcrossTheVeth: sends the pattern from
// `device`, closes, and exits 0 once the connection is torn down (so the server reads EOF).
int run_pair_child(const char* device, const char* mode, const char* address) {
  SocketAddress addr;
  if (!SocketAddress::parse(address, &addr)) return 2;
  std::vector<std::string> overrides = device_overrides(device, mode);
  overrides.push_back("ms.type=rdma");
  config::Config conf = make_test_config(overrides);
  auto stack = NetworkStack::create(conf);
  stack->start();
  int rc = 0;
  {
    HandlerPool pool(*stack);
    Worker& w = *stack->worker(0);
    Completion sent;
    std::atomic<int> eagains{0};
    std::atomic<int> result{0};
    run_on(w, [&] {
      ConnectedSocket s;
      if (w.connect(addr, SocketOptions{}, &s) != 0) _exit(3);
      pool.spawn<PatternSource>(w, std::move(s), kTwoDeviceBytes, &eagains, &sent, &result);
    });
    if (!sent.wait_for(1, 60s)) rc = 4;
    if (result.load() != 0) {
      std::fprintf(stderr, "pair child: sending failed: %s\n", socket_error_name(result.load()));
      rc = 6;
    }
    pool.clear();
  }
  auto& rdma = static_cast<RdmaNetworkStack&>(*stack);
  for (int i = 0; i < 500 && rdma.worker_stats(0).live_connections > 0; ++i) std::this_thread::sleep_for(20ms);
  if (rdma.worker_stats(0).live_connections > 0) rc = 5;
  stack->stop();
  return rc;
}

// The child half of PeerProcessDeathSurfacesAsReset.
int run_peer_child(const char* address) {
  SocketAddress addr;
  if (!SocketAddress::parse(address, &addr)) return 2;
  config::Config conf = make_test_config({"ms.type=rdma", "ms.workers=1"});
  auto stack = NetworkStack::create(conf);
  stack->start();
  Worker& w = *stack->worker(0);
  std::atomic<bool> sent{false};
  ConnectedSocket sock;
  run_on(w, [&] {
    if (w.connect(addr, SocketOptions{}, &sock) != 0) _exit(3);
    w.center().create_file_event(sock.fd(), kEventWritable, [&](int, int) {
      if (sent || sock.is_connected() != 1) return;
      BufferList data;
      char* p = data.append_hole(65536);
      for (size_t i = 0; i < 65536; ++i) p[i] = pattern_byte(i);
      if (sock.send(data, false) > 0) sent = true;
    });
  });
  for (int i = 0; i < 1000 && !sent; ++i) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(200ms);  // let the sends complete
  raise(SIGKILL);
  return 4;
}

// rdma.gid_index: auto on rxe0's real GID table (fe80:: link-local at 0, the IPv4 address at 1,
// both RoCE v2): the GID of the netdev's IPv4 address; asked for RoCE v1, which rxe has none of,
// one error naming the table and the command that gives the netdev an address.
TEST(RdmaGidAuto, PicksTheRoceV2GidOfTheNetdevsIpv4Address) {
  const char* device = std::getenv("RXE_DEV");
  const char* ip = std::getenv("RXE_IP");
  ASSERT_TRUE(device && ip) << "RXE_DEV/RXE_IP unset: run inside tools/rxe-vm";
  rdma::DeviceSelection selection;
  selection.device = device;
  selection.gid_index = -1;  // auto
  const auto opened = rdma::RdmaDevice::open(selection);
  uint8_t expected[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  ASSERT_EQ(inet_pton(AF_INET, ip, expected + 12), 1);
  EXPECT_EQ(std::memcmp(opened->gid().raw, expected, 16), 0) << "index " << opened->gid_index();
  selection.roce_version = "v1";
  try {
    rdma::RdmaDevice::open(selection);
    ADD_FAILURE() << "rxe has no RoCE v1 GID, yet auto found one";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rdma.gid_index: auto: " + std::string(device) + " port 1: no RoCE v1 GID in the table (it holds "),
              std::string::npos) << what;
    EXPECT_NE(what.find(std::string(ip) + " RoCE v2 on "), std::string::npos) << what;
    EXPECT_NE(what.find("ip addr add ADDRESS/PREFIX dev "), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace bypass::testing

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--rdma-peer-child") return bypass::testing::run_peer_child(argv[2]);
  if (const int rc = bypass::testing::run_rendezvous_child(argc, argv); rc >= 0) return rc;
  if (argc == 5 && std::string(argv[1]) == "--rdma-pair-child")
    return bypass::testing::run_pair_child(argv[2], argv[3], argv[4]);
  ::testing::InitGoogleTest(&argc, argv);
  try {
    bypass::config::Config conf = bypass::testing::make_test_config({"ms.type=rdma", "ms.workers=1"});
    bypass::NetworkStack::create(conf);
  } catch (const std::runtime_error& e) {
    std::printf("SKIP: %s (run it through tools/rxe-vm)\n", e.what());
    return 77;
  }
  return RUN_ALL_TESTS();
}
