// Receive coalescing (stack/inet/tcp_gro.h): which segments merge, in what order units reach TCP,
// how TCP acknowledges a coalesced unit (RFC 5681 §4.2), and bulk transfers with GRO on.
#include <algorithm>

#include "stack/inet/tcp_gro.h"
#include "tests/unit/inet/harness.h"

namespace bypass::inet::test {
namespace {

constexpr uint32_t kSize = 1448;
constexpr uint32_t kIsn = 1000;

// Feeds TcpGro directly and records what it hands TCP.
class GroTable : public ::testing::Test {
 protected:
  struct Delivered {
    FourTuple tuple;
    TcpSegment segment;
  };

  static FourTuple connection(uint16_t port) { return {ip_of(1), 80, ip_of(2), port}; }
  // A segment carrying pattern bytes at stream offset seq - kIsn.
  static TcpSegment segment(uint32_t seq, uint32_t length = kSize, uint8_t flags = kTcpAck) {
    TcpSegment s;
    s.header.seq = seq;
    s.header.ack = 5000;
    s.header.flags = flags;
    s.header.window = 1000;
    s.payload = pattern(seq - kIsn, length);
    return s;
  }
  static uint32_t nth(uint32_t n) { return kIsn + n * kSize; }
  void add(TcpSegment s, uint16_t port = 40000, bool coalescable = true) {
    gro.receive(connection(port), std::move(s), coalescable);
  }
  // Units delivered so far as (first seq, wire segments) pairs.
  std::vector<std::pair<SeqNumber, uint16_t>> units() const {
    std::vector<std::pair<SeqNumber, uint16_t>> out;
    for (const Delivered& d : delivered) out.emplace_back(d.segment.header.seq, d.segment.segments);
    return out;
  }
  using Units = std::vector<std::pair<SeqNumber, uint16_t>>;

  InetStats stats;
  std::vector<Delivered> delivered;
  TcpGro gro{stats, [this](const FourTuple& t, TcpSegment&& s) { delivered.push_back({t, std::move(s)}); }};
};

TEST_F(GroTable, MergesConsecutiveInOrderSegmentsIntoOneUnit) {
  gro.begin_burst();
  for (uint32_t i = 0; i < 4; ++i) add(segment(nth(i)));
  EXPECT_TRUE(delivered.empty());  // held until the burst ends
  gro.end_burst();
  ASSERT_EQ(units(), (Units{{nth(0), 4}}));
  EXPECT_EQ(delivered[0].segment.payload.length(), 4 * kSize);
  EXPECT_EQ(first_mismatch(delivered[0].segment.payload, 0), -1);
  EXPECT_EQ(delivered[0].segment.header.flags, kTcpAck);
  EXPECT_EQ(stats.tcp_gro_units, 1u);
  EXPECT_EQ(stats.tcp_gro_segments, 4u);
}

TEST_F(GroTable, OutsideABurstEverySegmentGoesAtOnce) {
  add(segment(nth(0)));
  add(segment(nth(1)));
  EXPECT_EQ(units(), (Units{{nth(0), 1}, {nth(1), 1}}));
  EXPECT_EQ(stats.tcp_gro_units, 0u);
}

TEST_F(GroTable, OutOfOrderSegmentsAreNotMerged) {
  gro.begin_burst();
  add(segment(nth(0)));
  add(segment(nth(2)));  // a gap: the unit so far goes first
  add(segment(nth(1)));  // fills the gap, but comes after nth(2): not contiguous with it
  add(segment(nth(3)));
  gro.end_burst();
  EXPECT_EQ(units(), (Units{{nth(0), 1}, {nth(2), 1}, {nth(1), 1}, {nth(3), 1}}));
  // A retransmission of data already in the unit does not merge either.
  delivered.clear();
  gro.begin_burst();
  add(segment(nth(0)));
  add(segment(nth(1)));
  add(segment(nth(1)));
  gro.end_burst();
  EXPECT_EQ(units(), (Units{{nth(0), 2}, {nth(1), 1}}));
}

TEST_F(GroTable, PshEndsTheUnitItJoins) {
  gro.begin_burst();
  add(segment(nth(0)));
  add(segment(nth(1), kSize, kTcpAck | kTcpPsh));
  ASSERT_EQ(units(), (Units{{nth(0), 2}}));  // delivered at once, not at the end of the burst
  EXPECT_TRUE(delivered[0].segment.header.has(kTcpPsh));
  add(segment(nth(2)));
  add(segment(nth(3)));
  add(segment(nth(4), kSize, kTcpAck | kTcpPsh));  // ends the second unit
  add(segment(nth(5), kSize, kTcpAck | kTcpPsh));  // a lone PSH segment is a unit of its own
  gro.end_burst();
  EXPECT_EQ(units(), (Units{{nth(0), 2}, {nth(2), 3}, {nth(5), 1}}));
}

TEST_F(GroTable, FinNeverMergesAndKeepsItsPlace) {
  gro.begin_burst();
  add(segment(nth(0)));
  add(segment(nth(1)));
  add(segment(nth(2), 100, kTcpAck | kTcpFin));
  add(segment(nth(2) + 101));  // nonsense after a FIN, but it must not overtake it
  gro.end_burst();
  EXPECT_EQ(units(), (Units{{nth(0), 2}, {nth(2), 1}, {nth(2) + 101, 1}}));
  EXPECT_TRUE(delivered[1].segment.header.has(kTcpFin));
  EXPECT_EQ(delivered[1].segment.payload.length(), 100u);
}

TEST_F(GroTable, SynRstUrgEceCwrAndPureAcksNeverMerge) {
  const uint8_t kFlags[] = {kTcpAck | kTcpSyn, kTcpAck | kTcpRst, kTcpAck | kTcpUrg, kTcpAck | kTcpEce,
                            kTcpAck | kTcpCwr, kTcpPsh /* no ACK */};
  for (uint8_t flags : kFlags) {
    SCOPED_TRACE(static_cast<int>(flags));
    delivered.clear();
    gro.begin_burst();
    add(segment(nth(0)));
    add(segment(nth(1)));
    add(segment(nth(2), kSize, flags));
    add(segment(nth(3)));
    gro.end_burst();
    EXPECT_EQ(units(), (Units{{nth(0), 2}, {nth(2), 1}, {nth(3), 1}}));
    EXPECT_EQ(delivered[1].segment.header.flags, flags);
  }
  // Pure ACKs (duplicate ACKs must each reach TCP) and segments with SACK blocks.
  delivered.clear();
  gro.begin_burst();
  add(segment(nth(0)));
  add(segment(nth(1), 0));
  add(segment(nth(1), 0));
  TcpSegment with_sack = segment(nth(1));
  with_sack.header.options.sack_blocks[0] = {1, 2};
  with_sack.header.options.sack_count = 1;
  add(std::move(with_sack));
  add(segment(nth(2)));
  gro.end_burst();
  EXPECT_EQ(units(), (Units{{nth(0), 1}, {nth(1), 1}, {nth(1), 1}, {nth(1), 1}, {nth(2), 1}}));
}

TEST_F(GroTable, DatagramsTheIpLayerRulesOutAndLroFramesNeverMerge) {
  gro.begin_burst();
  add(segment(nth(0)));
  add(segment(nth(1)), 40000, /*coalescable=*/false);  // IP options or reassembled
  add(segment(nth(2)));
  TcpSegment lro = segment(nth(3), 4 * kSize);
  lro.segments = 4;
  add(std::move(lro));
  add(segment(nth(7)));
  gro.end_burst();
  EXPECT_EQ(units(), (Units{{nth(0), 1}, {nth(1), 1}, {nth(2), 1}, {nth(3), 4}, {nth(7), 1}}));
  EXPECT_EQ(stats.tcp_gro_units, 0u);
}

TEST_F(GroTable, TwoConnectionsInterleavedInOneBurst) {
  gro.begin_burst();
  for (uint32_t i = 0; i < 3; ++i) {
    add(segment(nth(i)), 40000);
    add(segment(nth(i)), 40001);
  }
  gro.end_burst();
  ASSERT_EQ(units(), (Units{{nth(0), 3}, {nth(0), 3}}));
  EXPECT_EQ(delivered[0].tuple, connection(40000));  // opened first, delivered first
  EXPECT_EQ(delivered[1].tuple, connection(40001));
  for (const Delivered& d : delivered) EXPECT_EQ(first_mismatch(d.segment.payload, 0), -1);
  EXPECT_EQ(stats.tcp_gro_units, 2u);
  EXPECT_EQ(stats.tcp_gro_segments, 6u);
}

TEST_F(GroTable, MoreConnectionsThanUnitsDeliverTheOldestFirst) {
  gro.begin_burst();
  for (uint16_t c = 0; c <= TcpGro::kMaxUnits; ++c) add(segment(nth(0)), static_cast<uint16_t>(40000 + c));
  ASSERT_EQ(delivered.size(), 1u);  // the table was full: the oldest made room
  EXPECT_EQ(delivered[0].tuple, connection(40000));
  for (uint16_t c = 1; c <= TcpGro::kMaxUnits; ++c) add(segment(nth(1)), static_cast<uint16_t>(40000 + c));
  gro.end_burst();
  ASSERT_EQ(delivered.size(), TcpGro::kMaxUnits + 1);
  for (size_t i = 1; i < delivered.size(); ++i) {
    EXPECT_EQ(delivered[i].tuple, connection(static_cast<uint16_t>(40000 + i)));
    EXPECT_EQ(delivered[i].segment.segments, 2u);
  }
}

TEST_F(GroTable, AckWindowOrHeaderChangesEndTheUnit) {
  gro.begin_burst();
  add(segment(nth(0)));
  TcpSegment new_ack = segment(nth(1));
  new_ack.header.ack += 1;
  add(std::move(new_ack));
  TcpSegment new_window = segment(nth(2));
  new_window.header.ack += 1;
  new_window.header.window = 2000;
  add(std::move(new_window));
  TcpSegment longer_header = segment(nth(3));
  longer_header.header.ack += 1;
  longer_header.header.window = 2000;
  longer_header.header.header_length = 32;
  add(std::move(longer_header));
  gro.end_burst();
  EXPECT_EQ(units(), (Units{{nth(0), 1}, {nth(1), 1}, {nth(2), 1}, {nth(3), 1}}));
}

TEST_F(GroTable, ShorterSegmentEndsTheUnitAndALongerOneStartsANewOne) {
  gro.begin_burst();
  add(segment(nth(0)));
  add(segment(nth(1), 500));  // the sender's last piece: merged, unit ends
  add(segment(nth(1) + 500, 500));
  add(segment(nth(1) + 1000, kSize));  // longer than its unit's first segment
  gro.end_burst();
  EXPECT_EQ(units(), (Units{{nth(0), 2}, {nth(1) + 500, 1}, {nth(1) + 1000, 1}}));
}

TEST_F(GroTable, UnitCarriesAtMost64KiB) {
  gro.begin_burst();
  for (uint32_t i = 0; i < 50; ++i) add(segment(nth(i)));
  gro.end_burst();
  const uint16_t first = TcpGro::kMaxUnitPayload / kSize;  // 45 segments of 1448 bytes
  EXPECT_EQ(units(), (Units{{nth(0), first}, {nth(first), static_cast<uint16_t>(50 - first)}}));
}

TEST_F(GroTable, TimestampsThatDiffer) {
  auto stamped = [](uint32_t n, uint32_t tsval, uint32_t tsecr) {
    TcpSegment s = segment(nth(n));
    s.header.header_length = 32;
    s.header.options.timestamp = std::make_pair(tsval, tsecr);
    return s;
  };
  // The peer's clock ticks within the unit (TSval non-decreasing, same TSecr): merged, and the unit
  // echoes the earliest TSval (RFC 7323 §4.3).
  gro.begin_burst();
  add(stamped(0, 100, 7));
  add(stamped(1, 100, 7));
  add(stamped(2, 101, 7));
  gro.end_burst();
  ASSERT_EQ(units(), (Units{{nth(0), 3}}));
  EXPECT_EQ(delivered[0].segment.header.options.timestamp, std::make_pair(100u, 7u));
  // TSval going back, a different TSecr, or a timestamp on one segment only: not merged.
  delivered.clear();
  gro.begin_burst();
  add(stamped(0, 100, 7));
  add(stamped(1, 99, 7));
  add(stamped(2, 100, 8));
  add(segment(nth(3)));
  gro.end_burst();
  EXPECT_EQ(units(), (Units{{nth(0), 1}, {nth(1), 1}, {nth(2), 1}, {nth(3), 1}}));
  // TSval compares in sequence space: a wrap is still non-decreasing.
  delivered.clear();
  gro.begin_burst();
  add(stamped(0, 0xffffffffu, 7));
  add(stamped(1, 1, 7));
  gro.end_burst();
  EXPECT_EQ(units(), (Units{{nth(0), 2}}));
}

// ---- through the stack: segments crafted from b to a's established connection ----

class GroStack : public ::testing::Test {
 protected:
  void open(bool gro, size_t rcv_buffer = 1 << 20) {
    InetSettings s;
    s.tcp.gro = gro;
    s.tcp.timestamps = false;  // crafted segments carry no options
    s.tcp.rcv_buffer = rcv_buffer;
    s.tcp.window_scale = false;
    client.reset();
    server.reset();
    recorder.reset();  // it taps the wire of the hosts it was made for
    hosts.reset();
    hosts = std::make_unique<TwoHosts>(17, s);
    std::tie(client, server) = connect_pair(*hosts);
    ASSERT_TRUE(client && server);
    hosts->run_for(100ms);
    recorder.emplace(*hosts);
    std::vector<SeenSegment>& seen = recorder->segments();
    BufferList probe = pattern(0, 10);  // learn the server's next sequence number and ACK
    server->send(probe);
    hosts->run_until([&] { return client->readable_bytes() == 10; });
    client->read();
    hosts->run_for(100ms);
    for (auto it = seen.rbegin(); it != seen.rend(); ++it)
      if (it->from == 1) {
        server_next = it->header.seq + static_cast<uint32_t>(it->payload);
        client_ack_point = it->header.ack;
        break;
      }
    for (auto it = seen.rbegin(); it != seen.rend(); ++it)
      if (it->from == 0) {
        client_window = it->header.window;
        break;
      }
    // From here on the crafted segments play the server: the client's answers are recorded but
    // kept from the real server, which would answer ACKs of data it never sent.
    recorder.reset();
    recorder.emplace(*hosts, [](const SeenSegment& s) { return s.from == 0; });
    mss = client->send_mss();
  }
  // A data segment at stream offset `offset` after the probe, as the server would send it.
  Packet data(uint32_t offset, uint32_t length, uint8_t flags = kTcpAck) {
    TcpHeader h;
    h.source_port = server->tuple().local_port;
    h.destination_port = client->tuple().local_port;
    h.seq = server_next + offset;
    h.ack = client_ack_point;
    h.flags = flags;
    h.window = 8000;
    std::string bytes = pattern(10 + offset, length).to_string();
    return craft_tcp(ip_of(2), mac_of(2), ip_of(1), mac_of(1), h, bytes);
  }
  // `count` full-sized segments from the start of the stream.
  std::vector<Packet> full_segments(uint32_t count) {
    std::vector<Packet> frames;
    for (uint32_t i = 0; i < count; ++i) frames.push_back(data(i * mss, mss));
    return frames;
  }
  void burst(const std::vector<Packet>& frames) {
    hosts->a->begin_burst();
    for (const Packet& frame : frames) hosts->a->receive(Packet(frame.data));
    hosts->a->end_burst();
  }
  std::vector<SeenSegment> acks() const {
    std::vector<SeenSegment> out;
    for (const SeenSegment& s : recorder->segments())
      if (s.from == 0 && s.payload == 0 && s.header.has(kTcpAck)) out.push_back(s);
    return out;
  }

  std::unique_ptr<TwoHosts> hosts;
  std::shared_ptr<TcpConnection> client, server;
  // Declared after hosts, so destroyed before them.
  std::optional<SegmentRecorder> recorder;
  SeqNumber server_next, client_ack_point;
  uint32_t mss = 0;
  uint16_t client_window = 0;
};

TEST_F(GroStack, OneAckPerMergedUnitLikeLinux) {
  open(true);
  // Four full-sized segments in one burst: one unit, acknowledged at once (it holds more than
  // one full segment, RFC 5681 §4.2), with one ACK instead of two.
  burst(full_segments(4));
  auto sent = acks();
  ASSERT_EQ(sent.size(), 1u);  // before any timer ran
  EXPECT_EQ(sent[0].header.ack, server_next + 4 * mss);
  EXPECT_EQ(hosts->a->stats().tcp_gro_units, 1u);
  EXPECT_EQ(hosts->a->stats().tcp_gro_segments, 4u);
  BufferList got = client->read();
  EXPECT_EQ(got.length(), 4u * mss);
  EXPECT_EQ(first_mismatch(got, 10), -1);
  // One full segment and a short one: one full segment counted, so the ACK waits (delayed ACK)
  // exactly as it would for the two segments apart.
  recorder->segments().clear();
  burst({data(4 * mss, mss), data(5 * mss, 100)});
  EXPECT_TRUE(acks().empty());
  hosts->run_for(50ms);
  ASSERT_EQ(acks().size(), 1u);
  EXPECT_EQ(acks()[0].header.ack, server_next + 5 * mss + 100);
}

TEST_F(GroStack, WithGroOffEverySecondSegmentIsAcknowledged) {
  open(false);
  burst(full_segments(4));
  auto sent = acks();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[1].header.ack, server_next + 4 * mss);
  EXPECT_EQ(hosts->a->stats().tcp_gro_units, 0u);
}

TEST_F(GroStack, UnitAcrossTheWindowEdgeIsCutThere) {
  for (bool gro : {true, false}) {
    SCOPED_TRACE(gro ? "gro on" : "gro off");
    recorder->segments().clear();
    open(gro, 4096);
    const uint32_t window = client_window;
    ASSERT_GT(window, 2 * mss);
    ASSERT_LT(window, 4 * mss);
    // Four segments in one burst; the window ends inside the third; the fourth lies beyond it.
    burst(full_segments(4));
    EXPECT_EQ(client->readable_bytes(), window);
    BufferList got = client->read();
    EXPECT_EQ(first_mismatch(got, 10), -1);
    ASSERT_FALSE(acks().empty());
    EXPECT_EQ(acks().back().header.ack, server_next + window);  // at once: the window is full
    EXPECT_EQ(hosts->a->stats().tcp_gro_units, gro ? 1u : 0u);
  }
}

TEST_F(GroStack, PshAndFinEndUnitsAndEveryByteArrivesInOrder) {
  open(true);
  burst({data(0, mss), data(mss, mss, kTcpAck | kTcpPsh), data(2 * mss, mss), data(3 * mss, mss),
         data(4 * mss, 50, kTcpAck | kTcpFin)});
  EXPECT_EQ(hosts->a->stats().tcp_gro_units, 2u);
  EXPECT_EQ(hosts->a->stats().tcp_gro_segments, 4u);
  BufferList got = client->read();
  EXPECT_EQ(got.length(), 4u * mss + 50);
  EXPECT_EQ(first_mismatch(got, 10), -1);
  EXPECT_TRUE(client->end_of_stream());
  EXPECT_EQ(client->state(), TcpState::CloseWait);
}

// The same frame with 4 bytes of IP options (NOPs and an end of list): RFC 791 §3.1.
Packet with_ip_options(const Packet& frame) {
  std::string bytes = frame.data.to_string();
  constexpr size_t kOptions = 4;
  bytes.insert(EthernetHeader::kLength + Ipv4Header::kMinLength, std::string("\x01\x01\x01\x00", kOptions));
  const Ipv4View ip(reinterpret_cast<uint8_t*>(bytes.data()) + EthernetHeader::kLength,
                    bytes.size() - EthernetHeader::kLength);
  ip.set_version_and_header_length(Ipv4Header::kMinLength + kOptions);
  ip.set_total_length(static_cast<uint16_t>(ip.total_length() + kOptions));
  ip.set_checksum(0);
  ip.set_checksum(internet_checksum(ip.data(), ip.header_length()));
  Packet out;
  out.data.append_copy(bytes);
  return out;
}

// The frame's datagram as two IPv4 fragments, the first carrying `first_bytes` of its payload.
std::vector<Packet> fragmented(const Packet& frame, size_t first_bytes, uint16_t identification) {
  const std::string bytes = frame.data.to_string();
  constexpr size_t kHeaders = EthernetHeader::kLength + Ipv4Header::kMinLength;
  const std::string payload = bytes.substr(kHeaders);
  std::vector<Packet> out;
  for (size_t offset : {size_t{0}, first_bytes}) {
    const size_t length = offset == 0 ? first_bytes : payload.size() - first_bytes;
    std::string piece = bytes.substr(0, kHeaders) + payload.substr(offset, length);
    const Ipv4View ip(reinterpret_cast<uint8_t*>(piece.data()) + EthernetHeader::kLength,
                      piece.size() - EthernetHeader::kLength);
    ip.set_total_length(static_cast<uint16_t>(Ipv4Header::kMinLength + length));
    ip.set_identification(identification);
    ip.set_flags_fragment(static_cast<uint16_t>((offset == 0 ? Ipv4Header::kFlagMoreFragments : 0) | offset / 8));
    ip.set_checksum(0);
    ip.set_checksum(internet_checksum(ip.data(), Ipv4Header::kMinLength));
    Packet p;
    p.data.append_copy(piece);
    out.push_back(std::move(p));
  }
  return out;
}

TEST_F(GroStack, ReassembledDatagramsAreNotMerged) {
  open(true);
  std::vector<Packet> frames;
  for (uint32_t i = 0; i < 2; ++i)
    for (Packet& fragment : fragmented(data(i * mss, mss), 800, static_cast<uint16_t>(77 + i)))
      frames.push_back(std::move(fragment));
  frames.push_back(data(2 * mss, mss));
  frames.push_back(data(3 * mss, mss));
  burst(frames);
  EXPECT_EQ(hosts->a->stats().reassembly_completed, 2u);
  EXPECT_EQ(hosts->a->stats().tcp_gro_units, 1u);  // the last two only
  EXPECT_EQ(hosts->a->stats().tcp_gro_segments, 2u);
  BufferList got = client->read();
  EXPECT_EQ(got.length(), 4u * mss);
  EXPECT_EQ(first_mismatch(got, 10), -1);
}

TEST_F(GroStack, DatagramsWithIpOptionsAreNotMerged) {
  open(true);
  std::vector<Packet> frames = full_segments(4);
  for (Packet& frame : frames) frame = with_ip_options(frame);
  burst(frames);
  EXPECT_EQ(hosts->a->stats().tcp_gro_units, 0u);
  EXPECT_EQ(acks().size(), 2u);  // every second full segment, as without GRO
  BufferList got = client->read();
  EXPECT_EQ(got.length(), 4u * mss);
  EXPECT_EQ(first_mismatch(got, 10), -1);
}

TEST_F(GroStack, LroFrameLargerThanTheMtuIsOneSegmentOfMany) {
  open(true);
  // What a port with LRO hands over: one frame of four merged segments, tso_segsz = the MSS.
  Packet frame = data(0, 4 * mss);
  ASSERT_GT(frame.data.length(), 14u + hosts->dev_a->mtu());
  frame.rx_lro_segment_size = static_cast<uint16_t>(mss);
  hosts->a->begin_burst();
  hosts->a->receive(std::move(frame));
  hosts->a->receive(data(4 * mss, mss));  // not merged with the LRO frame
  hosts->a->end_burst();
  EXPECT_EQ(hosts->a->stats().tcp_lro_frames, 1u);
  EXPECT_EQ(hosts->a->stats().tcp_lro_segments, 4u);
  EXPECT_EQ(hosts->a->stats().tcp_gro_units, 0u);
  ASSERT_FALSE(acks().empty());  // four full segments: acknowledged at once
  EXPECT_EQ(acks().front().header.ack, server_next + 4 * mss);
  BufferList got = client->read();
  EXPECT_EQ(got.length(), 5u * mss);
  EXPECT_EQ(first_mismatch(got, 10), -1);
}

TEST_F(GroStack, ReorderedBurstIsReassembledByTcp) {
  open(true);
  // 0,1 | 3,4 | 2 | 5: the gap becomes out-of-order data TCP fills in (SACK/duplicate ACKs).
  burst({data(0, mss), data(mss, mss), data(3 * mss, mss), data(4 * mss, mss), data(2 * mss, mss),
         data(5 * mss, mss)});
  BufferList got = client->read();
  EXPECT_EQ(got.length(), 6u * mss);
  EXPECT_EQ(first_mismatch(got, 10), -1);
}

// ---- bulk transfers over the in-memory wire delivering bursts, as a polled device does ----

struct BulkRun {
  TransferResult result;
  InetStats receiver;
  size_t data_segments = 0, acks = 0;
};

BulkRun bulk(bool gro, uint64_t bytes, Faults faults = {}) {
  InetSettings s;
  s.tcp.gro = gro;
  TwoHosts hosts(23, s);
  hosts.wire.burst = 32;
  auto [client, server] = connect_pair(hosts);
  BulkRun run;
  if (!client || !server) return run;
  hosts.wire.faults[0] = faults;
  SegmentRecorder recorder(hosts);
  std::vector<SeenSegment>& seen = recorder.segments();
  run.result = transfer(hosts, client, server, bytes, 300s);
  for (const SeenSegment& seg : seen) {
    if (seg.from == 0 && seg.payload != 0) ++run.data_segments;
    if (seg.from == 1 && seg.payload == 0 && seg.header.has(kTcpAck)) ++run.acks;
  }
  run.receiver = hosts.b->stats();
  return run;
}

TEST(GroBulk, TransferIsByteExactWithOneAckPerUnit) {
  constexpr uint64_t kBytes = 16 << 20;
  BulkRun on = bulk(true, kBytes);
  ASSERT_TRUE(on.result.complete) << "received " << on.result.received << " mismatch at " << on.result.mismatch_at;
  BulkRun off = bulk(false, kBytes);
  ASSERT_TRUE(off.result.complete);
  EXPECT_GT(on.receiver.tcp_gro_units, 0u);
  EXPECT_GT(on.receiver.tcp_gro_segments, on.data_segments / 2);  // most segments arrive merged
  // Units TCP processed: merged units plus segments that stayed alone.
  const uint64_t units = on.receiver.tcp_segments_received - on.receiver.tcp_gro_segments + on.receiver.tcp_gro_units;
  // About one ACK per unit (a few more: window updates as the application reads, delayed ACKs).
  EXPECT_GE(on.acks, on.receiver.tcp_gro_units);
  EXPECT_LE(on.acks, units + units / 10);
  // Without GRO the receiver acknowledges every second full segment.
  EXPECT_GE(off.acks * 10, off.data_segments * 4);
  EXPECT_LT(on.acks * 3, off.acks);
  std::printf("gro on: %zu data segments, %llu units (%llu merged of %llu segments), %zu ACKs; "
              "gro off: %zu data segments, %zu ACKs\n",
              on.data_segments, static_cast<unsigned long long>(units),
              static_cast<unsigned long long>(on.receiver.tcp_gro_units),
              static_cast<unsigned long long>(on.receiver.tcp_gro_segments), on.acks, off.data_segments, off.acks);
}

TEST(GroBulk, TransferThroughLossReorderAndDuplicatesIsByteExact) {
  Faults faults;
  faults.drop = 0.01;
  faults.reorder = 0.02;
  faults.duplicate = 0.01;
  BulkRun on = bulk(true, 4 << 20, faults);
  EXPECT_TRUE(on.result.complete) << "received " << on.result.received << " mismatch at " << on.result.mismatch_at;
  EXPECT_GT(on.receiver.tcp_gro_units, 0u);
}

}  // namespace
}  // namespace bypass::inet::test
