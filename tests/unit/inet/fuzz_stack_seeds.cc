// Seed programs for the inet stack fuzzer: each spells, in the harness's operand order
// (fuzz_stack.cc), a scenario that reaches a deep state, so mutations start from there.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "stack/inet/wire/ethernet.h"
#include "stack/inet/wire/icmpv6.h"
#include "stack/inet/wire/ipv6.h"
#include "stack/inet/wire/tcp.h"
#include "tests/unit/inet/fuzz_stack.h"

namespace bypass::inet::fuzz {

namespace {

// Operation codes (low three bits) as fuzz_stack.cc reads them.
enum Op : uint8_t { kRaw = 0, kTcp = 1, kTcpInBurst = 2, kIpv4 = 3, kIcmp = 4, kArp = 5, kAdvance = 6, kApp = 7 };
enum AppOp : uint8_t { kConnect = 0, kAccept = 1, kToggleListener = 2, kOnConnection = 3 };
enum ConnectionAction : uint8_t { kSend = 0, kRead = 1, kShutdown = 2, kClose = 3, kAbort = 4 };
constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10;

class Program {
 public:
  explicit Program(uint8_t setup) { u8(setup); }
  Program& u8(uint8_t v) { bytes_.push_back(static_cast<char>(v)); return *this; }
  Program& u16(uint16_t v) { return u8(static_cast<uint8_t>(v >> 8)).u8(static_cast<uint8_t>(v)); }
  Program& u32(uint32_t v) { return u16(static_cast<uint16_t>(v >> 16)).u16(static_cast<uint16_t>(v)); }

  // A SYN to the listener (from peer port 1000, or `source_port`), with MSS, window scale,
  // SACK-permitted and timestamps.
  Program& syn_to_listener(uint16_t source_port = 0) {
    if (source_port == 0) {
      u8(kTcp).u8(1);
    } else {
      u8(kTcp).u8(3).u16(source_port).u16(80);
    }
    u8(kSyn).u8(0x0f).u8(0).u16(65535);
    u8(0x0f).u16(1460).u8(7).u32(100).u32(0);  // options, then payload length 0
    return u8(0).ip();
  }
  // A segment on the stack's connection `track` with the sequence and acknowledgement numbers it
  // expects (numbering 0x0f), no options; `payload` bytes (< 1461). With `op` kTcpInBurst it
  // joins the receive burst of the kTcpInBurst segments right before it.
  Program& segment(uint8_t track, uint8_t flags, uint16_t payload = 0, uint16_t window = 65535,
                   uint8_t numbering = 0x0f, int8_t delta = 0, Op op = kTcp) {
    u8(op).u8(0).u8(track).u8(flags).u8(numbering).u8(static_cast<uint8_t>(delta)).u16(window);
    if (payload < 64) {
      u8(0).u8(static_cast<uint8_t>(payload));
    } else {
      u8(0x20).u16(payload);
    }
    return ip();
  }
  // The same with a timestamp and SACK blocks below the stack's snd_nxt.
  Program& sack(uint8_t track, uint16_t hole_from_end, uint16_t block) {
    u8(kTcp).u8(0).u8(track).u8(kAck).u8(0x0f).u8(0).u16(65535);
    u8(0x18).u32(200).u8(0).u16(hole_from_end).u16(block).u8(0);  // ts, 1 SACK block, no payload
    return ip();
  }
  // A SYN-ACK answering the stack's own SYN (connection `track`): any ISN, ack = its ISN + 1.
  Program& syn_ack(uint8_t track, uint32_t isn) {
    u8(kTcp).u8(0).u8(track).u8(kSyn | kAck).u8(0x0d).u8(0).u32(isn).u16(65535);
    u8(0x0f).u16(1460).u8(7).u32(300).u8(0);
    return ip();
  }
  Program& app(AppOp op) { return u8(static_cast<uint8_t>(kApp | op << 3)); }
  Program& on_connection(uint8_t index, ConnectionAction action, uint16_t send_bytes = 0) {
    app(kOnConnection).u8(index).u8(action);
    return action == kSend ? u16(send_bytes) : *this;
  }
  // Advance virtual time: scale 0..3 = 1 ms, 20 ms, 1 s, 60 s; times 1..64.
  Program& advance(uint8_t scale, uint8_t times) { return u8(kAdvance).u8(static_cast<uint8_t>(scale | (times - 1) << 2)); }
  Program& arp(uint8_t how) { return u8(kArp).u8(how); }
  Program& raw(const std::string& bytes) {
    u8(kRaw).u16(static_cast<uint16_t>(bytes.size()));
    bytes_ += bytes;
    return *this;
  }
  // An ICMP echo request of `length` bytes cut into three fragments.
  Program& fragmented_ping(uint8_t length) {
    u8(kIcmp).u8(0).u32(0x00010001).u8(length);
    for (uint8_t i = 0; i < length; ++i) u8(i);
    return u8(0x40).u16(77).u8(1).u8(0).u8(1).u8(2).u8(0).u8(2).u8(0).u8(4).u8(0).u8(0);
  }
  std::string take() { return bytes_; }

 private:
  Program& ip() { return u8(0).u16(1); }  // not fragmented, identification 1
  std::string bytes_;
};

// IPv6 frames for raw operations: the harness's stack has 2001:db8::1 at 02:00:00:00:00:01, the
// peer is 2001:db8::2 at 02:00:00:00:00:02 (fuzz_stack.cc).
const Ipv6Address kOurIpv6{{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};
const Ipv6Address kPeerIpv6{{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}};
const MacAddress kOurMacAddress{{0x02, 0, 0, 0, 0, 0x01}};
const MacAddress kPeerMacAddress{{0x02, 0, 0, 0, 0, 0x02}};

std::string ipv6_frame(const MacAddress& eth_to, const Ipv6Address& to, uint8_t next_header, const std::string& payload,
                       uint8_t hop_limit = 64) {
  std::string frame(EthernetHeader::kLength + Ipv6Header::kLength, '\0');
  auto* bytes = reinterpret_cast<uint8_t*>(frame.data());
  EthernetHeader{eth_to, kPeerMacAddress, static_cast<uint16_t>(EtherType::Ipv6)}.emit(bytes);
  Ipv6Header ip;
  ip.payload_length = static_cast<uint16_t>(payload.size());
  ip.next_header = next_header;
  ip.hop_limit = hop_limit;
  ip.source = kPeerIpv6;
  ip.destination = to;
  ip.emit(bytes + EthernetHeader::kLength);
  return frame + payload;
}

std::string icmpv6_message(const Ipv6Address& to, uint8_t type, uint32_t rest, const std::string& body) {
  BufferList b;
  b.append_copy(body);
  std::string message(Icmpv6Header::kLength, '\0');
  Icmpv6Header{type, 0, 0, rest}.emit(reinterpret_cast<uint8_t*>(message.data()), kPeerIpv6, to, b);
  return message + body;
}

// A TCP segment from the peer's IPv6 address to ours with a correct checksum (RFC 8200 §8.1).
std::string tcp6_segment(uint16_t source_port, uint16_t destination_port, uint32_t seq, uint8_t flags,
                         bool syn_options) {
  TcpHeader h;
  h.source_port = source_port;
  h.destination_port = destination_port;
  h.seq = seq;
  h.flags = flags;
  h.window = 65535;
  if (syn_options) {
    h.options.mss = 1440;
    h.options.window_scale = 7;
    h.options.sack_permitted = true;
    h.options.timestamp = std::make_pair(100u, 0u);
  }
  std::string segment(h.emitted_length(), '\0');
  auto* bytes = reinterpret_cast<uint8_t*>(segment.data());
  h.emit(bytes);
  BufferList b;
  b.append_copy(segment);
  store_be16(bytes + 16, tcp_checksum(kPeerIpv6, kOurIpv6, b));
  return segment;
}

std::string fragment_header(uint16_t offset, bool more, uint32_t id) {
  std::string header(Ipv6FragmentHeader::kLength, '\0');
  Ipv6FragmentHeader f;
  f.next_header = kIpv6Icmpv6;
  f.offset_bytes = offset;
  f.more_fragments = more;
  f.identification = id;
  f.emit(reinterpret_cast<uint8_t*>(header.data()));
  return header;
}

}  // namespace

std::vector<testing::FuzzSeed> make_seeds() {
  std::vector<testing::FuzzSeed> seeds;
  {  // passive open, data both ways, close from both ends, TIME-WAIT
    Program p(0);
    p.syn_to_listener().segment(0, kAck).app(kAccept);
    p.segment(0, kPsh | kAck, 100).on_connection(0, kRead).on_connection(0, kSend, 3000);
    p.advance(1, 2).segment(0, kAck).on_connection(0, kClose).segment(0, kFin | kAck).advance(2, 5);
    seeds.push_back({"passive-open-data-close", p.take()});
  }
  {  // a receive burst of consecutive data segments, coalesced (tcp_gro.h), a PSH ending the unit
    Program p(0);
    p.syn_to_listener().segment(0, kAck).app(kAccept);
    // numbering 0x4c: seq = the expected one + delta * 1000, ack = the expected one.
    for (int8_t i = 0; i < 4; ++i) p.segment(0, kAck, 1000, 65535, 0x4c, i, kTcpInBurst);
    p.segment(0, kPsh | kAck, 1000, 65535, 0x4c, 4, kTcpInBurst).segment(0, kAck, 1000, 65535, 0x4c, 6, kTcpInBurst);
    p.on_connection(0, kRead).advance(1, 3).segment(0, kFin | kAck).on_connection(0, kClose).advance(2, 5);
    seeds.push_back({"burst-coalesced", p.take()});
  }
  {  // active open, the peer's data out of order, then a window closing to zero and reopening
    Program p(0);
    p.app(kConnect).u8(0).syn_ack(0, 5000).segment(0, kAck, 500, 65535, 0x0c, 100);
    p.segment(0, kPsh | kAck, 200).on_connection(0, kSend, 60000).segment(0, kAck, 0, 0);
    p.advance(2, 3).segment(0, kAck, 0, 65535).advance(1, 5).on_connection(0, kShutdown);
    p.segment(0, kFin | kAck).advance(3, 3);
    seeds.push_back({"active-open-reorder-zero-window", p.take()});
  }
  {  // loss: the stack's data goes unacknowledged until RTOs fire, then SACK fills the holes
    Program p(0);
    p.syn_to_listener().segment(0, kAck).app(kAccept).on_connection(0, kSend, 20000);
    p.sack(0, 8000, 2000).sack(0, 4000, 1000).advance(2, 2).advance(2, 4).segment(0, kAck);
    p.on_connection(0, kAbort);
    seeds.push_back({"loss-sack-rto-abort", p.take()});
  }
  {  // SYN flood against a full backlog with SYN cookies, then RSTs
    Program p(1);
    for (int i = 0; i < 8; ++i) p.syn_to_listener(static_cast<uint16_t>(1000 + i));
    p.segment(0, kAck).segment(1, kRst).app(kAccept).app(kToggleListener).advance(2, 8);
    seeds.push_back({"syn-flood-cookies", p.take()});
  }
  {  // fragments, ARP in every form, raw garbage
    Program p(0x80);
    p.arp(0).arp(1).arp(0x1f).arp(0x20).fragmented_ping(120).raw(std::string(60, '\xff'));
    p.raw(std::string("\x02\0\0\0\0\x01\x02\0\0\0\0\x02\x08\x00\x45\x00\x00\x14", 18)).advance(3, 2);
    seeds.push_back({"arp-fragments-garbage", p.take()});
  }
  {  // keepalive on an idle connection the peer stops answering
    Program p(32);
    p.syn_to_listener().segment(0, kAck).app(kAccept).advance(3, 2).segment(0, kAck).advance(3, 20);
    seeds.push_back({"keepalive-dead-peer", p.take()});
  }
  {  // IPv6: a solicitation for our address, an echo request, one in fragments, an orphan first
     // fragment left to time out, and a Packet Too Big; after a second, when Duplicate Address
     // Detection (RFC 4862 §5.4) has made our addresses usable
    Program p(0x80);
    p.advance(2, 1);
    const Ipv6Address group = kOurIpv6.solicited_node_multicast();
    NeighborSolicitation ns;
    ns.target = kOurIpv6;
    ns.options.source_link_layer = kPeerMacAddress;
    std::string solicitation(ns.emitted_length(), '\0');
    ns.emit(reinterpret_cast<uint8_t*>(solicitation.data()), kPeerIpv6, group);
    p.raw(ipv6_frame(group.multicast_mac(), group, kIpv6Icmpv6, solicitation, 255));
    const std::string echo = icmpv6_message(kOurIpv6, Icmpv6Header::kEchoRequest, 0x00070001, std::string(64, 'x'));
    p.raw(ipv6_frame(kOurMacAddress, kOurIpv6, kIpv6Icmpv6, echo));
    p.raw(ipv6_frame(kOurMacAddress, kOurIpv6, kIpv6Fragment, fragment_header(32, false, 9) + echo.substr(32)));
    p.raw(ipv6_frame(kOurMacAddress, kOurIpv6, kIpv6Fragment, fragment_header(0, true, 9) + echo.substr(0, 32)));
    p.raw(ipv6_frame(kOurMacAddress, kOurIpv6, kIpv6Fragment, fragment_header(0, true, 10) + echo.substr(0, 32)));
    std::string quoted = ipv6_frame(kPeerMacAddress, kPeerIpv6, kIpv6Tcp, std::string(48, '\0')).substr(EthernetHeader::kLength);
    quoted.replace(8, Ipv6Address::kLength, std::string(kOurIpv6.bytes.begin(), kOurIpv6.bytes.end()));
    p.raw(ipv6_frame(kOurMacAddress, kOurIpv6, kIpv6Icmpv6, icmpv6_message(kOurIpv6, Icmpv6Header::kPacketTooBig, 1300, quoted)));
    p.advance(3, 2);
    seeds.push_back({"ipv6-nd-echo-fragments", p.take()});
  }
  {  // TCP over IPv6: a SYN with every option to the listener (answered with a SYN-ACK once ND
     // resolves the peer), a SYN to a closed port (answered with a RST), and a SYN whose
     // checksum is wrong (dropped); after Duplicate Address Detection has made our address usable
    Program p(0x80);
    p.advance(2, 1);
    const Ipv6Address group = kOurIpv6.solicited_node_multicast();
    NeighborSolicitation ns;
    ns.target = kOurIpv6;
    ns.options.source_link_layer = kPeerMacAddress;
    std::string solicitation(ns.emitted_length(), '\0');
    ns.emit(reinterpret_cast<uint8_t*>(solicitation.data()), kPeerIpv6, group);
    p.raw(ipv6_frame(group.multicast_mac(), group, kIpv6Icmpv6, solicitation, 255));
    p.raw(ipv6_frame(kOurMacAddress, kOurIpv6, kIpv6Tcp, tcp6_segment(1000, 80, 7000, kSyn, true)));
    p.raw(ipv6_frame(kOurMacAddress, kOurIpv6, kIpv6Tcp, tcp6_segment(1001, 81, 9000, kSyn, false)));
    std::string bad = tcp6_segment(1002, 80, 11000, kSyn, true);
    bad[4] ^= 1;
    p.raw(ipv6_frame(kOurMacAddress, kOurIpv6, kIpv6Tcp, bad));
    p.advance(3, 2);
    seeds.push_back({"ipv6-tcp-syn", p.take()});
  }
  {  // IPv6 Duplicate Address Detection: an echo request to the tentative address (dropped), then
     // another node's probe for it from :: (RFC 4862 §5.4.3), so it ends duplicated
    Program p(0x80);
    const std::string echo = icmpv6_message(kOurIpv6, Icmpv6Header::kEchoRequest, 0x00070001, std::string(8, 'x'));
    p.raw(ipv6_frame(kOurMacAddress, kOurIpv6, kIpv6Icmpv6, echo));
    const Ipv6Address group = kOurIpv6.solicited_node_multicast();
    NeighborSolicitation probe;
    probe.target = kOurIpv6;
    std::string solicitation(probe.emitted_length(), '\0');
    probe.emit(reinterpret_cast<uint8_t*>(solicitation.data()), Ipv6Address{}, group);
    std::string frame = ipv6_frame(group.multicast_mac(), group, kIpv6Icmpv6, solicitation, 255);
    std::fill_n(frame.begin() + EthernetHeader::kLength + 8, Ipv6Address::kLength, '\0');  // from ::
    p.raw(frame).advance(2, 2);
    seeds.push_back({"ipv6-dad-duplicate", p.take()});
  }
  return seeds;
}

}  // namespace bypass::inet::fuzz
