// Test harness: stacks joined by an in-memory wire with a seeded fault injector, all driven by
// one VirtualTimerService so runs are deterministic and take no wall-clock time to "wait".
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "stack/inet/inet_stack.h"
#include "stack/inet/wire/checksum.h"
#include "stack/inet/wire/ethernet.h"
#include "stack/inet/wire/ipv4.h"
#include "stack/inet/wire/tcp.h"
#include "stack/inet/wire/tcp_segmentation.h"
#include "tests/support/pcap_writer.h"
#include "tests/support/tcp_frame.h"

namespace bypass::inet {
// gtest prints a sequence number as its value.
inline void PrintTo(SeqNumber s, std::ostream* os) { *os << s.raw(); }
}  // namespace bypass::inet

namespace bypass::inet::test {

using namespace std::chrono_literals;

struct Faults {
  double drop = 0, duplicate = 0, reorder = 0, corrupt = 0;
  Duration delay = 50us;          // one-way latency
  Duration reorder_extra = 300us; // added to a reordered packet
};

class Wire;

// One end of the wire. Emulates a NIC's checksum offload when capabilities say so.
class PipeDevice : public PacketDevice {
 public:
  PipeDevice(Wire& wire, int side, MacAddress mac) : wire_(wire), side_(side), mac_(mac) {}
  void transmit(Packet&& frame) override;
  uint16_t mtu() const override { return mtu_; }
  MacAddress mac() const override { return mac_; }
  DeviceCapabilities capabilities() const override { return caps_; }
  // As a device whose full queue refused frames it holds (PacketDevice::transmit_backlogged).
  void set_backlogged(bool backlogged) { set_transmit_backlogged(backlogged); }
  uint16_t mtu_ = 1500;
  DeviceCapabilities caps_;
  uint64_t large_segments = 0;  // frames handed down with TxOffload::segment_payload (cut here)
  // Sees every frame as the stack hands it down, before any offload is emulated.
  std::function<void(const Packet&)> inspect;

 private:
  Wire& wire_;
  int side_;
  MacAddress mac_;
};

// Frames from side 0 go to side 1 and vice versa. Every frame is deep-copied (so corruption
// never reaches the sender's retained buffers) and delivered through the virtual clock.
class Wire {
 public:
  using Tap = std::function<bool(int from_side, std::vector<uint8_t>& bytes)>;  // false = drop
  Wire(VirtualTimerService& timers, uint64_t seed) : timers_(timers), rng_(seed) {}
  void attach(int side, InetStack* stack) { ends_[side] = stack; }
  void send(int from_side, Packet&& frame);
  Faults faults[2];   // per direction, indexed by sending side
  Tap tap;            // sees (and may edit or drop) every frame before the faults
  uint64_t frames[2] = {0, 0};
  bool cut = false;   // drop everything
  // 0: each frame is received on its own. N: like a polled device, the frames due at one moment
  // are received in bursts of up to N (InetStack::begin_burst/end_burst), in the order sent.
  size_t burst = 0;
  uint64_t bursts[2] = {0, 0};  // bursts received, by receiving side
  // Writes every frame handed to the wire from now on to `path` (a pcap file stamped with the
  // virtual clock), before the tap and the faults act on it. False (and the reason in
  // pcap_error()) if the file cannot be written. TwoHosts does this for every test when
  // BYPASS_TEST_PCAP names a directory.
  bool record_pcap(const std::string& path);
  std::string pcap_error() const { return pcap_ ? pcap_->error() : std::string(); }
  void flush_pcap() { if (pcap_) pcap_->flush(); }

 private:
  struct Arrival {
    TimePoint at;
    std::vector<uint8_t> bytes;
  };
  void deliver(int to_side, std::vector<uint8_t> bytes, Duration delay);
  void deliver_due(int to_side);
  std::deque<Arrival> arrivals_[2];
  std::unique_ptr<bypass::test::PcapWriter> pcap_;
  VirtualTimerService& timers_;
  std::mt19937_64 rng_;
  InetStack* ends_[2] = {nullptr, nullptr};
};

inline MacAddress mac_of(uint8_t last) { return {{0x02, 0, 0, 0, 0, last}}; }
inline Ipv4Address ip_of(uint8_t last) { return Ipv4Address::from_octets(10, 0, 0, last); }

// Two hosts, 10.0.0.1 (side 0, "a") and 10.0.0.2 (side 1, "b"). With an IPv6 address in `base`,
// they also have that address with its last octet set to 1 and 2.
class TwoHosts {
 public:
  explicit TwoHosts(uint64_t seed = 1, InetSettings base = {});
  ~TwoHosts();

  // Run timers until `done` holds; bounded by virtual time and event count. Returns done().
  bool run_until(const std::function<bool()>& done, Duration virtual_limit = 120s,
                 uint64_t max_events = 50'000'000);
  void run_for(Duration span) { timers.advance(span); }

  VirtualTimerService timers;
  Wire wire;
  std::unique_ptr<PipeDevice> dev_a, dev_b;
  InetSettings settings_a, settings_b;
  std::unique_ptr<InetStack> a, b;

 private:
  // With BYPASS_TEST_PCAP=dir: the wire's frames go to dir/<suite>.<test>[-n].pcap.
  void record_test_pcap();
};

// A deterministic byte pattern so received data can be checked at any offset.
inline uint8_t pattern_byte(uint64_t offset) {
  uint64_t x = offset * 0x9e3779b97f4a7c15ull;
  return static_cast<uint8_t>((x >> 29) ^ (offset >> 8));
}
BufferList pattern(uint64_t offset, size_t length);
// Compares `data` with the pattern starting at `offset`; returns the first mismatch or -1.
int64_t first_mismatch(const BufferList& data, uint64_t offset);

// Streams `total` pattern bytes from `sender` to `receiver`, both already established, and
// verifies every byte. Returns true when all bytes arrived intact within the limits. The sender's
// buffer is refilled once it has `min_send_space` bytes free (a writer woken with hysteresis, as
// Linux wakes one at a third of its send buffer free), 1: whenever it has room.
struct TransferResult {
  bool complete = false;
  uint64_t received = 0;
  int64_t mismatch_at = -1;
};
TransferResult transfer(TwoHosts& hosts, const std::shared_ptr<TcpConnection>& sender,
                        const std::shared_ptr<TcpConnection>& receiver, uint64_t total,
                        Duration virtual_limit, size_t min_send_space = 1);

// A complete Ethernet/IPv4/TCP frame carrying `h` and `payload`, with correct checksums.
Packet craft_tcp(Ipv4Address src, MacAddress src_mac, Ipv4Address dst, MacAddress dst_mac,
                 const TcpHeader& h, const std::string& payload = {});

// One TCP segment seen crossing the wire: who sent it, its header, payload length and time.
struct SeenSegment {
  int from;
  TcpHeader header;
  size_t payload;
  TimePoint at;
  bool ipv6 = false;
  IpAddress source, destination;
  size_t ip_length = 0;  // the IP packet's length, its header included
};

// Records every TCP segment, IPv4 or IPv6, crossing the wire while it lives (through Wire::tap,
// after the tap that was there, which it puts back when destroyed); `drop`, if given, is asked
// about each one and drops it from the wire when it says so.
class SegmentRecorder {
 public:
  using Drop = std::function<bool(const SeenSegment&)>;
  explicit SegmentRecorder(TwoHosts& hosts, Drop drop = nullptr);
  ~SegmentRecorder();
  SegmentRecorder(const SegmentRecorder&) = delete;
  SegmentRecorder& operator=(const SegmentRecorder&) = delete;

  std::vector<SeenSegment>& segments() { return segments_; }
  const std::vector<SeenSegment>& segments() const { return segments_; }

 private:
  Wire& wire_;
  Wire::Tap previous_;
  std::vector<SeenSegment> segments_;
};

// Connect a (client) to b (server, `port`); returns {client, server} once both are established.
std::pair<std::shared_ptr<TcpConnection>, std::shared_ptr<TcpConnection>> connect_pair(
    TwoHosts& hosts, uint16_t port = 80);
// The same to `remote`, one of b's addresses (its IPv6 one for a connection over IPv6).
std::pair<std::shared_ptr<TcpConnection>, std::shared_ptr<TcpConnection>> connect_pair(
    TwoHosts& hosts, const IpAddress& remote, uint16_t port = 80);

}  // namespace bypass::inet::test
