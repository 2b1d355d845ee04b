// Fuzzing the network-facing userspace stack: every input drives one live InetStack (ARP, IPv4 with
// reassembly, ICMP, IPv6 with ND, ICMPv6 and reassembly through raw frames, TCP with a listener, accepted and active connections) through a short program
// of operations, with the fuzzer playing the peer at 10.0.0.2 and the application on our side.
//
// Raw frames reach the parsers; crafted frames (valid checksums, sequence and acknowledgement
// numbers taken from what the stack itself last sent, options, fragments) reach deep TCP states
// that random bytes never would. Time is virtual (VirtualTimerService), so retransmission, TIME_WAIT,
// reassembly and ARP timeouts all run in microseconds.
//
// Oracles, besides the sanitizers: once the application has closed everything and the peer falls
// silent, the stack must forget every connection within the bounded virtual time RFC 9293's timers
// allow (no state a hostile peer can pin forever), and destroying it must cancel every timer.
#include "tests/unit/inet/fuzz_stack.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "base/log.h"
#include "stack/inet/inet_stack.h"
#include "stack/inet/wire/arp.h"
#include "stack/inet/wire/checksum.h"
#include "stack/inet/wire/ethernet.h"
#include "stack/inet/wire/icmp.h"
#include "stack/inet/wire/ipv4.h"
#include "stack/inet/wire/tcp.h"

namespace bypass::inet::fuzz {

namespace {

using namespace std::chrono_literals;

const MacAddress kOurMac{{0x02, 0, 0, 0, 0, 0x01}};
const MacAddress kPeerMac{{0x02, 0, 0, 0, 0, 0x02}};
const Ipv4Address kOurIp = Ipv4Address::from_octets(10, 0, 0, 1);
const Ipv4Address kPeerIp = Ipv4Address::from_octets(10, 0, 0, 2);
constexpr uint16_t kListenPort = 80;
constexpr size_t kMaxOperations = 256;
constexpr size_t kMaxConnections = 8;
constexpr size_t kMaxTracks = 16;

// Reads the fuzzer's bytes as operands; past the end every read yields zero.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() << 8 | u8()); }
  uint32_t u32() { return static_cast<uint32_t>(u16()) << 16 | u16(); }
  // Up to `n` bytes (fewer when the input ends).
  std::vector<uint8_t> bytes(size_t n) {
    n = std::min(n, size_ - std::min(pos_, size_));
    std::vector<uint8_t> out(data_ + pos_, data_ + pos_ + n);
    pos_ += n;
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// What the stack last said on one of its connections, seen on the wire: the peer uses it to craft
// segments that are in sequence (or just outside it).
struct Track {
  uint16_t local_port = 0, remote_port = 0;
  SeqNumber snd_nxt;     // one past the highest sequence number we sent (SYN and FIN count)
  SeqNumber rcv_nxt;     // our last acknowledgement
  uint32_t ts_val = 0;   // our last timestamp value (the peer echoes it)
  bool valid = false;
};

class CaptureDevice : public PacketDevice {
 public:
  void transmit(Packet&& frame) override {
    const std::string bytes = frame.data.to_string();
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
    EthernetHeader eth;
    Ipv4Header ip;
    TcpHeader tcp;
    if (EthernetHeader::parse(p, bytes.size(), eth) != nullptr) return;
    if (eth.ethertype != static_cast<uint16_t>(EtherType::Ipv4)) return;
    const uint8_t* l3 = p + EthernetHeader::kLength;
    const size_t l3_len = bytes.size() - EthernetHeader::kLength;
    if (Ipv4Header::parse(l3, l3_len, false, ip) != nullptr || ip.protocol != 6) return;
    const uint8_t* l4 = l3 + ip.header_length;
    if (ip.total_length < ip.header_length || ip.total_length > l3_len) return;
    const size_t l4_len = ip.total_length - ip.header_length;
    if (TcpHeader::parse(l4, l4_len, tcp) != nullptr) return;
    const uint32_t payload = static_cast<uint32_t>(l4_len - tcp.header_length);
    Track& t = track_for(tcp.source_port, tcp.destination_port);
    const SeqNumber end = tcp.seq + payload + (tcp.has(kTcpSyn) ? 1 : 0) + (tcp.has(kTcpFin) ? 1 : 0);
    if (!t.valid || end > t.snd_nxt) t.snd_nxt = end;
    if (tcp.has(kTcpAck)) t.rcv_nxt = tcp.ack;
    if (tcp.options.timestamp) t.ts_val = tcp.options.timestamp->first;
    t.valid = true;
  }
  uint16_t mtu() const override { return 1500; }
  MacAddress mac() const override { return kOurMac; }

  Track& track_for(uint16_t local_port, uint16_t remote_port) {
    for (Track& t : tracks)
      if (t.valid && t.local_port == local_port && t.remote_port == remote_port) return t;
    Track& slot = tracks[next_slot_++ % tracks.size()];
    slot = Track{local_port, remote_port, 0, 0, 0, false};
    return slot;
  }
  const Track* pick(uint8_t index) const {
    size_t valid = 0;
    for (const Track& t : tracks) valid += t.valid;
    if (valid == 0) return nullptr;
    size_t n = index % valid;
    for (const Track& t : tracks)
      if (t.valid && n-- == 0) return &t;
    return nullptr;
  }

  std::array<Track, kMaxTracks> tracks{};

 private:
  size_t next_slot_ = 0;
};

Packet frame_of(const std::vector<uint8_t>& bytes) {
  Packet packet;
  packet.data.append_copy(bytes.data(), bytes.size());
  return packet;
}

std::vector<uint8_t> ethernet(uint16_t type, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> frame(EthernetHeader::kLength + payload.size());
  EthernetHeader{kOurMac, kPeerMac, type}.emit(frame.data());
  std::copy(payload.begin(), payload.end(), frame.begin() + EthernetHeader::kLength);
  return frame;
}

// An IPv4 datagram from the peer, whole or cut into fragments the fuzzer chooses (RFC 791 §3.2:
// offsets in 8-byte units; the last fragment clears MF). Fragments may overlap or go missing.
void send_ipv4(InetStack& stack, Input& in, uint8_t protocol, const std::vector<uint8_t>& l4) {
  const uint8_t how = in.u8();
  Ipv4Header ip;
  ip.protocol = protocol;
  ip.source = kPeerIp;
  ip.destination = (how & 0x80) ? Ipv4Address::from_octets(10, 0, 0, in.u8()) : kOurIp;
  ip.identification = in.u16();
  ip.ttl = static_cast<uint8_t>(1 + (how & 0x3f));
  const bool fragment = (how & 0x40) && l4.size() > 8;
  if (!fragment) {
    ip.total_length = static_cast<uint16_t>(Ipv4Header::kMinLength + l4.size());
    std::vector<uint8_t> datagram(ip.total_length);
    ip.emit(datagram.data(), true);
    std::copy(l4.begin(), l4.end(), datagram.begin() + Ipv4Header::kMinLength);
    stack.receive(frame_of(ethernet(static_cast<uint16_t>(EtherType::Ipv4), datagram)));
    return;
  }
  const int pieces = 2 + in.u8() % 3;
  for (int i = 0; i < pieces; ++i) {
    size_t offset = (in.u8() * 8u) % ((l4.size() + 7) & ~size_t{7});
    if (i == 0) offset = (in.u8() & 1) ? 0 : offset;
    offset &= ~size_t{7};
    if (offset >= l4.size()) offset = 0;
    size_t length = std::min<size_t>(l4.size() - offset, 8u * (1 + in.u8() % 32));
    const bool last = offset + length >= l4.size();
    if (!last) length &= ~size_t{7};
    if (length == 0) length = std::min<size_t>(8, l4.size() - offset);
    Ipv4Header piece = ip;
    piece.flags_fragment = static_cast<uint16_t>((last && !(in.u8() & 0x10) ? 0 : Ipv4Header::kFlagMoreFragments) |
                                                 (offset / 8));
    piece.total_length = static_cast<uint16_t>(Ipv4Header::kMinLength + length);
    std::vector<uint8_t> datagram(piece.total_length);
    piece.emit(datagram.data(), true);
    std::copy(l4.begin() + static_cast<long>(offset), l4.begin() + static_cast<long>(offset + length),
              datagram.begin() + Ipv4Header::kMinLength);
    stack.receive(frame_of(ethernet(static_cast<uint16_t>(EtherType::Ipv4), datagram)));
  }
}

// A TCP segment from the peer with the fields the fuzzer picks, sequence numbers near what the
// stack expects when it says so, and a correct checksum unless it says otherwise.
void send_tcp(InetStack& stack, CaptureDevice& device, Input& in) {
  const uint8_t target = in.u8();
  const Track* track = (target & 3) == 0 ? device.pick(in.u8()) : nullptr;
  TcpHeader h;
  if (track != nullptr) {
    h.source_port = track->remote_port;
    h.destination_port = track->local_port;
  } else if ((target & 3) == 3) {
    h.source_port = in.u16();
    h.destination_port = in.u16();
  } else {
    h.source_port = static_cast<uint16_t>(1000 + (target >> 2) % 4);
    h.destination_port = (target & 0x40) ? kListenPort + 1 : kListenPort;
  }
  h.flags = in.u8();
  const uint8_t numbering = in.u8();
  const auto delta = static_cast<int32_t>(static_cast<int8_t>(in.u8())) * ((numbering & 0x40) ? 1000 : 1);
  const SeqNumber expected_seq = track ? track->rcv_nxt : SeqNumber(1000);
  const SeqNumber expected_ack = track ? track->snd_nxt : SeqNumber(0);
  switch (numbering & 3) {
    case 0: h.seq = expected_seq + static_cast<uint32_t>(delta); break;
    case 1: h.seq = in.u32(); break;
    case 2: h.seq = expected_seq - 65536u + static_cast<uint32_t>(delta); break;
    default: h.seq = expected_seq; break;
  }
  switch ((numbering >> 2) & 3) {
    case 0: h.ack = expected_ack + static_cast<uint32_t>(delta); break;
    case 1: h.ack = in.u32(); break;
    case 2: h.ack = expected_ack - 1; break;
    default: h.ack = expected_ack; break;
  }
  h.window = in.u16();
  const uint8_t options = in.u8();
  if (options & 0x01) h.options.mss = in.u16();
  if (options & 0x02) h.options.window_scale = in.u8();
  if (options & 0x04) h.options.sack_permitted = true;
  if (options & 0x08) h.options.timestamp = std::make_pair(in.u32(), track ? track->ts_val : in.u32());
  if ((options & 0x10) && !h.options.mss && !h.options.window_scale) {
    h.options.sack_count = static_cast<uint8_t>(1 + in.u8() % (h.options.timestamp ? 3 : 4));
    for (uint8_t i = 0; i < h.options.sack_count; ++i) {
      const SeqNumber left = expected_ack - static_cast<uint32_t>(in.u16());
      h.options.sack_blocks[i] = {left, left + in.u16()};
    }
  }
  const size_t payload_length = (options & 0x20) ? in.u16() % 1461 : in.u8() % 64;
  std::vector<uint8_t> segment(h.emitted_length() + payload_length);
  h.emit(segment.data());
  for (size_t i = 0; i < payload_length; ++i)
    segment[h.emitted_length() + i] = static_cast<uint8_t>((h.seq + i).raw());
  if (!(options & 0x40)) {
    BufferList bytes;
    bytes.append_copy(segment.data(), segment.size());
    store_be16(segment.data() + 16, tcp_checksum(kPeerIp, kOurIp, bytes));
  }
  send_ipv4(stack, in, 6, segment);
}

void send_arp(InetStack& stack, Input& in) {
  const uint8_t how = in.u8();
  ArpPacket arp;
  arp.operation = (how & 1) ? ArpPacket::kReply : ArpPacket::kRequest;
  arp.sender_mac = (how & 2) ? MacAddress{{0x02, 0, 0, 0, 0, in.u8()}} : kPeerMac;
  arp.sender_ip = (how & 4) ? Ipv4Address::from_octets(10, 0, 0, in.u8()) : kPeerIp;
  arp.target_mac = (how & 8) ? kOurMac : MacAddress{};
  arp.target_ip = (how & 16) ? Ipv4Address::from_octets(10, 0, 0, in.u8()) : kOurIp;
  std::vector<uint8_t> body(ArpPacket::kLength);
  arp.emit(body.data());
  if (how & 32) body.resize(in.u8() % ArpPacket::kLength);  // truncated
  stack.receive(frame_of(ethernet(static_cast<uint16_t>(EtherType::Arp), body)));
}

// Echo requests, and errors quoting one of the stack's own connections (RFC 1191 path MTU,
// RFC 5927 §4.1: a quoted sequence number must be checked before the error is believed).
void send_icmp(InetStack& stack, CaptureDevice& device, Input& in) {
  const uint8_t how = in.u8();
  IcmpHeader icmp;
  BufferList body;
  if ((how & 3) == 0) {
    icmp.type = IcmpHeader::kEchoRequest;
    icmp.rest = in.u32();
    const auto data = in.bytes(in.u8());
    body.append_copy(data.data(), data.size());
  } else {
    icmp.type = (how & 3) == 1 ? uint8_t{IcmpHeader::kDestinationUnreachable} : in.u8();
    icmp.code = (how & 4) ? uint8_t{IcmpHeader::kFragmentationNeeded} : static_cast<uint8_t>(in.u8() % 16);
    icmp.rest = in.u16();
    const Track* track = device.pick(in.u8());
    Ipv4Header quoted;
    quoted.protocol = (how & 8) ? static_cast<uint8_t>(in.u8()) : 6;
    quoted.source = kOurIp;
    quoted.destination = kPeerIp;
    quoted.total_length = 40;
    std::vector<uint8_t> q(Ipv4Header::kMinLength + 8);
    quoted.emit(q.data(), true);
    store_be16(q.data() + 20, track ? track->local_port : in.u16());
    store_be16(q.data() + 22, track ? track->remote_port : in.u16());
    store_be32(q.data() + 24, track ? (track->snd_nxt - (in.u8() & 1)).raw() : in.u32());
    if (how & 16) q.resize(in.u8() % q.size());
    body.append_copy(q.data(), q.size());
  }
  std::vector<uint8_t> message(IcmpHeader::kLength + body.length());
  icmp.emit(message.data(), body);
  body.copy_out(0, body.length(), message.data() + IcmpHeader::kLength);
  send_ipv4(stack, in, 1, message);
}

// The application's side: sockets it accepted or opened, used the way a program would.
struct Application {
  std::shared_ptr<TcpListener> listener;
  std::vector<std::shared_ptr<TcpConnection>> connections;
  uint64_t received = 0;

  void act(InetStack& stack, Input& in, uint8_t op) {
    switch (op) {
      case 0: {  // active open to the peer
        if (connections.size() >= kMaxConnections) return;
        if (auto c = stack.tcp().connect(kPeerIp, static_cast<uint16_t>(1 + in.u8() % 4)))
          connections.push_back(std::move(c));
        return;
      }
      case 1: {
        if (listener && connections.size() < kMaxConnections)
          if (auto c = listener->accept()) connections.push_back(std::move(c));
        return;
      }
      case 2: {
        if (listener) {
          stack.tcp().stop_listening(listener);
          listener.reset();
        } else {
          listener = stack.tcp().listen(kListenPort);
        }
        return;
      }
      default: break;
    }
    if (connections.empty()) return;
    const size_t index = in.u8() % connections.size();
    TcpConnection& c = *connections[index];
    switch (in.u8() % 7) {
      case 0: {
        BufferList data;
        const size_t n = in.u16() % 70000;
        std::vector<char> bytes(n, static_cast<char>(n));
        data.append_copy(bytes.data(), bytes.size());
        c.send(data);
        break;
      }
      case 1: received += c.read().length(); break;
      case 2: c.shutdown_write(); break;
      case 3: c.close(); break;
      case 4: c.abort(); break;
      case 5: c.set_nagle(!c.nagle()); break;
      default: received += c.read(in.u8()).length(); break;  // a partial read
    }
  }
};

void advance(VirtualTimerService& timers, Input& in) {
  static constexpr Duration kScales[] = {1ms, 20ms, 1s, 60s};
  const uint8_t how = in.u8();
  timers.advance(kScales[how & 3] * (1 + (how >> 2)));
}

[[noreturn]] void oracle_failed(const char* what, InetStack& stack) {
  std::fprintf(stderr, "inet fuzz oracle: %s\n", what);
  // The whole send and receive state, with which timers are pending: enough to see why it stayed.
  stack.tcp().for_each_connection(
      [](const TcpConnection& c) { std::fprintf(stderr, "  %s\n", c.describe().c_str()); });
  std::abort();
}

}  // namespace

void run_stack(const uint8_t* data, size_t size) {
  Input in(data, size);
  const uint8_t setup = in.u8();
  InetSettings settings;
  settings.address = kOurIp;
  // IPv6 on too, so raw frames (operation 0) reach Neighbor Discovery, ICMPv6 and reassembly, and
  // the timer oracle below covers their timers.
  settings.ipv6.address = Ipv6Address{{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};
  settings.ipv6.reassembly_max_datagrams = 4;
  settings.ipv6.reassembly_max_bytes = 64 << 10;
  settings.arp_pending_total = 64;
  settings.ip_reassembly_max_datagrams = 4;
  settings.ip_reassembly_max_bytes = 64 << 10;
  settings.tcp.rcv_buffer = 64 << 10;
  settings.tcp.snd_buffer = 64 << 10;
  settings.tcp.syn_backlog = 4;
  settings.tcp.accept_backlog = 4;
  settings.tcp.syn_cookies = setup & 1;
  settings.tcp.sack = !(setup & 2);
  settings.tcp.timestamps = !(setup & 4);
  settings.tcp.window_scale = !(setup & 8);
  settings.tcp.delayed_ack = !(setup & 16);
  settings.tcp.keepalive = setup & 32;
  settings.tcp.keepalive_idle = 10s;
  settings.tcp.congestion = (setup & 64) ? CongestionAlgorithm::Cubic : CongestionAlgorithm::NewReno;

  // INET_FUZZ_TRACE=1: one line per operation with every connection's state, to read a finding.
  static const bool trace = std::getenv("INET_FUZZ_TRACE") != nullptr;
  VirtualTimerService timers;
  CaptureDevice device;
  auto stack = std::make_unique<InetStack>(settings, device, timers, 0x5eed);
  stack->start();
  Application app;
  app.listener = stack->tcp().listen(kListenPort);
  if (!(setup & 128)) {  // the peer announces itself, so replies need no ARP round trip
    ArpPacket hello{ArpPacket::kReply, kPeerMac, kPeerIp, kOurMac, kOurIp};
    std::vector<uint8_t> body(ArpPacket::kLength);
    hello.emit(body.data());
    stack->receive(frame_of(ethernet(static_cast<uint16_t>(EtherType::Arp), body)));
  }

  // Consecutive op-2 segments arrive in one receive burst, where TCP may coalesce them (tcp_gro.h);
  // any other operation ends the burst first, as timers and the application run between polls.
  bool in_burst = false;
  for (size_t op = 0; op < kMaxOperations && !in.done(); ++op) {
    const uint8_t code = in.u8();
    if (in_burst && code % 8 != 2) {
      stack->end_burst();
      in_burst = false;
    }
    switch (code % 8) {
      case 0: {  // raw bytes as an Ethernet frame
        const auto bytes = in.bytes(in.u16() % 1600);
        stack->receive(frame_of(bytes));
        break;
      }
      case 1: send_tcp(*stack, device, in); break;
      case 2:
        if (!in_burst) stack->begin_burst();
        in_burst = true;
        send_tcp(*stack, device, in);
        break;
      case 3: {  // an IPv4 datagram with any protocol and payload
        const uint8_t protocol = in.u8();
        send_ipv4(*stack, in, protocol, in.bytes(in.u8()));
        break;
      }
      case 4: send_icmp(*stack, device, in); break;
      case 5: send_arp(*stack, in); break;
      case 6: advance(timers, in); break;
      default: app.act(*stack, in, static_cast<uint8_t>(code >> 3)); break;
    }
    if (trace) {
      std::fprintf(stderr, "op %zu: code %u (%u)\n", op, code, code % 8);
      stack->tcp().for_each_connection(
          [](const TcpConnection& c) { std::fprintf(stderr, "  %s\n", c.describe().c_str()); });
    }
  }
  if (in_burst) stack->end_burst();

  // The application closes everything and the peer goes silent. Every connection must then end
  // within RFC 9293's bounds: retransmissions give up (tcp.max_retransmissions with RTOs capped at
  // rto_max), TIME-WAIT lasts 2*MSL, and an orphaned FIN-WAIT-2 must not wait for a FIN forever.
  if (app.listener) stack->tcp().stop_listening(app.listener);
  for (auto& c : app.connections) c->close();
  app.connections.clear();
  for (int minute = 0; minute < 40 && stack->tcp().connection_count() != 0; ++minute) timers.advance(60s);
  if (stack->tcp().connection_count() != 0) oracle_failed("connections outlived 40 minutes of silence", *stack);
  stack.reset();
  if (timers.pending() != 0) {
    std::fprintf(stderr, "inet fuzz oracle: %zu timers still pending after the stack was destroyed\n",
                 timers.pending());
    std::abort();
  }
}

}  // namespace bypass::inet::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    bypass::log::set_threshold(bypass::log::Level::Error);
    return true;
  }();
  (void)quiet;
  bypass::inet::fuzz::run_stack(data, size);
  return 0;
}
