// IPv6 groundwork: Ipv6Address, the IPv6 header and extension-header walk, the IPv6 pseudo-header
// checksum, ICMPv6 and Neighbor Discovery. Round trips, every rejection with its text, and packets
// whose checksums were computed by hand (an independent RFC 1071 sum over the RFC 8200 §8.1
// pseudo-header, in Python) so the code is held to bytes it did not produce.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "stack/inet/wire/checksum.h"
#include "stack/inet/wire/icmpv6.h"
#include "stack/inet/wire/ipv6.h"
#include "stack/inet/wire/tcp.h"

namespace bypass::inet {
namespace {

Ipv6Address addr(const char* text) {
  auto a = Ipv6Address::from_string(text);
  EXPECT_TRUE(a.has_value()) << text;
  return a.value_or(Ipv6Address{});
}

BufferList list_of(const std::vector<uint8_t>& bytes) {
  BufferList l;
  l.append(BufferSegment::copy_of(bytes.data(), bytes.size()));
  return l;
}

TEST(Ipv6Address, TextRoundTripAndRejects) {
  const Ipv6Address a = addr("2001:DB8:0:0:0::1");
  EXPECT_EQ(a.bytes[0], 0x20);
  EXPECT_EQ(a.bytes[1], 0x01);
  EXPECT_EQ(a.bytes[2], 0x0d);
  EXPECT_EQ(a.bytes[3], 0xb8);
  EXPECT_EQ(a.bytes[15], 1);
  EXPECT_EQ(a.to_string(), "2001:db8::1");  // RFC 5952 canonical form
  EXPECT_EQ(addr("::").to_string(), "::");
  EXPECT_EQ(addr("::ffff:192.0.2.1").to_string(), "::ffff:192.0.2.1");
  for (const char* bad : {"", "1.2.3.4", "[::1]", "fe80::1%eth0", "2001:db8::1::2", "12345::", ":::",
                          "0000:0000:0000:0000:0000:0000:0000:0000:0000:0001"}) {
    EXPECT_FALSE(Ipv6Address::from_string(bad).has_value()) << bad;
  }
  const std::string padded(100, 'a');  // longer than any address text: refused before inet_pton
  EXPECT_FALSE(Ipv6Address::from_string(padded).has_value());
  EXPECT_EQ(Ipv6Address::from_string(std::string_view("::1x", 3)), addr("::1"));  // the view's length, not a NUL
}

TEST(Ipv6Address, Classification) {
  EXPECT_TRUE(Ipv6Address{}.is_unspecified());
  EXPECT_FALSE(addr("::1").is_unspecified());
  EXPECT_TRUE(addr("::1").is_loopback());
  EXPECT_FALSE(addr("::2").is_loopback());
  EXPECT_FALSE(Ipv6Address{}.is_loopback());
  EXPECT_TRUE(addr("ff02::1").is_multicast());
  EXPECT_TRUE(addr("ff05::1:3").is_multicast());
  EXPECT_FALSE(addr("fe80::1").is_multicast());
  EXPECT_TRUE(addr("fe80::1").is_link_local_unicast());
  EXPECT_TRUE(addr("febf:ffff::1").is_link_local_unicast());  // still inside fe80::/10
  EXPECT_FALSE(addr("fec0::1").is_link_local_unicast());
  EXPECT_FALSE(addr("ff02::1").is_link_local_unicast());
  EXPECT_FALSE(addr("2001:db8::1").is_link_local_unicast());
  EXPECT_EQ(Ipv6Address::all_nodes(), addr("ff02::1"));
  EXPECT_EQ(Ipv6Address::all_routers(), addr("ff02::2"));
}

TEST(Ipv6Address, SolicitedNodeAndMulticastMac) {
  // RFC 4291 §2.7.1: the low 24 bits appended to ff02::1:ff00:0/104.
  const Ipv6Address sn = addr("2001:db8::aa12:34bb:ccdd").solicited_node_multicast();
  EXPECT_EQ(sn, addr("ff02::1:ffbb:ccdd"));
  EXPECT_TRUE(sn.is_solicited_node_multicast());
  EXPECT_EQ(addr("fe80::200:ff:fe00:2").solicited_node_multicast(), addr("ff02::1:ff00:2"));
  EXPECT_FALSE(addr("ff02::1").is_solicited_node_multicast());
  EXPECT_FALSE(addr("ff02::2:ff00:2").is_solicited_node_multicast());
  // RFC 2464 §7: 33:33 and the last four octets.
  EXPECT_EQ(sn.multicast_mac(), (MacAddress{{0x33, 0x33, 0xff, 0xbb, 0xcc, 0xdd}}));
  EXPECT_EQ(Ipv6Address::all_nodes().multicast_mac(), (MacAddress{{0x33, 0x33, 0, 0, 0, 1}}));
  EXPECT_TRUE(sn.multicast_mac().is_multicast());
}

class Ipv6Wire : public ::testing::Test {
 protected:
  void SetUp() override {
    h.traffic_class = 0xab;
    h.flow_label = 0xbcdef;
    h.payload_length = 8;
    h.next_header = kIpv6Tcp;
    h.hop_limit = 255;
    h.source = addr("2001:db8::1");
    h.destination = addr("2001:db8::2");
    std::memset(buf, 0xee, sizeof(buf));
    h.emit(buf);
  }
  Ipv6Header h;
  uint8_t buf[Ipv6Header::kLength + 8 + 6];  // 6 bytes of link padding past the payload
};

TEST_F(Ipv6Wire, EmitsTheRfc8200Layout) {
  // version 6, traffic class 0xab, flow label 0xbcdef: 0110 1010 1011 1011 1100 ...
  const uint8_t first[8] = {0x6a, 0xbb, 0xcd, 0xef, 0x00, 0x08, kIpv6Tcp, 255};
  EXPECT_EQ(std::memcmp(buf, first, sizeof(first)), 0);
  EXPECT_EQ(std::memcmp(buf + 8, h.source.bytes.data(), 16), 0);
  EXPECT_EQ(std::memcmp(buf + 24, h.destination.bytes.data(), 16), 0);
  EXPECT_EQ(buf[40], 0xee);  // nothing written past the header
}

TEST_F(Ipv6Wire, RoundTrip) {
  Ipv6Header back;
  ASSERT_EQ(Ipv6Header::parse(buf, sizeof(buf), back), nullptr);  // link padding allowed
  EXPECT_EQ(back.traffic_class, 0xab);
  EXPECT_EQ(back.flow_label, 0xbcdefu);
  EXPECT_EQ(back.payload_length, 8);
  EXPECT_EQ(back.next_header, kIpv6Tcp);
  EXPECT_EQ(back.hop_limit, 255);
  EXPECT_EQ(back.source, h.source);
  EXPECT_EQ(back.destination, h.destination);
  ASSERT_EQ(Ipv6Header::parse(buf, 48, back), nullptr);  // exactly the payload
}

TEST_F(Ipv6Wire, RejectsMalformed) {
  Ipv6Header back;
  for (size_t len = 0; len < Ipv6Header::kLength; ++len)
    EXPECT_STREQ(Ipv6Header::parse(buf, len, back), "ipv6: packet shorter than the 40-byte header") << len;
  for (size_t len = Ipv6Header::kLength; len < 48; ++len)
    EXPECT_STREQ(Ipv6Header::parse(buf, len, back), "ipv6: payload length beyond the end of the frame") << len;
  buf[0] = 0x4a;
  EXPECT_STREQ(Ipv6Header::parse(buf, sizeof(buf), back), "ipv6: version is not 6");
  buf[0] = 0x7a;
  EXPECT_STREQ(Ipv6Header::parse(buf, sizeof(buf), back), "ipv6: version is not 6");
}

TEST(Ipv6FragmentWire, RoundTrip) {
  Ipv6FragmentHeader f{kIpv6Tcp, 1448 * 8, true, 0xdeadbeef};
  uint8_t b[Ipv6FragmentHeader::kLength];
  f.emit(b);
  const uint8_t expected[8] = {kIpv6Tcp, 0, 0x2d, 0x41, 0xde, 0xad, 0xbe, 0xef};  // 11584 bytes | M
  EXPECT_EQ(std::memcmp(b, expected, 8), 0);
  Ipv6FragmentHeader back;
  ASSERT_EQ(Ipv6FragmentHeader::parse(b, sizeof(b), back), nullptr);
  EXPECT_EQ(back.next_header, kIpv6Tcp);
  EXPECT_EQ(back.offset_bytes, 1448 * 8);
  EXPECT_TRUE(back.more_fragments);
  EXPECT_EQ(back.identification, 0xdeadbeefu);
  EXPECT_FALSE(back.is_atomic());
  b[1] = 0xff;  // reserved octet and reserved bits: ignored (RFC 8200 §4.5)
  b[3] |= 0x06;
  ASSERT_EQ(Ipv6FragmentHeader::parse(b, sizeof(b), back), nullptr);
  EXPECT_EQ(back.offset_bytes, 1448 * 8);
  EXPECT_TRUE(back.more_fragments);
  for (size_t len = 0; len < 8; ++len)
    EXPECT_STREQ(Ipv6FragmentHeader::parse(b, len, back), "ipv6: fragment header truncated");
  EXPECT_TRUE((Ipv6FragmentHeader{kIpv6Tcp, 0, false, 1}).is_atomic());
}

// A packet: the IPv6 header, then `chain` (extension headers and upper-layer bytes), with the
// first Next Header `first` and the payload length covering `chain`.
struct Chain {
  std::vector<uint8_t> bytes;
  Ipv6Header header;
  Chain(uint8_t first, const std::vector<uint8_t>& chain, const char* destination = "2001:db8::2") {
    header.next_header = first;
    header.payload_length = static_cast<uint16_t>(chain.size());
    header.source = addr("2001:db8::1");
    header.destination = addr(destination);
    bytes.resize(Ipv6Header::kLength);
    header.emit(bytes.data());
    bytes.insert(bytes.end(), chain.begin(), chain.end());
  }
  const char* walk(Ipv6Extensions& out) const { return walk_ipv6_extensions(bytes.data(), bytes.size(), header, out); }
};

// An 8-byte options header (Hop-by-Hop or Destination Options) holding one PadN of 4 bytes.
std::vector<uint8_t> padded_options(uint8_t next) { return {next, 0, 1, 4, 0, 0, 0, 0}; }

TEST(Ipv6Extensions, NoneLeavesTheUpperLayerAt40) {
  Chain c(kIpv6Icmpv6, {128, 0, 0, 0, 0, 0, 0, 0});
  Ipv6Extensions e;
  ASSERT_EQ(c.walk(e), nullptr);
  EXPECT_EQ(e.upper_protocol, kIpv6Icmpv6);
  EXPECT_EQ(e.upper_offset, 40u);
  EXPECT_EQ(e.upper_protocol_field, 6u);  // the fixed header's Next Header
  EXPECT_EQ(e.header_count, 0);
  EXPECT_FALSE(e.has_fragment);
  EXPECT_FALSE(e.has_parameter_problem);
}

TEST(Ipv6Extensions, WalksEveryKnownHeaderToTheUpperLayer) {
  // Hop-by-Hop: Pad1, Router Alert (type 5, action bits 00: skipped) with 2 data bytes, Pad1.
  std::vector<uint8_t> chain = {kIpv6DestinationOptions, 0, 0, 5, 2, 0, 0, 0};
  // Destination Options of 16 bytes (Hdr Ext Len 1): PadN of 12.
  for (uint8_t b : std::vector<uint8_t>{kIpv6Routing, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) chain.push_back(b);
  // Routing type 99, Segments Left 0: ignored (RFC 8200 §4.4).
  for (uint8_t b : std::vector<uint8_t>{kIpv6Fragment, 0, 99, 0, 0, 0, 0, 0}) chain.push_back(b);
  // Atomic fragment (RFC 6946): walked through.
  for (uint8_t b : std::vector<uint8_t>{kIpv6Tcp, 0, 0, 0, 0, 0, 0, 7}) chain.push_back(b);
  for (int i = 0; i < 20; ++i) chain.push_back(0);  // TCP header bytes
  Chain c(kIpv6HopByHop, chain);
  Ipv6Extensions e;
  ASSERT_EQ(c.walk(e), nullptr);
  EXPECT_EQ(e.upper_protocol, kIpv6Tcp);
  EXPECT_EQ(e.upper_offset, 40u + 8 + 16 + 8 + 8);
  EXPECT_EQ(e.upper_protocol_field, 40u + 8 + 16 + 8);  // the atomic Fragment header's first octet
  EXPECT_EQ(e.header_count, 4);
  ASSERT_TRUE(e.has_fragment);
  EXPECT_TRUE(e.fragment.is_atomic());
  EXPECT_EQ(e.fragment.identification, 7u);
  EXPECT_EQ(e.fragment_header_offset, 40u + 8 + 16 + 8);
  EXPECT_FALSE(e.has_parameter_problem);
}

TEST(Ipv6Extensions, StopsAtANonAtomicFragment) {
  std::vector<uint8_t> chain = padded_options(kIpv6Fragment);
  // Fragment at offset 1232 (154 units), more to come, id 0x01020304; then 16 bytes of data.
  for (uint8_t b : std::vector<uint8_t>{kIpv6Tcp, 0, 0x04, 0xd1, 1, 2, 3, 4}) chain.push_back(b);
  for (int i = 0; i < 16; ++i) chain.push_back(static_cast<uint8_t>(i));
  Chain c(kIpv6DestinationOptions, chain);
  Ipv6Extensions e;
  ASSERT_EQ(c.walk(e), nullptr);
  EXPECT_EQ(e.upper_protocol, kIpv6Tcp);
  EXPECT_EQ(e.upper_offset, 56u);
  EXPECT_EQ(e.upper_protocol_field, 48u);
  EXPECT_EQ(e.header_count, 2);
  ASSERT_TRUE(e.has_fragment);
  EXPECT_EQ(e.fragment.offset_bytes, 1232);
  EXPECT_TRUE(e.fragment.more_fragments);
  EXPECT_EQ(e.fragment.identification, 0x01020304u);
  EXPECT_EQ(e.fragment_header_offset, 48u);
  // A last fragment (M clear) at the same offset: also stops there.
  c.bytes[51] = 0xd0;
  ASSERT_EQ(c.walk(e), nullptr);
  EXPECT_FALSE(e.fragment.more_fragments);
  EXPECT_EQ(e.upper_offset, 56u);
}

TEST(Ipv6Extensions, UnknownNextHeaderIsLeftToTheCaller) {
  Chain c(kIpv6DestinationOptions, {kIpv6Esp, 0, 1, 4, 0, 0, 0, 0, 0xaa, 0xbb});
  Ipv6Extensions e;
  ASSERT_EQ(c.walk(e), nullptr);
  EXPECT_EQ(e.upper_protocol, kIpv6Esp);
  EXPECT_EQ(e.upper_offset, 48u);
  // RFC 8200 §4: the Parameter Problem for an unknown Next Header points at the octet naming it.
  EXPECT_EQ(e.upper_protocol_field, 40u);
  Chain none(kIpv6DestinationOptions, padded_options(kIpv6NoNextHeader));
  ASSERT_EQ(none.walk(e), nullptr);
  EXPECT_EQ(e.upper_protocol, kIpv6NoNextHeader);
  EXPECT_EQ(e.upper_offset, 48u);
}

TEST(Ipv6Extensions, HopByHopOnlyFirst) {
  std::vector<uint8_t> chain = padded_options(kIpv6HopByHop);
  auto second = padded_options(kIpv6Tcp);
  chain.insert(chain.end(), second.begin(), second.end());
  Chain c(kIpv6DestinationOptions, chain);
  Ipv6Extensions e;
  EXPECT_STREQ(c.walk(e), "ipv6: hop-by-hop options header not first");
  EXPECT_FALSE(e.has_parameter_problem);
  Chain twice(kIpv6HopByHop, {kIpv6HopByHop, 0, 1, 4, 0, 0, 0, 0, kIpv6Tcp, 0, 1, 4, 0, 0, 0, 0});
  EXPECT_STREQ(twice.walk(e), "ipv6: hop-by-hop options header not first");
}

TEST(Ipv6Extensions, RoutingWithSegmentsLeftAsksForParameterProblem) {
  std::vector<uint8_t> chain = padded_options(kIpv6Routing);
  // Routing type 0 (deprecated, RFC 5095), Hdr Ext Len 2, Segments Left 1.
  std::vector<uint8_t> routing(24, 0);
  routing[0] = kIpv6Tcp;
  routing[1] = 2;
  routing[2] = 0;
  routing[3] = 1;
  chain.insert(chain.end(), routing.begin(), routing.end());
  Chain c(kIpv6HopByHop, chain);
  Ipv6Extensions e;
  EXPECT_STREQ(c.walk(e), "ipv6: routing header of an unrecognized type with segments left");
  ASSERT_TRUE(e.has_parameter_problem);
  EXPECT_EQ(e.parameter_problem.code, Ipv6ParameterProblem::kErroneousHeaderField);
  EXPECT_EQ(e.parameter_problem.pointer, 50u);  // the Routing Type octet: 40 + 8 + 2
  c.bytes[51] = 0;  // Segments Left 0: ignored, walked through
  ASSERT_EQ(c.walk(e), nullptr);
  EXPECT_FALSE(e.has_parameter_problem);
  EXPECT_EQ(e.upper_protocol, kIpv6Tcp);
  EXPECT_EQ(e.upper_offset, 72u);
}

TEST(Ipv6Extensions, OptionActionBits) {
  struct Case {
    uint8_t type;
    const char* destination;
    const char* error;
    bool tell;
  } cases[] = {
      {0x1e, "2001:db8::2", nullptr, false},  // 00: skip
      {0x5e, "2001:db8::2", "ipv6: unrecognized option that asks for a silent discard", false},
      {0x9e, "2001:db8::2", "ipv6: unrecognized option that asks for a discard", true},
      {0x9e, "ff02::1", "ipv6: unrecognized option that asks for a discard", true},  // 10: even to multicast
      {0xde, "2001:db8::2", "ipv6: unrecognized option that asks for a discard", true},
      {0xde, "ff02::1", "ipv6: unrecognized option that asks for a discard", false},  // 11: not to multicast
      {0xc2, "2001:db8::2", "ipv6: unrecognized option that asks for a discard", true},  // Jumbo: unsupported
  };
  for (const Case& k : cases) {
    // Pad1, then the option (2 bytes of data), then Pad1 twice: 8 bytes.
    Chain c(kIpv6HopByHop, {kIpv6Tcp, 0, 0, k.type, 2, 0xaa, 0xbb, 0}, k.destination);
    Ipv6Extensions e;
    const char* error = c.walk(e);
    if (k.error == nullptr) {
      EXPECT_EQ(error, nullptr) << int{k.type};
      EXPECT_EQ(e.upper_protocol, kIpv6Tcp);
    } else {
      EXPECT_STREQ(error, k.error) << int{k.type};
    }
    EXPECT_EQ(e.has_parameter_problem, k.tell) << int{k.type} << " " << k.destination;
    if (k.tell) {
      EXPECT_EQ(e.parameter_problem.code, Ipv6ParameterProblem::kUnrecognizedOption);
      EXPECT_EQ(e.parameter_problem.pointer, 43u);  // 40 + next header, length, Pad1
    }
  }
}

TEST(Ipv6Extensions, MalformedOptions) {
  Ipv6Extensions e;
  // PadN of 5 data bytes where 4 remain.
  Chain past(kIpv6DestinationOptions, {kIpv6Tcp, 0, 1, 5, 0, 0, 0, 0});
  EXPECT_STREQ(past.walk(e), "ipv6: option runs past its header");
  // Five Pad1 then a type with no room for its length byte.
  Chain lengthless(kIpv6DestinationOptions, {kIpv6Tcp, 0, 0, 0, 0, 0, 0, 1});
  EXPECT_STREQ(lengthless.walk(e), "ipv6: option without a length byte");
}

TEST(Ipv6Extensions, FragmentChecks) {
  Ipv6Extensions e;
  // M set, 12 bytes of fragment data: not a multiple of 8 (RFC 8200 §4.5).
  std::vector<uint8_t> odd = {kIpv6Tcp, 0, 0, 1, 0, 0, 0, 9};
  odd.resize(8 + 12);
  Chain c(kIpv6Fragment, odd);
  EXPECT_STREQ(c.walk(e), "ipv6: fragment with M set is not a multiple of 8 bytes");
  ASSERT_TRUE(e.has_parameter_problem);
  EXPECT_EQ(e.parameter_problem.code, 0);
  EXPECT_EQ(e.parameter_problem.pointer, 4u);  // Payload Length
  c.bytes[43] = 0;  // the last fragment may be of any length
  EXPECT_EQ(c.walk(e), nullptr);
  // Offset 65528 + 16 bytes of data: past 65535 (pointer at the Fragment Offset field).
  std::vector<uint8_t> far = {kIpv6Tcp, 0, 0xff, 0xf8, 0, 0, 0, 9};
  far.resize(8 + 16);
  Chain beyond(kIpv6Fragment, far);
  EXPECT_STREQ(beyond.walk(e), "ipv6: fragment extends beyond 65535 bytes");
  ASSERT_TRUE(e.has_parameter_problem);
  EXPECT_EQ(e.parameter_problem.pointer, 42u);
  // Offset 65528 with 7 bytes: reaches 65535 exactly, accepted.
  far.resize(8 + 7);
  Chain edge(kIpv6Fragment, far);
  EXPECT_EQ(edge.walk(e), nullptr);
  // Two Fragment headers (the first atomic, so the walk reaches the second).
  Chain two(kIpv6Fragment, {kIpv6Fragment, 0, 0, 0, 0, 0, 0, 1, kIpv6Tcp, 0, 0, 0, 0, 0, 0, 2});
  EXPECT_STREQ(two.walk(e), "ipv6: more than one fragment header");
}

TEST(Ipv6Extensions, LongChainsAreBounded) {
  Ipv6Extensions e;
  for (size_t count : {size_t{8}, size_t{9}, size_t{200}}) {
    std::vector<uint8_t> chain;
    for (size_t i = 0; i < count; ++i) {
      auto h = padded_options(i + 1 == count ? kIpv6Tcp : kIpv6DestinationOptions);
      chain.insert(chain.end(), h.begin(), h.end());
    }
    Chain c(kIpv6DestinationOptions, chain);
    if (count <= Ipv6Extensions::kMaxHeaders) {
      ASSERT_EQ(c.walk(e), nullptr);
      EXPECT_EQ(e.header_count, count);
      EXPECT_EQ(e.upper_offset, 40 + 8 * count);
    } else {
      EXPECT_STREQ(c.walk(e), "ipv6: more than 8 extension headers") << count;
    }
  }
}

TEST(Ipv6Extensions, TruncatedAtEveryLength) {
  // Hop-by-Hop (8) + Destination Options (16) + Routing (8) + Fragment (8) + 4 bytes of TCP.
  std::vector<uint8_t> chain = padded_options(kIpv6DestinationOptions);
  for (uint8_t b : std::vector<uint8_t>{kIpv6Routing, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) chain.push_back(b);
  for (uint8_t b : std::vector<uint8_t>{kIpv6Fragment, 0, 4, 0, 0, 0, 0, 0}) chain.push_back(b);
  for (uint8_t b : std::vector<uint8_t>{kIpv6Tcp, 0, 0, 0, 0, 0, 0, 1}) chain.push_back(b);
  chain.resize(chain.size() + 4);
  const size_t starts[] = {0, 8, 24, 32, 40};  // where each header begins, then the upper layer
  Ipv6Extensions e;
  for (size_t cut = 0; cut <= chain.size(); ++cut) {
    Chain c(kIpv6HopByHop, std::vector<uint8_t>(chain.begin(), chain.begin() + static_cast<long>(cut)));
    const char* error = c.walk(e);
    size_t header = 0;
    while (header < 4 && starts[header + 1] <= cut) ++header;
    if (header == 4) {
      ASSERT_EQ(error, nullptr) << cut;
      EXPECT_EQ(e.upper_protocol, kIpv6Tcp);
      EXPECT_EQ(e.upper_offset, 80u);
    } else if (cut - starts[header] < 8) {
      EXPECT_STREQ(error, "ipv6: extension header truncated") << cut;
    } else {
      EXPECT_STREQ(error, "ipv6: extension header runs past the payload") << cut;  // only the 16-byte one
      EXPECT_EQ(header, 1u) << cut;
    }
  }
  // The payload length promising more than the buffer holds.
  Chain c(kIpv6HopByHop, chain);
  EXPECT_STREQ(walk_ipv6_extensions(c.bytes.data(), c.bytes.size() - 1, c.header, e),
               "ipv6: payload length beyond the end of the packet");
}

TEST(Ipv6Checksum, TcpOverIpv6MatchesAHandComputedSum) {
  // 20-byte TCP header (ports 1 -> 2, data offset 5, ACK, window 0) + "odd-length payload" from
  // 2001:db8::1 to 2001:db8::2: 0xe1c6, computed outside this code base.
  std::vector<uint8_t> seg = {0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x10, 0, 0, 0, 0, 0, 0};
  const std::string payload = "odd-length payload";
  seg.insert(seg.end(), payload.begin(), payload.end());
  const Ipv6Address s = addr("2001:db8::1"), d = addr("2001:db8::2");
  EXPECT_EQ(tcp_checksum(s, d, list_of(seg)), 0xe1c6);
  store_be16(seg.data() + 16, 0xe1c6);
  EXPECT_EQ(tcp_checksum(s, d, list_of(seg)), 0);
  // The offload form: the pseudo-header's folded sum; completing it over the segment (field
  // holding that sum) gives the same checksum.
  store_be16(seg.data() + 16, tcp_pseudo_header_sum(s, d, seg.size()));
  EXPECT_EQ(internet_checksum(seg.data(), seg.size()), 0xe1c6);
  // Source and destination swapped sum the same; a different length does not.
  EXPECT_EQ(tcp_pseudo_header_sum(s, d, 38), tcp_pseudo_header_sum(d, s, 38));
  EXPECT_NE(tcp_pseudo_header_sum(s, d, 38), tcp_pseudo_header_sum(s, d, 39));
  EXPECT_NE(tcp_pseudo_header_sum(s, d, 38), ipv6_pseudo_header_sum(s, d, 38, kIpv6Udp));
}

TEST(Ipv6Checksum, PseudoHeaderSpansTheFullLengthWord) {
  // RFC 8200 §8.1: the upper-layer length is 32 bits: 0x10000 must not fold to 0 with 16.
  const Ipv6Address s{}, d{};
  EXPECT_EQ(ipv6_pseudo_header_sum(s, d, 0x10000, 0), 0x0001);
  EXPECT_EQ(ipv6_pseudo_header_sum(s, d, 0x12345678, 6), static_cast<uint16_t>(0x1234 + 0x5678 + 6));
}

TEST(Icmpv6Wire, PacketTooBigMatchesAHandComputedChecksum) {
  // Packet Too Big, MTU 1280, quoting 48 bytes (i * 3) of the invoking packet, from 2001:db8::1 to
  // 2001:db8::2: checksum 0x1e52, computed outside this code base.
  std::vector<uint8_t> quoted(48);
  for (size_t i = 0; i < quoted.size(); ++i) quoted[i] = static_cast<uint8_t>(i * 3);
  const Ipv6Address s = addr("2001:db8::1"), d = addr("2001:db8::2");
  uint8_t head[Icmpv6Header::kLength];
  Icmpv6Header::packet_too_big(1280).emit(head, s, d, list_of(quoted));
  const uint8_t expected[8] = {Icmpv6Header::kPacketTooBig, 0, 0x1e, 0x52, 0, 0, 0x05, 0x00};
  EXPECT_EQ(std::memcmp(head, expected, sizeof(expected)), 0);
  std::vector<uint8_t> message(head, head + sizeof(head));
  message.insert(message.end(), quoted.begin(), quoted.end());
  Icmpv6Header back;
  ASSERT_EQ(Icmpv6Header::parse(list_of(message), s, d, back), nullptr);
  EXPECT_EQ(back.type, Icmpv6Header::kPacketTooBig);
  EXPECT_EQ(back.code, 0);
  EXPECT_EQ(back.checksum, 0x1e52);
  EXPECT_EQ(back.mtu(), 1280u);
  EXPECT_TRUE(back.is_error());
  EXPECT_EQ(icmpv6_checksum(s, d, message.data(), message.size()), 0);
  // The pseudo-header is covered (RFC 4443 §2.3): another destination fails the same bytes.
  EXPECT_STREQ(Icmpv6Header::parse(list_of(message), s, addr("2001:db8::3"), back), "icmpv6: bad checksum");
  message[20] ^= 0x01;
  EXPECT_STREQ(Icmpv6Header::parse(list_of(message), s, d, back), "icmpv6: bad checksum");
  EXPECT_LE(message.size(), Icmpv6Header::kMaxErrorMessage);
  EXPECT_EQ(Icmpv6Header::kMaxErrorMessage, 1240u);
}

TEST(Icmpv6Wire, EchoAndErrorRoundTrips) {
  const Ipv6Address s = addr("fe80::1"), d = addr("fe80::2");
  BufferList body;
  body.append_copy("ping6 payload");  // odd length
  struct Case {
    Icmpv6Header h;
  } cases[] = {
      {Icmpv6Header::echo(Icmpv6Header::kEchoRequest, 0xabcd, 7)},
      {Icmpv6Header::echo(Icmpv6Header::kEchoReply, 1, 0xffff)},
      {{Icmpv6Header::kDestinationUnreachable, Icmpv6Header::kPortUnreachable, 0, 0}},
      {{Icmpv6Header::kTimeExceeded, Icmpv6Header::kReassemblyTimeExceeded, 0, 0}},
      {Icmpv6Header::parameter_problem({Ipv6ParameterProblem::kUnrecognizedNextHeader, 6})},
  };
  for (const Case& c : cases) {
    uint8_t head[Icmpv6Header::kLength];
    c.h.emit(head, s, d, body);
    BufferList message;
    message.append(BufferSegment::copy_of(head, sizeof(head)));
    message.append(body);
    Icmpv6Header back;
    ASSERT_EQ(Icmpv6Header::parse(message, s, d, back), nullptr) << int{c.h.type};
    EXPECT_EQ(back.type, c.h.type);
    EXPECT_EQ(back.code, c.h.code);
    EXPECT_EQ(back.rest, c.h.rest);
  }
  Icmpv6Header echo = Icmpv6Header::echo(Icmpv6Header::kEchoRequest, 0xabcd, 7);
  EXPECT_EQ(echo.echo_identifier(), 0xabcd);
  EXPECT_EQ(echo.echo_sequence(), 7);
  EXPECT_FALSE(echo.is_error());
  Icmpv6Header pp = Icmpv6Header::parameter_problem({Ipv6ParameterProblem::kErroneousHeaderField, 50});
  EXPECT_EQ(pp.type, Icmpv6Header::kParameterProblem);
  EXPECT_EQ(pp.code, 0);
  EXPECT_EQ(pp.pointer(), 50u);
  EXPECT_TRUE(pp.is_error());
  Icmpv6Header back;
  for (size_t len = 0; len < Icmpv6Header::kLength; ++len) {
    BufferList shorty;
    shorty.append(BufferSegment::copy_of("\x80\0\0\0\0\0\0", len));
    EXPECT_STREQ(Icmpv6Header::parse(shorty, s, d, back), "icmpv6: message shorter than 8 bytes") << len;
  }
}

const Ipv6Address kNode1 = Ipv6Address{{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0xff, 0xfe, 0, 0, 1}};
const Ipv6Address kNode2 = Ipv6Address{{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0xff, 0xfe, 0, 0, 2}};
const MacAddress kMac1{{2, 0, 0, 0, 0, 1}};
const MacAddress kMac2{{2, 0, 0, 0, 0, 2}};

Ipv6Header nd_ip(const Ipv6Address& source, const Ipv6Address& destination, size_t icmp_length) {
  Ipv6Header ip;
  ip.hop_limit = 255;
  ip.next_header = kIpv6Icmpv6;
  ip.payload_length = static_cast<uint16_t>(icmp_length);
  ip.source = source;
  ip.destination = destination;
  return ip;
}

// fe80::200:ff:fe00:1 asks for fe80::200:ff:fe00:2 at its solicited-node group, saying it is
// 02:00:00:00:00:01: 32 bytes, checksum 0x7897 computed outside this code base.
const std::vector<uint8_t> kSolicitation = {
    135, 0, 0x78, 0x97, 0, 0, 0, 0,
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0xff, 0xfe, 0, 0, 2,
    1, 1, 2, 0, 0, 0, 0, 1};
// Its answer, Solicited and Override, with the target's address 02:00:00:00:00:02: checksum 0x151a.
const std::vector<uint8_t> kAdvertisement = {
    136, 0, 0x15, 0x1a, 0x60, 0, 0, 0,
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0xff, 0xfe, 0, 0, 2,
    2, 1, 2, 0, 0, 0, 0, 2};

TEST(NdWire, NeighborSolicitationByteForByte) {
  const Ipv6Address group = kNode2.solicited_node_multicast();
  NeighborSolicitation ns;
  ns.target = kNode2;
  ns.options.source_link_layer = kMac1;
  ASSERT_EQ(ns.emitted_length(), kSolicitation.size());
  std::vector<uint8_t> out(ns.emitted_length(), 0xee);
  ns.emit(out.data(), kNode1, group);
  EXPECT_EQ(out, kSolicitation);
  Icmpv6Header icmp;
  ASSERT_EQ(Icmpv6Header::parse(list_of(kSolicitation), kNode1, group, icmp), nullptr);
  NeighborSolicitation back;
  ASSERT_EQ(NeighborSolicitation::parse(kSolicitation.data(), kSolicitation.size(), back), nullptr);
  EXPECT_EQ(back.code, 0);
  EXPECT_EQ(back.target, kNode2);
  ASSERT_TRUE(back.options.source_link_layer.has_value());
  EXPECT_EQ(*back.options.source_link_layer, kMac1);
  EXPECT_FALSE(back.options.target_link_layer.has_value());
  EXPECT_EQ(validate_neighbor_solicitation(nd_ip(kNode1, group, 32), 32, back), nullptr);
  // Without the option: 24 bytes.
  NeighborSolicitation bare;
  bare.target = kNode2;
  EXPECT_EQ(bare.emitted_length(), 24u);
  uint8_t b[24];
  bare.emit(b, Ipv6Address{}, group);
  EXPECT_EQ(icmpv6_checksum(Ipv6Address{}, group, b, sizeof(b)), 0);
  ASSERT_EQ(NeighborSolicitation::parse(b, sizeof(b), back), nullptr);
  EXPECT_FALSE(back.options.source_link_layer.has_value());
  EXPECT_EQ(validate_neighbor_solicitation(nd_ip(Ipv6Address{}, group, 24), 24, back), nullptr);  // DAD
}

TEST(NdWire, NeighborAdvertisementByteForByte) {
  NeighborAdvertisement na;
  na.solicited = true;
  na.override_flag = true;
  na.target = kNode2;
  na.options.target_link_layer = kMac2;
  std::vector<uint8_t> out(na.emitted_length(), 0xee);
  ASSERT_EQ(out.size(), kAdvertisement.size());
  na.emit(out.data(), kNode2, kNode1);
  EXPECT_EQ(out, kAdvertisement);
  Icmpv6Header icmp;
  ASSERT_EQ(Icmpv6Header::parse(list_of(kAdvertisement), kNode2, kNode1, icmp), nullptr);
  NeighborAdvertisement back;
  ASSERT_EQ(NeighborAdvertisement::parse(kAdvertisement.data(), kAdvertisement.size(), back), nullptr);
  EXPECT_FALSE(back.router);
  EXPECT_TRUE(back.solicited);
  EXPECT_TRUE(back.override_flag);
  EXPECT_EQ(back.target, kNode2);
  ASSERT_TRUE(back.options.target_link_layer.has_value());
  EXPECT_EQ(*back.options.target_link_layer, kMac2);
  EXPECT_EQ(validate_neighbor_advertisement(nd_ip(kNode2, kNode1, 32), 32, back), nullptr);
  // Each flag on its own bit (RFC 4861 §4.4: R 0x80, S 0x40, O 0x20 of the first octet).
  NeighborAdvertisement r;
  r.router = true;
  uint8_t b[24];
  r.emit(b, kNode2, kNode1);
  EXPECT_EQ(b[4], 0x80);
  ASSERT_EQ(NeighborAdvertisement::parse(b, sizeof(b), back), nullptr);
  EXPECT_TRUE(back.router);
  EXPECT_FALSE(back.solicited);
  EXPECT_FALSE(back.override_flag);
  b[4] = 0x1f;  // reserved bits only
  b[7] = 0xff;
  ASSERT_EQ(NeighborAdvertisement::parse(b, sizeof(b), back), nullptr);
  EXPECT_FALSE(back.router || back.solicited || back.override_flag);
}

TEST(NdWire, NeighborValidationRejects) {
  const Ipv6Address group = kNode2.solicited_node_multicast();
  NeighborSolicitation ns;
  ASSERT_EQ(NeighborSolicitation::parse(kSolicitation.data(), kSolicitation.size(), ns), nullptr);
  Ipv6Header ip = nd_ip(kNode1, group, 32);
  ip.hop_limit = 254;  // forwarded by a router: from off the link
  EXPECT_STREQ(validate_neighbor_solicitation(ip, 32, ns), "nd: neighbor solicitation hop limit is not 255");
  ip = nd_ip(kNode1, group, 32);
  EXPECT_STREQ(validate_neighbor_solicitation(ip, 23, ns), "nd: neighbor solicitation shorter than 24 bytes");
  NeighborSolicitation bad = ns;
  bad.code = 1;
  EXPECT_STREQ(validate_neighbor_solicitation(ip, 32, bad), "nd: neighbor solicitation code is not 0");
  bad = ns;
  bad.target = group;
  EXPECT_STREQ(validate_neighbor_solicitation(ip, 32, bad), "nd: neighbor solicitation target is multicast");
  // DAD (from ::) carrying a source link-layer address, and one not sent to a solicited-node group.
  EXPECT_STREQ(validate_neighbor_solicitation(nd_ip(Ipv6Address{}, group, 32), 32, ns),
               "nd: neighbor solicitation from :: carries a source link-layer address");
  EXPECT_STREQ(validate_neighbor_solicitation(nd_ip(Ipv6Address{}, kNode2, 32), 32, ns),
               "nd: neighbor solicitation from :: not to a solicited-node multicast address");
  // From a unicast source, a unicast destination is fine (reachability confirmation, §7.2.2).
  EXPECT_EQ(validate_neighbor_solicitation(nd_ip(kNode1, kNode2, 32), 32, ns), nullptr);

  NeighborAdvertisement na;
  ASSERT_EQ(NeighborAdvertisement::parse(kAdvertisement.data(), kAdvertisement.size(), na), nullptr);
  ip = nd_ip(kNode2, kNode1, 32);
  ip.hop_limit = 64;
  EXPECT_STREQ(validate_neighbor_advertisement(ip, 32, na), "nd: neighbor advertisement hop limit is not 255");
  ip = nd_ip(kNode2, kNode1, 32);
  EXPECT_STREQ(validate_neighbor_advertisement(ip, 20, na), "nd: neighbor advertisement shorter than 24 bytes");
  NeighborAdvertisement nbad = na;
  nbad.code = 3;
  EXPECT_STREQ(validate_neighbor_advertisement(ip, 32, nbad), "nd: neighbor advertisement code is not 0");
  nbad = na;
  nbad.target = Ipv6Address::all_nodes();
  EXPECT_STREQ(validate_neighbor_advertisement(ip, 32, nbad), "nd: neighbor advertisement target is multicast");
  EXPECT_STREQ(validate_neighbor_advertisement(nd_ip(kNode2, Ipv6Address::all_nodes(), 32), 32, na),
               "nd: neighbor advertisement to a multicast address has the solicited flag");
  nbad = na;
  nbad.solicited = false;  // an unsolicited announcement to all nodes (§7.2.6) is fine
  EXPECT_EQ(validate_neighbor_advertisement(nd_ip(kNode2, Ipv6Address::all_nodes(), 32), 32, nbad), nullptr);
}

TEST(NdWire, MessagesTruncatedAtEveryLength) {
  NeighborSolicitation ns;
  NeighborAdvertisement na;
  for (size_t len = 0; len < 24; ++len) {
    EXPECT_STREQ(NeighborSolicitation::parse(kSolicitation.data(), len, ns),
                 "nd: neighbor solicitation shorter than 24 bytes") << len;
    EXPECT_STREQ(NeighborAdvertisement::parse(kAdvertisement.data(), len, na),
                 "nd: neighbor advertisement shorter than 24 bytes") << len;
  }
  // Inside the option: one byte of it, then a length promising 8 with fewer present.
  EXPECT_STREQ(NeighborSolicitation::parse(kSolicitation.data(), 25, ns), "nd: option truncated");
  for (size_t len = 26; len < 32; ++len)
    EXPECT_STREQ(NeighborSolicitation::parse(kSolicitation.data(), len, ns),
                 "nd: option runs past the end of the message") << len;
  EXPECT_EQ(NeighborSolicitation::parse(kSolicitation.data(), 24, ns), nullptr);
  EXPECT_STREQ(NeighborSolicitation::parse(kAdvertisement.data(), 32, ns), "nd: not a neighbor solicitation");
  EXPECT_STREQ(NeighborAdvertisement::parse(kSolicitation.data(), 32, na), "nd: not a neighbor advertisement");
  RouterSolicitation rs;
  RouterAdvertisement ra;
  const uint8_t zeros[16] = {Icmpv6Header::kRouterAdvertisement};
  for (size_t len = 0; len < 16; ++len) {
    if (len < 8) {
      EXPECT_STREQ(RouterSolicitation::parse(zeros, len, rs), "nd: router solicitation shorter than 8 bytes");
    }
    EXPECT_STREQ(RouterAdvertisement::parse(zeros, len, ra), "nd: router advertisement shorter than 16 bytes");
  }
  EXPECT_STREQ(RouterSolicitation::parse(zeros, 8, rs), "nd: not a router solicitation");
  EXPECT_EQ(RouterAdvertisement::parse(zeros, 16, ra), nullptr);
  const uint8_t rs_bytes[8] = {Icmpv6Header::kRouterSolicitation};
  EXPECT_STREQ(RouterAdvertisement::parse(rs_bytes, 8, ra), "nd: router advertisement shorter than 16 bytes");
  EXPECT_EQ(RouterSolicitation::parse(rs_bytes, 8, rs), nullptr);
}

// An option area built from (type, length in units, fill byte) triples.
std::vector<uint8_t> option(uint8_t type, uint8_t units, uint8_t fill = 0) {
  std::vector<uint8_t> o(units == 0 ? 8 : units * 8u, fill);
  o[0] = type;
  o[1] = units;
  return o;
}

TEST(NdWire, OptionRejects) {
  NdOptions out;
  struct Case {
    std::vector<uint8_t> bytes;
    const char* error;
  } cases[] = {
      {option(NdOptions::kSourceLinkLayerAddress, 0), "nd: option length zero"},
      {option(99, 0), "nd: option length zero"},  // even an unknown one (§4.6)
      {{1}, "nd: option truncated"},
      {{1, 2, 0, 0, 0, 0, 0, 0}, "nd: option runs past the end of the message"},
      {option(NdOptions::kSourceLinkLayerAddress, 2), "nd: link-layer address option length is not 1"},
      {option(NdOptions::kTargetLinkLayerAddress, 2), "nd: link-layer address option length is not 1"},
      {option(NdOptions::kPrefixInformation, 3), "nd: prefix information option length is not 4"},
      {option(NdOptions::kMtu, 2), "nd: MTU option length is not 1"},
  };
  for (const Case& c : cases) EXPECT_STREQ(NdOptions::parse(c.bytes.data(), c.bytes.size(), out), c.error);
  auto prefix = option(NdOptions::kPrefixInformation, 4);
  prefix[2] = 129;
  EXPECT_STREQ(NdOptions::parse(prefix.data(), prefix.size(), out), "nd: prefix length above 128");
  // A good option, then a zero-length one: the whole message is refused.
  auto two = option(NdOptions::kSourceLinkLayerAddress, 1);
  two.push_back(5);
  two.push_back(0);
  EXPECT_STREQ(NdOptions::parse(two.data(), two.size(), out), "nd: option length zero");
  EXPECT_EQ(NdOptions::parse(nullptr, 0, out), nullptr);  // no options
}

TEST(NdWire, RouterAdvertisementOptions) {
  std::vector<uint8_t> ra = {Icmpv6Header::kRouterAdvertisement, 0, 0, 0, 64, 0xc0, 0x07, 0x08,
                             0, 0, 0x75, 0x30, 0, 0, 0x03, 0xe8};
  auto mtu = option(NdOptions::kMtu, 1);
  store_be32(mtu.data() + 4, 9000);
  ra.insert(ra.end(), mtu.begin(), mtu.end());
  auto unknown = option(31, 2, 0xaa);  // skipped by its length
  ra.insert(ra.end(), unknown.begin(), unknown.end());
  for (int i = 0; i < 6; ++i) {  // six prefixes: four kept, two counted
    auto p = option(NdOptions::kPrefixInformation, 4);
    p[2] = 64;
    p[3] = i % 2 ? 0x80 : 0x40;
    store_be32(p.data() + 4, 2592000);
    store_be32(p.data() + 8, 604800);
    const Ipv6Address pre = addr("2001:db8::");
    pre.store(p.data() + 16);
    p[16 + 7] = static_cast<uint8_t>(i);
    ra.insert(ra.end(), p.begin(), p.end());
  }
  auto sll = option(NdOptions::kSourceLinkLayerAddress, 1);
  std::memcpy(sll.data() + 2, kMac1.bytes.data(), 6);
  ra.insert(ra.end(), sll.begin(), sll.end());
  RouterAdvertisement out;
  ASSERT_EQ(RouterAdvertisement::parse(ra.data(), ra.size(), out), nullptr);
  EXPECT_EQ(out.current_hop_limit, 64);
  EXPECT_TRUE(out.managed);
  EXPECT_TRUE(out.other);
  EXPECT_EQ(out.router_lifetime, 0x0708);
  EXPECT_EQ(out.reachable_time, 30000u);
  EXPECT_EQ(out.retrans_timer, 1000u);
  ASSERT_TRUE(out.options.mtu.has_value());
  EXPECT_EQ(*out.options.mtu, 9000u);
  ASSERT_EQ(out.options.prefix_count, 4);
  EXPECT_EQ(out.options.prefixes_ignored, 2);
  EXPECT_EQ(out.options.prefixes[1].prefix, addr("2001:db8:0:1::"));
  EXPECT_EQ(out.options.prefixes[1].prefix_length, 64);
  EXPECT_TRUE(out.options.prefixes[1].on_link);
  EXPECT_FALSE(out.options.prefixes[1].autonomous);
  EXPECT_TRUE(out.options.prefixes[2].autonomous);
  EXPECT_EQ(out.options.prefixes[2].valid_lifetime, 2592000u);
  EXPECT_EQ(out.options.prefixes[2].preferred_lifetime, 604800u);
  ASSERT_TRUE(out.options.source_link_layer.has_value());
  EXPECT_EQ(*out.options.source_link_layer, kMac1);

  const Ipv6Header ip = nd_ip(addr("fe80::1"), Ipv6Address::all_nodes(), ra.size());
  EXPECT_EQ(validate_router_advertisement(ip, ra.size(), out), nullptr);
  EXPECT_STREQ(validate_router_advertisement(nd_ip(addr("2001:db8::1"), Ipv6Address::all_nodes(), ra.size()),
                                             ra.size(), out),
               "nd: router advertisement source is not link-local");
  Ipv6Header hop = ip;
  hop.hop_limit = 1;
  EXPECT_STREQ(validate_router_advertisement(hop, ra.size(), out), "nd: router advertisement hop limit is not 255");
  EXPECT_STREQ(validate_router_advertisement(ip, 15, out), "nd: router advertisement shorter than 16 bytes");
  RouterAdvertisement coded = out;
  coded.code = 1;
  EXPECT_STREQ(validate_router_advertisement(ip, ra.size(), coded), "nd: router advertisement code is not 0");
}

TEST(NdWire, RouterSolicitationValidation) {
  std::vector<uint8_t> rs = {Icmpv6Header::kRouterSolicitation, 0, 0, 0, 0, 0, 0, 0};
  auto sll = option(NdOptions::kSourceLinkLayerAddress, 1);
  rs.insert(rs.end(), sll.begin(), sll.end());
  RouterSolicitation out;
  ASSERT_EQ(RouterSolicitation::parse(rs.data(), rs.size(), out), nullptr);
  ASSERT_TRUE(out.options.source_link_layer.has_value());
  const Ipv6Header ip = nd_ip(kNode1, Ipv6Address::all_routers(), rs.size());
  EXPECT_EQ(validate_router_solicitation(ip, rs.size(), out), nullptr);
  EXPECT_STREQ(validate_router_solicitation(nd_ip(Ipv6Address{}, Ipv6Address::all_routers(), 16), 16, out),
               "nd: router solicitation from :: carries a source link-layer address");
  Ipv6Header hop = ip;
  hop.hop_limit = 0;
  EXPECT_STREQ(validate_router_solicitation(hop, rs.size(), out), "nd: router solicitation hop limit is not 255");
  EXPECT_STREQ(validate_router_solicitation(ip, 7, out), "nd: router solicitation shorter than 8 bytes");
  RouterSolicitation coded = out;
  coded.code = 9;
  EXPECT_STREQ(validate_router_solicitation(ip, rs.size(), coded), "nd: router solicitation code is not 0");
  ASSERT_EQ(RouterSolicitation::parse(rs.data(), 8, out), nullptr);
  EXPECT_EQ(validate_router_solicitation(nd_ip(Ipv6Address{}, Ipv6Address::all_routers(), 8), 8, out), nullptr);
}

// Random bytes through every parser, each input in a buffer of exactly its length so that ASan
// (the sanitizer build) catches any read past it. Extension-header types are made likely so the
// walk goes deep; whatever is accepted must stay inside the packet.
TEST(Ipv6WireFuzz, RandomInputsStayInBounds) {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state] { return static_cast<uint32_t>((state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33); };
  const uint8_t headers[] = {kIpv6HopByHop, kIpv6DestinationOptions, kIpv6Routing, kIpv6Fragment, kIpv6Tcp};
  size_t accepted = 0, deepest = 0, problems = 0;
  for (int round = 0; round < 20000; ++round) {
    std::vector<uint8_t> bytes;
    if (round % 2 == 0) {  // random bytes
      bytes.resize(next() % 200);
      for (auto& b : bytes) b = static_cast<uint8_t>(next() % 4 == 0 ? headers[next() % 5] : next() % 8);
    } else {  // a chain of 8-byte headers (mostly Pad1 inside), then a byte or two changed
      bytes.resize(Ipv6Header::kLength);
      const size_t count = next() % 11;
      for (size_t i = 0; i < count; ++i) {
        bytes.push_back(headers[next() % 5]);
        for (int j = 0; j < 7; ++j) bytes.push_back(next() % 8 == 0 ? static_cast<uint8_t>(next()) : 0);
      }
      bytes.resize(bytes.size() + next() % 24);
      for (uint32_t m = next() % 3; m > 0; --m) bytes[next() % bytes.size()] = static_cast<uint8_t>(next());
    }
    const size_t len = bytes.size();
    if (len >= Ipv6Header::kLength) {  // a valid fixed header, the payload length at most 2 short
      bytes[0] = 0x60;
      store_be16(bytes.data() + 4, static_cast<uint16_t>(len - Ipv6Header::kLength - next() % 3 * (len > 42)));
      bytes[6] = headers[next() % 5];
    }
    Ipv6Header ip;
    if (Ipv6Header::parse(bytes.data(), bytes.size(), ip) == nullptr) {
      Ipv6Extensions e;
      if (walk_ipv6_extensions(bytes.data(), bytes.size(), ip, e) == nullptr) {
        ++accepted;
        EXPECT_LE(e.upper_offset, Ipv6Header::kLength + ip.payload_length);
        EXPECT_LE(e.header_count, Ipv6Extensions::kMaxHeaders);
        deepest = std::max<size_t>(deepest, e.header_count);
      } else if (e.has_parameter_problem) {
        ++problems;
        EXPECT_LT(e.parameter_problem.pointer, Ipv6Header::kLength + ip.payload_length);
      }
    }
    NdOptions options;
    NdOptions::parse(bytes.data(), bytes.size(), options);
    EXPECT_LE(options.prefix_count, NdOptions::kMaxPrefixes);
    NeighborSolicitation ns;
    NeighborSolicitation::parse(bytes.data(), bytes.size(), ns);
    NeighborAdvertisement na;
    NeighborAdvertisement::parse(bytes.data(), bytes.size(), na);
    RouterSolicitation rs;
    RouterSolicitation::parse(bytes.data(), bytes.size(), rs);
    RouterAdvertisement ra;
    RouterAdvertisement::parse(bytes.data(), bytes.size(), ra);
    Icmpv6Header icmp;
    Icmpv6Header::parse(list_of(bytes), Ipv6Address{}, Ipv6Address{}, icmp);
  }
  // The walk was reached, got through chains of several headers, and reported problems.
  EXPECT_GT(accepted, 100u);
  EXPECT_GE(deepest, 3u);
  EXPECT_GT(problems, 10u);
  std::printf("accepted %zu, deepest %zu, parameter problems %zu\n", accepted, deepest, problems);
}

}  // namespace
}  // namespace bypass::inet
