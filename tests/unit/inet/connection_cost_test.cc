// What opening and closing a TCP connection costs in heap allocations: after warm-up, a full
// cycle (SYN, SYN-ACK, ACK, accept, close from both sides, TIME-WAIT reopened by the next SYN on
// the same port, the closed connection reaped) makes one allocation per side: the connection's
// control block (make_shared: TcpConnection and its count together). Nothing else: the table is
// open addressing, congestion control lives inside the connection, timers come from the wheel's
// node pool, and header buffers from the per-thread block pool.
//
// Its own binary: it replaces the global operator new to count allocations. The two stacks are
// joined by a frame queue and driven on a clock of their own over base/'s TimerWheel, so the test
// machinery itself allocates nothing per frame or per timer once warm (the shared harness's wire
// copies every frame and its virtual clock allocates a map node per timer).
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>
#include <vector>

#include "base/timer_wheel.h"
#include "stack/inet/inet_stack.h"

namespace {
uint64_t allocations = 0;  // the test is single-threaded
}  // namespace

// GCC (-Wmismatched-new-delete) sees free() reached from operator delete for memory from operator
// new; both are this file's replacements over malloc, so the pair matches.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t size) {
  ++allocations;
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace bypass::inet {
namespace {

using namespace std::chrono_literals;

// TimerService on a manual clock over the event loop's TimerWheel (pooled nodes).
class WheelTimers : public TimerService {
 public:
  TimePoint now() const override { return now_; }
  TimerId schedule(Duration delay, std::function<void()> callback) override {
    return wheel_.add(at(now_ + delay), std::move(callback));
  }
  void cancel(TimerId id) override { wheel_.cancel(id); }
  void advance(Duration span) {
    now_ += span;
    wheel_.advance(at(now_));
  }

 private:
  static detail::TimerWheel::Clock::time_point at(TimePoint t) {
    return detail::TimerWheel::Clock::time_point(std::chrono::duration_cast<detail::TimerWheel::Clock::duration>(t));
  }
  TimePoint now_{0};
  detail::TimerWheel wheel_{detail::TimerWheel::Clock::time_point{}};
};

// Frames go into the peer's inbox (reserved up front); checksums are reported good as a NIC
// with receive offload would.
class QueueDevice : public PacketDevice {
 public:
  QueueDevice(MacAddress mac, std::vector<Packet>& outbox) : mac_(mac), outbox_(outbox) {}
  void transmit(Packet&& frame) override { outbox_.push_back(std::move(frame)); }
  uint16_t mtu() const override { return 1500; }
  MacAddress mac() const override { return mac_; }

 private:
  MacAddress mac_;
  std::vector<Packet>& outbox_;
};

class ConnectionCost : public ::testing::Test {
 protected:
  ConnectionCost() {
    to_a_.reserve(1024);
    to_b_.reserve(1024);
    delivering_.reserve(1024);
    settings_a_.address = Ipv4Address::from_octets(10, 0, 0, 1);
    settings_b_.address = Ipv4Address::from_octets(10, 0, 0, 2);
    settings_a_.tcp.msl = settings_b_.tcp.msl = 30s;  // TIME-WAIT outlasts the test: reuse reopens it
    settings_a_.tcp.ephemeral_port_first = settings_b_.tcp.ephemeral_port_first = 40000;
    settings_a_.tcp.ephemeral_port_last = settings_b_.tcp.ephemeral_port_last = 40063;
    a_ = std::make_unique<InetStack>(settings_a_, device_a_, timers_, 1);
    b_ = std::make_unique<InetStack>(settings_b_, device_b_, timers_, 2);
    a_->arp().learn(settings_b_.address, mac_b_);
    b_->arp().learn(settings_a_.address, mac_a_);
    listener_ = b_->tcp().listen(80);
  }

  // Delivers queued frames (and due timers) until both sides are quiet.
  void pump() {
    for (int round = 0; round < 1000; ++round) {
      timers_.advance(10us);
      if (to_a_.empty() && to_b_.empty()) return;
      deliver(to_b_, *b_);
      deliver(to_a_, *a_);
    }
    FAIL() << "frames still flowing after 1000 rounds";
  }
  void deliver(std::vector<Packet>& inbox, InetStack& stack) {
    delivering_.swap(inbox);
    for (Packet& frame : delivering_) {
      frame.rx_ip_checksum = frame.rx_l4_checksum = RxChecksum::Good;
      stack.receive(std::move(frame));
    }
    delivering_.clear();
  }

  // One connection opened, accepted, closed by the server first (it keeps TIME-WAIT), then by
  // the client; true when every step happened.
  bool cycle() {
    auto client = a_->tcp().connect(settings_b_.address, 80);
    if (!client) return false;
    pump();
    auto server = listener_->accept();
    if (!server || !client->established()) return false;
    server->close();
    pump();
    if (!client->end_of_stream()) return false;
    client->close();
    pump();
    return client->state() == TcpState::Closed && server->state() == TcpState::TimeWait;
  }

  WheelTimers timers_;
  std::vector<Packet> to_a_, to_b_, delivering_;
  MacAddress mac_a_{{2, 0, 0, 0, 0, 1}}, mac_b_{{2, 0, 0, 0, 0, 2}};
  QueueDevice device_a_{mac_a_, to_b_}, device_b_{mac_b_, to_a_};
  InetSettings settings_a_, settings_b_;
  std::unique_ptr<InetStack> a_, b_;
  std::shared_ptr<TcpListener> listener_;
};

TEST_F(ConnectionCost, OpenAndCloseAllocateOnlyTheControlBlocks) {
  // Warm-up: every pool, the table and the queues reach their working size; the 64 client ports
  // wrap, so later cycles reopen the server's TIME-WAIT connections (RFC 1122 §4.2.2.13).
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(cycle()) << i;
  const uint64_t reopened_before = b_->stats().tcp_time_wait_reopened;
  constexpr int kCycles = 1000;
  const uint64_t before = allocations;
  for (int i = 0; i < kCycles; ++i) ASSERT_TRUE(cycle()) << i;
  const uint64_t made = allocations - before;
  EXPECT_EQ(b_->stats().tcp_time_wait_reopened - reopened_before, uint64_t{kCycles});
  EXPECT_EQ(b_->stats().tcp_retransmitted_segments + a_->stats().tcp_retransmitted_segments, 0u);
  // One control block per side per connection.
  EXPECT_EQ(made, 2u * kCycles) << static_cast<double>(made) / kCycles << " allocations per connection";
}

}  // namespace
}  // namespace bypass::inet
