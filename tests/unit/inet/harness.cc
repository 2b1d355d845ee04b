#include "tests/unit/inet/harness.h"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace bypass::inet::test {

void PipeDevice::transmit(Packet&& frame) {
  if (inspect) inspect(frame);
  if (frame.tx.segment_payload != 0) {
    // What a TSO NIC does: cut the large segment into frames with their own headers and sums.
    ++large_segments;
    std::string bytes = frame.data.to_string();
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
    const size_t header_length = size_t{frame.tx.l2_length} + frame.tx.l3_length + frame.tx.l4_length;
    TcpSegmentCutter cutter(p, frame.tx, bytes.size() - header_length);
    EXPECT_GT(cutter.frames(), 0u);
    for (size_t i = 0; i < cutter.frames(); ++i) {
      std::string piece(header_length + cutter.payload_length(i), '\0');
      auto* out = reinterpret_cast<uint8_t*>(piece.data());
      cutter.write_headers(i, out);
      std::memcpy(out + header_length, p + header_length + cutter.payload_offset(i), cutter.payload_length(i));
      const TcpView tcp(out + frame.tx.l2_length + frame.tx.l3_length,
                        piece.size() - frame.tx.l2_length - frame.tx.l3_length);
      tcp.set_checksum(internet_checksum(tcp.data(), tcp.size()));
      EXPECT_LE(piece.size() - frame.tx.l2_length, mtu_);
      Packet cut;
      cut.data.append_copy(piece);
      wire_.send(side_, std::move(cut));
    }
    return;
  }
  if (frame.tx.ipv4_checksum || frame.tx.tcp_checksum) {
    // What a NIC does with the offload flags: finish the sums in place.
    std::string bytes = frame.data.to_string();
    auto* p = reinterpret_cast<uint8_t*>(bytes.data());
    uint8_t* ip = p + frame.tx.l2_length;
    const size_t ip_size = bytes.size() - frame.tx.l2_length;
    const Ipv4View ipv4(ip, ip_size);
    if (frame.tx.ipv4_checksum) ipv4.set_checksum(internet_checksum(ip, frame.tx.l3_length));
    if (frame.tx.tcp_checksum) {
      // IPv4's total length counts its header; IPv6's payload length all past the fixed one.
      const Ipv6View ipv6(ip, ip_size);
      const size_t tcp_length = ipv6.version() == 6
                                    ? ipv6.payload_length() + Ipv6Header::kLength - frame.tx.l3_length
                                    : ipv4.total_length() - frame.tx.l3_length;
      // The field holds the pseudo-header sum, so the checksum over the segment as it stands is
      // the complete one.
      const TcpView tcp(ip + frame.tx.l3_length, tcp_length);
      tcp.set_checksum(internet_checksum(tcp.data(), tcp_length));
    }
    frame.data.clear();
    frame.data.append_copy(bytes);
  }
  wire_.send(side_, std::move(frame));
}

bool Wire::record_pcap(const std::string& path) {
  pcap_ = std::make_unique<bypass::test::PcapWriter>(path);
  return pcap_->ok();
}

void Wire::send(int from_side, Packet&& frame) {
  ++frames[from_side];
  std::vector<uint8_t> bytes(frame.data.length());
  frame.data.copy_out(0, bytes.size(), bytes.data());
  if (pcap_) pcap_->write(timers_.now(), bytes.data(), bytes.size());
  if (tap && !tap(from_side, bytes)) return;
  if (cut) return;
  const Faults& f = faults[from_side];
  std::uniform_real_distribution<double> u(0, 1);
  if (u(rng_) < f.drop) return;
  if (u(rng_) < f.corrupt && !bytes.empty()) {
    std::uniform_int_distribution<size_t> at(0, bytes.size() - 1);
    bytes[at(rng_)] ^= static_cast<uint8_t>(1u << (rng_() % 8));
  }
  Duration delay = f.delay;
  if (u(rng_) < f.reorder) delay += f.reorder_extra;
  if (u(rng_) < f.duplicate) deliver(1 - from_side, bytes, delay + 1us);
  deliver(1 - from_side, std::move(bytes), delay);
}

void Wire::deliver(int to_side, std::vector<uint8_t> bytes, Duration delay) {
  InetStack* target = ends_[to_side];
  if (!target) return;
  if (burst != 0) {
    arrivals_[to_side].push_back({timers_.now() + delay, std::move(bytes)});
    timers_.schedule(delay, [this, to_side] { deliver_due(to_side); });
    return;
  }
  timers_.schedule(delay, [target, bytes = std::move(bytes)] {
    Packet packet;
    packet.data.append(BufferSegment::copy_of(bytes.data(), bytes.size()));
    target->receive(std::move(packet));
  });
}

void Wire::deliver_due(int to_side) {
  std::deque<Arrival>& queue = arrivals_[to_side];
  const TimePoint now = timers_.now();
  for (;;) {
    // Taken out of the queue first: receiving makes the stack send, which may queue more.
    std::vector<std::vector<uint8_t>> due;
    for (auto it = queue.begin(); it != queue.end() && due.size() < burst;) {
      if (it->at > now) {
        ++it;
        continue;
      }
      due.push_back(std::move(it->bytes));
      it = queue.erase(it);
    }
    InetStack* target = ends_[to_side];
    if (due.empty() || !target) return;
    ++bursts[to_side];
    target->begin_burst();
    for (std::vector<uint8_t>& bytes : due) {
      Packet packet;
      packet.data.append(BufferSegment::copy_of(bytes.data(), bytes.size()));
      target->receive(std::move(packet));
    }
    target->end_burst();
  }
}

TwoHosts::TwoHosts(uint64_t seed, InetSettings base) : wire(timers, seed) {
  settings_a = base;
  settings_a.address = ip_of(1);
  settings_b = base;
  settings_b.address = ip_of(2);
  if (!base.ipv6.address.is_unspecified()) {  // IPv6 too: the base address ending in ::1 and ::2
    settings_a.ipv6.address.bytes[15] = 1;
    settings_b.ipv6.address.bytes[15] = 2;
  }
  dev_a = std::make_unique<PipeDevice>(wire, 0, mac_of(1));
  dev_b = std::make_unique<PipeDevice>(wire, 1, mac_of(2));
  a = std::make_unique<InetStack>(settings_a, *dev_a, timers, seed * 31 + 1);
  b = std::make_unique<InetStack>(settings_b, *dev_b, timers, seed * 31 + 2);
  wire.attach(0, a.get());
  wire.attach(1, b.get());
  record_test_pcap();
  if (!base.ipv6.address.is_unspecified()) {
    // IPv6 addresses are tentative until Duplicate Address Detection (RFC 4862 §5.4) has passed:
    // start both and run the clock through it (and the announcements' delivery), so tests begin
    // with usable addresses; the start-up frames are not counted as the test's.
    a->start();
    b->start();
    timers.advance(base.ipv6.nd_retrans_timer * base.ipv6.dad_transmits + 1ms);
    wire.frames[0] = wire.frames[1] = 0;
  }
}

void TwoHosts::record_test_pcap() {
  const char* dir = std::getenv("BYPASS_TEST_PCAP");
  if (dir == nullptr || *dir == '\0') return;
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = test ? std::string(test->test_suite_name()) + "." + test->name() : "hosts";
  std::replace(name.begin(), name.end(), '/', '_');  // parameterized tests' names hold slashes
  static std::map<std::string, int> hosts_per_test;   // a test with several TwoHosts gets a file each
  const int n = hosts_per_test[name]++;
  const std::string path = std::string(dir) + "/" + name + (n ? "-" + std::to_string(n) : "") + ".pcap";
  if (!wire.record_pcap(path)) ADD_FAILURE() << "BYPASS_TEST_PCAP: " << wire.pcap_error();
}

TwoHosts::~TwoHosts() {
  wire.attach(0, nullptr);
  wire.attach(1, nullptr);
  a.reset();
  b.reset();
}

bool TwoHosts::run_until(const std::function<bool()>& done, Duration virtual_limit,
                         uint64_t max_events) {
  TimePoint deadline = timers.now() + virtual_limit;
  for (uint64_t i = 0; i < max_events; ++i) {
    if (done()) return true;
    if (timers.pending() == 0) return done();
    if (timers.now() > deadline) return done();
    timers.run_next();
  }
  return done();
}

BufferList pattern(uint64_t offset, size_t length) {
  BufferList out;
  char* p = out.append_hole(length);
  for (size_t i = 0; i < length; ++i) p[i] = static_cast<char>(pattern_byte(offset + i));
  return out;
}

int64_t first_mismatch(const BufferList& data, uint64_t offset) {
  uint64_t pos = 0;
  for (const BufferSegment& seg : data.segments())
    for (size_t i = 0; i < seg.length(); ++i, ++pos)
      if (static_cast<uint8_t>(seg.data()[i]) != pattern_byte(offset + pos))
        return static_cast<int64_t>(offset + pos);
  return -1;
}

TransferResult transfer(TwoHosts& hosts, const std::shared_ptr<TcpConnection>& sender,
                        const std::shared_ptr<TcpConnection>& receiver, uint64_t total,
                        Duration virtual_limit, size_t min_send_space) {
  TransferResult result;
  uint64_t queued = 0;
  constexpr size_t kChunk = 256 * 1024;
  auto pump = [&] {
    while (queued < total && sender->send_space() >= std::min<uint64_t>(min_send_space, total - queued) &&
           sender->send_space() > 0) {
      size_t n = static_cast<size_t>(std::min<uint64_t>({kChunk, total - queued, sender->send_space()}));
      BufferList chunk = pattern(queued, n);
      size_t taken = sender->send(chunk);
      queued += taken;
      if (taken == 0) break;
    }
    BufferList got = receiver->read();
    if (!got.empty()) {
      int64_t bad = first_mismatch(got, result.received);
      if (bad >= 0 && result.mismatch_at < 0) result.mismatch_at = bad;
      result.received += got.length();
    }
  };
  sender->set_event_handler([&](int) {});
  receiver->set_event_handler([&](int) {});
  TimePoint deadline = hosts.timers.now() + virtual_limit;
  for (uint64_t i = 0; i < 200'000'000 && hosts.timers.now() < deadline; ++i) {
    pump();
    if (result.received >= total || result.mismatch_at >= 0) break;
    if (sender->state() == TcpState::Closed || receiver->state() == TcpState::Closed) break;
    if (!hosts.timers.run_next()) break;
  }
  sender->set_event_handler(nullptr);
  receiver->set_event_handler(nullptr);
  result.complete = result.received == total && result.mismatch_at < 0;
  return result;
}

Packet craft_tcp(Ipv4Address src, MacAddress src_mac, Ipv4Address dst, MacAddress dst_mac,
                 const TcpHeader& h, const std::string& payload) {
  const size_t hl = h.emitted_length();
  constexpr size_t kTcpAt = EthernetHeader::kLength + Ipv4Header::kMinLength;
  std::vector<uint8_t> frame(kTcpAt + hl + payload.size());
  EthernetHeader{dst_mac, src_mac, static_cast<uint16_t>(EtherType::Ipv4)}.emit(frame.data());
  Ipv4Header ip;
  ip.total_length = static_cast<uint16_t>(Ipv4Header::kMinLength + hl + payload.size());
  ip.protocol = static_cast<uint8_t>(IpProtocol::Tcp);
  ip.source = src;
  ip.destination = dst;
  ip.emit(frame.data() + EthernetHeader::kLength, true);
  const TcpView tcp(frame.data() + kTcpAt, hl + payload.size());
  h.emit(tcp.data());
  std::memcpy(tcp.payload(), payload.data(), payload.size());
  BufferList segment;
  segment.append_copy(tcp.data(), tcp.size());
  tcp.set_checksum(tcp_checksum(src, dst, segment));
  Packet p;
  p.data.append_copy(frame.data(), frame.size());
  return p;
}

SegmentRecorder::SegmentRecorder(TwoHosts& hosts, Drop drop) : wire_(hosts.wire), previous_(hosts.wire.tap) {
  wire_.tap = [this, &timers = hosts.timers, drop = std::move(drop)](int from, std::vector<uint8_t>& bytes) {
    if (previous_ && !previous_(from, bytes)) return false;
    TcpFrame frame;
    if (parse_tcp_frame(bytes.data(), bytes.size(), frame) != nullptr) return true;
    SeenSegment s{from,         frame.header, frame.payload_length(), timers.now(),
                  frame.ipv6,   frame.source, frame.destination,      frame.ip_length()};
    segments_.push_back(s);
    return !(drop && drop(s));
  };
}

SegmentRecorder::~SegmentRecorder() { wire_.tap = std::move(previous_); }

std::pair<std::shared_ptr<TcpConnection>, std::shared_ptr<TcpConnection>> connect_pair(
    TwoHosts& hosts, uint16_t port) {
  return connect_pair(hosts, IpAddress(ip_of(2)), port);
}

std::pair<std::shared_ptr<TcpConnection>, std::shared_ptr<TcpConnection>> connect_pair(
    TwoHosts& hosts, const IpAddress& remote, uint16_t port) {
  auto listener = hosts.b->tcp().listen(port);
  if (!listener) return {};
  auto client = hosts.a->tcp().connect(remote, port);
  if (!client) return {};
  std::shared_ptr<TcpConnection> server;
  hosts.run_until([&] {
    if (!server) server = listener->accept();
    return server && client->established();
  }, 60s);
  hosts.b->tcp().stop_listening(listener);
  return {client, server};
}

}  // namespace bypass::inet::test
