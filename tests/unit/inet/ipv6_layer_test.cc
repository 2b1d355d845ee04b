// The IPv6 layer of one stack (RFC 8200) with ICMPv6 (RFC 4443): input validation, the
// Parameter Problems of RFC 8200 §4, echo replies, rate-limited errors, reassembly (§4.5, RFC 5722
// overlaps, RFC 6946 atomic fragments, the 60 s timeout and its Time Exceeded), source
// fragmentation, next-hop selection, and the path MTU learned from Packet Too Big (RFC 8201).
#include <gtest/gtest.h>

#include <random>

#include "tests/unit/inet/harness.h"
#include "tests/unit/inet/ipv6_frames.h"

namespace bypass::inet::test {
namespace {

class Ipv6LayerTest : public Ipv6StackTest {
 protected:
  Ipv6LayerTest() { learn_peer(); }

  Bytes data(size_t n, uint8_t seed = 0) {
    Bytes d(n);
    for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(i * 7 + seed);
    return d;
  }
  // The fragments of `payload` (the fragmentable part, after the Fragment header) of `next_header`,
  // cut at `cuts` (offsets, multiples of 8), as whole IPv6 packets from the peer to us.
  std::vector<Bytes> fragments(uint8_t next_header, const Bytes& payload, const std::vector<size_t>& cuts,
                               uint32_t id) {
    std::vector<Bytes> out;
    std::vector<size_t> edges = cuts;
    edges.insert(edges.begin(), 0);
    edges.push_back(payload.size());
    for (size_t i = 0; i + 1 < edges.size(); ++i) {
      Bytes piece(payload.begin() + static_cast<long>(edges[i]), payload.begin() + static_cast<long>(edges[i + 1]));
      const bool more = i + 2 < edges.size();
      out.push_back(ipv6(kPeerIp, kOurIp, kIpv6Fragment,
                         concat(fragment_header(next_header, static_cast<uint16_t>(edges[i]), more, id), piece)));
    }
    return out;
  }
  // Checks that `f` is an ICMPv6 error of `type`/`code` with `rest`, from us to the peer, quoting
  // the start of `invoking`.
  void expect_error(const SentFrame& f, uint8_t type, uint8_t code, uint32_t rest, const Bytes& invoking) {
    ASSERT_TRUE(f.icmp_ok);
    EXPECT_EQ(f.icmp.type, type);
    EXPECT_EQ(f.icmp.code, code);
    EXPECT_EQ(f.icmp.rest, rest);
    EXPECT_EQ(f.ip.source, kOurIp);
    EXPECT_EQ(f.ip.destination, kPeerIp);
    const size_t quoted = std::min(invoking.size(), Icmpv6Header::kMaxErrorMessage - Icmpv6Header::kLength);
    ASSERT_EQ(f.l4.size(), Icmpv6Header::kLength + quoted);
    EXPECT_TRUE(std::equal(invoking.begin(), invoking.begin() + static_cast<long>(quoted),
                           f.l4.begin() + Icmpv6Header::kLength));
  }
  // A Destination Options header (RFC 8200 §4.6) of 8 bytes holding one option of `type` with 4
  // bytes of data.
  static Bytes destination_options(uint8_t next_header, uint8_t option_type) {
    return {next_header, 0, option_type, 4, 0, 0, 0, 0};
  }
};

TEST_F(Ipv6LayerTest, EchoRequestIsAnsweredWithItsIdentifierSequenceAndData) {
  const Bytes payload = data(56);
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6Icmpv6, echo_request(kPeerIp, kOurIp, 0x1234, 7, payload)));
  ASSERT_EQ(device_.sent.size(), 1u);
  SentFrame f = last();
  ASSERT_TRUE(f.icmp_ok);
  EXPECT_EQ(f.eth.destination, kPeerMac);
  EXPECT_EQ(f.eth.source, kOurMac);
  EXPECT_EQ(f.ip.source, kOurIp);
  EXPECT_EQ(f.ip.destination, kPeerIp);
  EXPECT_EQ(f.ip.hop_limit, 64);
  EXPECT_EQ(f.icmp.type, Icmpv6Header::kEchoReply);
  EXPECT_EQ(f.icmp.echo_identifier(), 0x1234);
  EXPECT_EQ(f.icmp.echo_sequence(), 7);
  EXPECT_EQ(Bytes(f.l4.begin() + Icmpv6Header::kLength, f.l4.end()), payload);
  EXPECT_EQ(stack_->stats().icmpv6_echo_replies_sent, 1u);
}

TEST_F(Ipv6LayerTest, EchoToAllNodesIsAnsweredFromOurUnicastAddress) {
  const Ipv6Address all = Ipv6Address::all_nodes();
  inject(ethernet(all.multicast_mac(), kPeerMac, ipv6(kPeerIp, all, kIpv6Icmpv6, echo_request(kPeerIp, all, 1, 1, {}))));
  ASSERT_EQ(device_.sent.size(), 1u);
  EXPECT_EQ(last().ip.source, kOurIp);  // RFC 4443 §4.2
  EXPECT_EQ(last().icmp.type, Icmpv6Header::kEchoReply);
}

TEST_F(Ipv6LayerTest, EthernetPaddingIsIgnored) {
  Bytes packet = ipv6(kPeerIp, kOurIp, kIpv6Icmpv6, echo_request(kPeerIp, kOurIp, 1, 1, data(4)));
  packet.resize(packet.size() + 10, 0);  // link padding beyond the payload length
  inject_ipv6(packet);
  ASSERT_EQ(device_.sent.size(), 1u);
  EXPECT_EQ(last().l4.size(), Icmpv6Header::kLength + 4);
}

TEST_F(Ipv6LayerTest, MalformedPacketsAreCountedAndDropped) {
  Bytes good = ipv6(kPeerIp, kOurIp, kIpv6Icmpv6, echo_request(kPeerIp, kOurIp, 1, 1, data(8)));
  inject_ipv6(Bytes(good.begin(), good.begin() + 39));  // shorter than the fixed header
  Bytes version = good;
  version[0] = 0x40;
  inject_ipv6(version);
  Bytes length = good;
  store_be16(length.data() + 4, static_cast<uint16_t>(good.size()));  // payload length beyond the frame
  inject_ipv6(length);
  inject_ipv6(ipv6(v6("ff02::5"), kOurIp, kIpv6Icmpv6, echo_request(v6("ff02::5"), kOurIp, 1, 1, {})));
  EXPECT_EQ(stack_->stats().rx_malformed_ipv6, 4u);
  inject_ipv6(ipv6(kPeerIp, v6("2001:db8::99"), kIpv6Icmpv6, echo_request(kPeerIp, v6("2001:db8::99"), 1, 1, {})));
  EXPECT_EQ(stack_->stats().rx_ipv6_not_for_us, 1u);
  Bytes checksum = good;
  checksum[Ipv6Header::kLength + 9] ^= 0xff;
  inject_ipv6(checksum);
  EXPECT_EQ(stack_->stats().rx_malformed_icmpv6, 1u);
  EXPECT_TRUE(device_.sent.empty());
  inject_ipv6(good);  // and the stack still works
  EXPECT_EQ(device_.sent.size(), 1u);
}

TEST_F(Ipv6LayerTest, UnrecognizedNextHeaderGetsAParameterProblemPointingAtIt) {
  // RFC 8200 §4: code 1, pointer to the Next Header field that named it.
  const Bytes udp = ipv6(kPeerIp, kOurIp, kIpv6Udp, data(16));
  inject_ipv6(udp);
  ASSERT_EQ(device_.sent.size(), 1u);
  expect_error(last(), Icmpv6Header::kParameterProblem, Ipv6ParameterProblem::kUnrecognizedNextHeader, 6, udp);
  // Behind a Destination Options header: the pointer is that header's first octet (offset 40).
  const Bytes behind = ipv6(kPeerIp, kOurIp, kIpv6DestinationOptions,
                            concat(destination_options(253, 1 /* PadN */), data(8)));
  inject_ipv6(behind);
  ASSERT_EQ(device_.sent.size(), 2u);
  expect_error(last(), Icmpv6Header::kParameterProblem, Ipv6ParameterProblem::kUnrecognizedNextHeader, 40, behind);
  EXPECT_EQ(stack_->stats().rx_unsupported_next_header, 2u);
  EXPECT_EQ(stack_->stats().ipv6_parameter_problems_sent, 2u);
  // No Next Header (RFC 8200 §4.7) is not an error.
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6NoNextHeader, {}));
  EXPECT_EQ(device_.sent.size(), 2u);
}

TEST_F(Ipv6LayerTest, UnrecognizedOptionIsHandledByItsActionBits) {
  // RFC 8200 §4.2: 00 skip, 01 discard, 10 discard and tell (even to multicast), 11 tell unless
  // the destination was multicast.
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6DestinationOptions,
                   concat(destination_options(kIpv6Icmpv6, 0x1e), echo_request(kPeerIp, kOurIp, 1, 1, {}))));
  ASSERT_EQ(device_.sent.size(), 1u);
  EXPECT_EQ(last().icmp.type, Icmpv6Header::kEchoReply);  // skipped
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6DestinationOptions, concat(destination_options(253, 0x5e), data(8))));
  EXPECT_EQ(device_.sent.size(), 1u);  // silently discarded
  const Bytes tell = ipv6(kPeerIp, kOurIp, kIpv6DestinationOptions, concat(destination_options(253, 0x9e), data(8)));
  inject_ipv6(tell);
  ASSERT_EQ(device_.sent.size(), 2u);
  expect_error(last(), Icmpv6Header::kParameterProblem, Ipv6ParameterProblem::kUnrecognizedOption, 42, tell);
  const Ipv6Address all = Ipv6Address::all_nodes();
  inject(ethernet(all.multicast_mac(), kPeerMac,
                  ipv6(kPeerIp, all, kIpv6DestinationOptions, concat(destination_options(253, 0xde), data(8)))));
  EXPECT_EQ(device_.sent.size(), 2u);  // 11 to a multicast destination: not told
  inject(ethernet(all.multicast_mac(), kPeerMac,
                  ipv6(kPeerIp, all, kIpv6DestinationOptions, concat(destination_options(253, 0x9e), data(8)))));
  EXPECT_EQ(device_.sent.size(), 3u);  // 10: told even so (RFC 4443 §2.4 (e.3))
  // An unknown Next Header to a multicast destination is not answered (RFC 4443 §2.4 (e.3)).
  inject(ethernet(all.multicast_mac(), kPeerMac, ipv6(kPeerIp, all, kIpv6Udp, data(8))));
  EXPECT_EQ(device_.sent.size(), 3u);
  EXPECT_EQ(stack_->stats().rx_malformed_ipv6, 4u);
}

TEST_F(Ipv6LayerTest, ErrorsAreRateLimited) {
  const Bytes udp = ipv6(kPeerIp, kOurIp, kIpv6Udp, data(8));
  for (int i = 0; i < 25; ++i) inject_ipv6(udp);
  EXPECT_EQ(stack_->stats().icmpv6_errors_sent, settings_.ipv6.icmp_error_burst);
  EXPECT_EQ(stack_->stats().icmpv6_errors_rate_limited, 25 - settings_.ipv6.icmp_error_burst);
  timers_.advance(50ms);  // 100 per second: five tokens
  for (int i = 0; i < 10; ++i) inject_ipv6(udp);
  EXPECT_EQ(stack_->stats().icmpv6_errors_sent, settings_.ipv6.icmp_error_burst + 5);
  timers_.advance(10s);  // the bucket refills to its burst, no more
  for (int i = 0; i < 20; ++i) inject_ipv6(udp);
  EXPECT_EQ(stack_->stats().icmpv6_errors_sent, 2 * settings_.ipv6.icmp_error_burst + 5);
}

TEST_F(Ipv6LayerTest, NoErrorAboutAnError) {
  // RFC 4443 §2.4 (e.1): a fragmented ICMPv6 error whose reassembly times out gets no Time
  // Exceeded, though its first fragment arrived; an echo request in the same case does.
  const Bytes quoted = ipv6(kOurIp, kPeerIp, 253, data(64));
  const Bytes error = icmpv6(kPeerIp, kOurIp, Icmpv6Header::kDestinationUnreachable, 0, 0, quoted);
  inject_ipv6(fragments(kIpv6Icmpv6, error, {48}, 41)[0]);
  inject_ipv6(fragments(kIpv6Icmpv6, echo_request(kPeerIp, kOurIp, 1, 1, data(64)), {48}, 42)[0]);
  timers_.advance(60s);
  EXPECT_EQ(stack_->stats().ipv6_reassembly_timeouts, 2u);
  ASSERT_EQ(device_.sent.size(), 1u);
  EXPECT_EQ(last().icmp.type, Icmpv6Header::kTimeExceeded);
  EXPECT_EQ(ipv6_extension_field::FragmentIdentification::get(last().l4.data() + Icmpv6Header::kLength +
                                                               Ipv6Header::kLength),
            42u);  // the quoted fragment header's
}

TEST_F(Ipv6LayerTest, FragmentsAreReassembledInAnyOrder) {
  const Bytes message = echo_request(kPeerIp, kOurIp, 9, 9, data(100));
  auto pieces = fragments(kIpv6Icmpv6, message, {32, 64}, 77);
  inject_ipv6(pieces[2]);
  inject_ipv6(pieces[0]);
  EXPECT_TRUE(device_.sent.empty());
  EXPECT_EQ(stack_->ipv6().reassembler().datagrams_in_progress(), 1u);
  inject_ipv6(pieces[1]);
  ASSERT_EQ(device_.sent.size(), 1u);
  SentFrame reply = last();
  EXPECT_EQ(reply.icmp.type, Icmpv6Header::kEchoReply);
  EXPECT_EQ(Bytes(reply.l4.begin() + Icmpv6Header::kLength, reply.l4.end()), data(100));
  EXPECT_EQ(stack_->stats().ipv6_reassembly_completed, 1u);
  EXPECT_EQ(stack_->ipv6().reassembler().datagrams_in_progress(), 0u);
  EXPECT_EQ(stack_->ipv6().reassembler().bytes_in_progress(), 0u);
}

TEST_F(Ipv6LayerTest, ExtensionHeadersInsideTheFragmentablePartAreWalkedAfterReassembly) {
  const Bytes inner = concat(destination_options(kIpv6Icmpv6, 1), echo_request(kPeerIp, kOurIp, 3, 3, data(40)));
  auto pieces = fragments(kIpv6DestinationOptions, inner, {32}, 5);
  for (const Bytes& p : pieces) inject_ipv6(p);
  ASSERT_EQ(device_.sent.size(), 1u);
  EXPECT_EQ(last().icmp.type, Icmpv6Header::kEchoReply);
}

TEST_F(Ipv6LayerTest, AnExactDuplicateFragmentIsTolerated) {
  auto pieces = fragments(kIpv6Icmpv6, echo_request(kPeerIp, kOurIp, 1, 1, data(60)), {32}, 8);
  inject_ipv6(pieces[0]);
  inject_ipv6(pieces[0]);
  inject_ipv6(pieces[1]);
  EXPECT_EQ(device_.sent.size(), 1u);  // RFC 8200 §4.5 allows dropping the duplicate alone
}

TEST_F(Ipv6LayerTest, OverlappingFragmentsDiscardTheWholeDatagramAndItsLaterFragments) {
  const Bytes message = echo_request(kPeerIp, kOurIp, 1, 1, data(120));
  auto pieces = fragments(kIpv6Icmpv6, message, {64}, 11);
  inject_ipv6(pieces[0]);
  // Same offset, different bytes: an overlap (RFC 5722 §4).
  Bytes forged = pieces[0];
  forged.back() ^= 0xff;
  inject_ipv6(forged);
  EXPECT_EQ(stack_->stats().ipv6_reassembly_dropped, 1u);
  EXPECT_EQ(stack_->ipv6().reassembler().bytes_in_progress(), 0u);
  inject_ipv6(pieces[1]);  // would complete it: dropped as well
  EXPECT_EQ(stack_->stats().ipv6_reassembly_dropped, 2u);
  EXPECT_TRUE(device_.sent.empty());
  // A fragment overlapping the middle of another.
  auto other = fragments(kIpv6Icmpv6, message, {64}, 12);
  inject_ipv6(other[0]);
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6Fragment, concat(fragment_header(kIpv6Icmpv6, 56, true, 12), data(16))));
  EXPECT_EQ(stack_->stats().ipv6_reassembly_dropped, 3u);
  // Nothing is sent for the discarded datagrams, not even when their timers end.
  timers_.advance(61s);
  EXPECT_TRUE(device_.sent.empty());
  EXPECT_EQ(stack_->ipv6().reassembler().datagrams_in_progress(), 0u);
  EXPECT_EQ(stack_->stats().ipv6_reassembly_timeouts, 0u);
}

TEST_F(Ipv6LayerTest, AnAtomicFragmentIsProcessedAsAWholePacket) {
  // RFC 6946: offset 0 and M clear.
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6Fragment,
                   concat(fragment_header(kIpv6Icmpv6, 0, false, 99), echo_request(kPeerIp, kOurIp, 2, 2, data(8)))));
  ASSERT_EQ(device_.sent.size(), 1u);
  EXPECT_EQ(last().icmp.type, Icmpv6Header::kEchoReply);
  EXPECT_EQ(stack_->ipv6().reassembler().datagrams_in_progress(), 0u);
}

TEST_F(Ipv6LayerTest, IncompleteDatagramTimesOutAfterSixtySecondsWithTimeExceeded) {
  auto pieces = fragments(kIpv6Icmpv6, echo_request(kPeerIp, kOurIp, 1, 1, data(100)), {48}, 21);
  inject_ipv6(pieces[0]);  // the first fragment only
  timers_.advance(59s);
  EXPECT_TRUE(device_.sent.empty());
  timers_.advance(1s);
  ASSERT_EQ(device_.sent.size(), 1u);
  expect_error(last(), Icmpv6Header::kTimeExceeded, Icmpv6Header::kReassemblyTimeExceeded, 0, pieces[0]);
  EXPECT_EQ(stack_->stats().ipv6_reassembly_timeouts, 1u);
  // Without the first fragment: dropped silently (RFC 8200 §4.5). (Meanwhile neighbour
  // unreachability detection probes the peer: only Time Exceeded messages are counted.)
  inject_ipv6(pieces[1]);
  timers_.advance(60s);
  size_t time_exceeded = 0;
  for (const Bytes& frame : device_.sent) time_exceeded += SentFrame::parse(frame).icmp.type == Icmpv6Header::kTimeExceeded;
  EXPECT_EQ(time_exceeded, 1u);
  EXPECT_EQ(stack_->stats().ipv6_reassembly_timeouts, 2u);
}

TEST_F(Ipv6LayerTest, ReassemblyIsBounded) {
  settings_.ipv6.reassembly_max_datagrams = 2;
  restart();
  learn_peer();
  for (uint32_t id = 1; id <= 3; ++id)
    inject_ipv6(fragments(kIpv6Icmpv6, echo_request(kPeerIp, kOurIp, 1, 1, data(100)), {48}, id)[0]);
  EXPECT_EQ(stack_->ipv6().reassembler().datagrams_in_progress(), 2u);
  EXPECT_EQ(stack_->stats().ipv6_reassembly_dropped, 1u);
}

TEST_F(Ipv6LayerTest, ABadFragmentLengthGetsAParameterProblem) {
  // RFC 8200 §4.5: M set and a length that is not a multiple of 8: code 0, pointer to the
  // Payload Length field.
  const Bytes echo = echo_request(kPeerIp, kOurIp, 1, 1, data(40));
  const Bytes bad = ipv6(kPeerIp, kOurIp, kIpv6Fragment,
                         concat(fragment_header(kIpv6Icmpv6, 0, true, 3), Bytes(echo.begin(), echo.begin() + 20)));
  inject_ipv6(bad);
  ASSERT_EQ(device_.sent.size(), 1u);
  expect_error(last(), Icmpv6Header::kParameterProblem, Ipv6ParameterProblem::kErroneousHeaderField, 4, bad);
}

TEST_F(Ipv6LayerTest, AFirstFragmentWithoutTheWholeHeaderChainIsRefused) {
  // RFC 8200 §4.5, RFC 7112 §5: Parameter Problem code 3, the fragment discarded.
  const Bytes tcp_cut = ipv6(kPeerIp, kOurIp, kIpv6Fragment, concat(fragment_header(kIpv6Tcp, 0, true, 50), data(16)));
  inject_ipv6(tcp_cut);  // 16 of the TCP header's 20 bytes
  ASSERT_EQ(device_.sent.size(), 1u);
  expect_error(last(), Icmpv6Header::kParameterProblem, Ipv6ParameterProblem::kIncompleteHeaderChain, 0, tcp_cut);
  // A Destination Options header of 24 bytes (Hdr Ext Len 2) in a 16-byte first fragment.
  Bytes options(16, 0);
  options[0] = kIpv6Icmpv6;
  options[1] = 2;
  options[2] = 1;  // PadN over the rest
  options[3] = 12;
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6Fragment, concat(fragment_header(kIpv6DestinationOptions, 0, true, 51), options)));
  EXPECT_EQ(device_.sent.size(), 2u);
  EXPECT_EQ(stack_->ipv6().reassembler().datagrams_in_progress(), 0u);
  EXPECT_EQ(stack_->stats().rx_malformed_ipv6, 2u);
  // A later fragment is not held to it; a first fragment with the whole chain is fine.
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6Fragment, concat(fragment_header(kIpv6Tcp, 8, true, 52), data(8))));
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6Fragment, concat(fragment_header(kIpv6Tcp, 0, true, 53), data(24))));
  EXPECT_EQ(stack_->ipv6().reassembler().datagrams_in_progress(), 2u);
  EXPECT_EQ(device_.sent.size(), 2u);
}

TEST_F(Ipv6LayerTest, LargeEchoReplyIsFragmentedAtTheSource) {
  // 3000 bytes of echo data arrive in fragments; the reply is larger than the 1500-byte MTU.
  const Bytes message = echo_request(kPeerIp, kOurIp, 4, 4, data(3000));
  for (const Bytes& p : fragments(kIpv6Icmpv6, message, {1400, 2800}, 31)) inject_ipv6(p);
  ASSERT_EQ(device_.sent.size(), 3u);
  Bytes reassembled;
  uint32_t identification = 0;
  for (size_t i = 0; i < device_.sent.size(); ++i) {
    const Bytes& frame = device_.sent[i];
    EXPECT_LE(frame.size() - EthernetHeader::kLength, 1500u);
    SentFrame f = SentFrame::parse(frame);
    ASSERT_EQ(f.ip.next_header, kIpv6Fragment);
    Ipv6FragmentHeader fh;
    ASSERT_EQ(Ipv6FragmentHeader::parse(f.l4.data(), f.l4.size(), fh), nullptr);
    EXPECT_EQ(fh.next_header, kIpv6Icmpv6);
    EXPECT_EQ(fh.offset_bytes, reassembled.size());
    EXPECT_EQ(fh.more_fragments, i + 1 < device_.sent.size());
    if (i == 0) identification = fh.identification;
    EXPECT_EQ(fh.identification, identification);
    if (fh.more_fragments) {
      EXPECT_EQ((f.l4.size() - Ipv6FragmentHeader::kLength) % 8, 0u);
    }
    reassembled.insert(reassembled.end(), f.l4.begin() + Ipv6FragmentHeader::kLength, f.l4.end());
  }
  ASSERT_EQ(reassembled.size(), message.size());
  BufferList whole;
  whole.append_copy(reassembled.data(), reassembled.size());
  Icmpv6Header reply;
  ASSERT_EQ(Icmpv6Header::parse(whole, kOurIp, kPeerIp, reply), nullptr);
  EXPECT_EQ(reply.type, Icmpv6Header::kEchoReply);
  EXPECT_EQ(Bytes(reassembled.begin() + Icmpv6Header::kLength, reassembled.end()), data(3000));
}

TEST_F(Ipv6LayerTest, OutputPicksTheNextHopAndRefusesWhatItCannotSend) {
  EXPECT_FALSE(send_to(v6("2001:db9::5")));  // off our /64 and no gateway
  EXPECT_EQ(stack_->stats().ipv6_tx_no_route, 1u);
  EXPECT_FALSE(send_to(kPeerIp, 1500));  // larger than the MTU, fragmenting not allowed
  EXPECT_EQ(stack_->stats().ipv6_tx_too_big, 1u);
  EXPECT_TRUE(device_.sent.empty());
  ASSERT_TRUE(send_to(kPeerIp, 1460));  // exactly the MTU
  EXPECT_EQ(device_.sent.back().size(), EthernetHeader::kLength + 1500);
  ASSERT_TRUE(send_to(v6("fe80::9")));  // link-local: on-link whatever the prefix
  EXPECT_EQ(last().icmp.type, Icmpv6Header::kNeighborSolicitation);
  EXPECT_EQ(last().ip.destination, v6("fe80::9").solicited_node_multicast());
}

TEST_F(Ipv6LayerTest, OffLinkDestinationsGoThroughTheGateway) {
  settings_.ipv6.gateway = v6("fe80::1");
  settings_.ipv6.prefix_length = 120;
  restart();
  stack_->neighbors().learn(v6("fe80::1"), kOtherMac, true);
  ASSERT_TRUE(send_to(v6("2001:db8::1:5")));  // outside 2001:db8::/120
  EXPECT_EQ(last().eth.destination, kOtherMac);
  EXPECT_EQ(last().ip.destination, v6("2001:db8::1:5"));
  ASSERT_TRUE(send_to(v6("2001:db8::ff")));  // inside: resolved itself
  EXPECT_EQ(last().icmp.type, Icmpv6Header::kNeighborSolicitation);
}

TEST_F(Ipv6LayerTest, PacketTooBigLowersThePathMtuNeverBelow1280) {
  std::vector<uint32_t> reported;
  stack_->ipv6().icmp().set_error_receiver(
      [&](const Icmpv6Header& error, const Ipv6Header& quoted, const uint8_t*, size_t length) {
        EXPECT_EQ(quoted.destination, kPeerIp);
        EXPECT_GE(length, 8u);
        reported.push_back(error.mtu());
      });
  // Quoting an echo reply of ours: no TCP connection to check it against (RFC 5927 §4.1 is for
  // TCP quotes; TcpIpv6Test covers those).
  auto too_big = [&](uint32_t mtu, const Ipv6Address& quoted_source, uint8_t protocol = kIpv6Icmpv6) {
    const Bytes quoted = ipv6(quoted_source, kPeerIp, protocol, data(1400));
    inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6Icmpv6,
                     icmpv6(kPeerIp, kOurIp, Icmpv6Header::kPacketTooBig, 0, mtu,
                            Bytes(quoted.begin(), quoted.begin() + 1232))));
  };
  EXPECT_EQ(stack_->ipv6().path_mtu(kPeerIp), 1500u);
  // About a TCP segment of no connection: not validated (RFC 5927 §4.1), the path MTU stays and
  // TCP is not told.
  too_big(1300, kOurIp, kIpv6Tcp);
  EXPECT_EQ(stack_->ipv6().path_mtu(kPeerIp), 1500u);
  too_big(1400, kOurIp);
  EXPECT_EQ(stack_->ipv6().path_mtu(kPeerIp), 1400u);
  EXPECT_EQ(stack_->ipv6().path_mtu(v6("2001:db8::3")), 1500u);  // per destination
  too_big(1450, kOurIp);  // RFC 8201 §4: never raised by a Packet Too Big
  EXPECT_EQ(stack_->ipv6().path_mtu(kPeerIp), 1400u);
  too_big(600, kOurIp);  // below the IPv6 minimum: 1280
  EXPECT_EQ(stack_->ipv6().path_mtu(kPeerIp), 1280u);
  too_big(1300, v6("2001:db8::3"));  // about a packet that was not ours: ignored
  EXPECT_EQ(stack_->stats().icmpv6_packet_too_big_received, 4u);
  EXPECT_EQ(stack_->stats().icmpv6_packet_too_big_unvalidated, 1u);
  EXPECT_EQ(reported, (std::vector<uint32_t>{1400, 1450, 600}));
  // Sending follows it, fragmenting at the source when allowed.
  EXPECT_FALSE(send_to(kPeerIp, 1300));
  ASSERT_TRUE(send_to(kPeerIp, 1300, true));
  EXPECT_EQ(device_.sent.size(), 2u);
  for (const Bytes& frame : device_.sent) EXPECT_LE(frame.size() - EthernetHeader::kLength, 1280u);
  // RFC 8201 §4: forgotten after the timeout, the link MTU applies again.
  timers_.advance(settings_.ipv6.path_mtu_timeout);
  EXPECT_EQ(stack_->ipv6().path_mtu(kPeerIp), 1500u);
}

TEST_F(Ipv6LayerTest, RouterMessagesAreValidatedAndIgnored) {
  Bytes ra(RouterAdvertisement::kLength, 0);
  ra[0] = Icmpv6Header::kRouterAdvertisement;
  const Ipv6Address router = v6("fe80::1");
  const Ipv6Address all = Ipv6Address::all_nodes();
  store_be16(ra.data() + 2, icmpv6_checksum(router, all, ra.data(), ra.size()));
  inject(ethernet(all.multicast_mac(), kOtherMac, ipv6(router, all, kIpv6Icmpv6, ra, 255)));
  EXPECT_EQ(stack_->stats().rx_malformed_nd, 0u);
  inject(ethernet(all.multicast_mac(), kOtherMac, ipv6(router, all, kIpv6Icmpv6, ra, 64)));  // not 255
  EXPECT_EQ(stack_->stats().rx_malformed_nd, 1u);
  EXPECT_TRUE(device_.sent.empty());
}

// Two stacks over the in-memory wire: a's echo request resolves b by ND, b answers, and a big
// request and its reply both travel fragmented and are reassembled.
struct EchoOverIpv6 {
  TwoHosts hosts{7, [] {
    InetSettings s;
    s.ipv6.address = v6("2001:db8::");
    return s;
  }()};
  std::vector<Bytes> replies;
  EchoOverIpv6() {
    hosts.a->ipv6().icmp().set_echo_reply_receiver(
        [this](const Ipv6Header& ip, const Icmpv6Header& icmp, const BufferList& message) {
          EXPECT_EQ(ip.source, hosts.settings_b.ipv6.address);
          EXPECT_EQ(icmp.type, Icmpv6Header::kEchoReply);
          const std::string bytes = message.to_string();
          replies.emplace_back(bytes.begin(), bytes.end());
        });
  }
  bool ping(size_t data_bytes, uint16_t sequence) {
    const Ipv6Address& from = hosts.settings_a.ipv6.address;
    const Ipv6Address& to = hosts.settings_b.ipv6.address;
    Bytes body(data_bytes);
    for (size_t i = 0; i < data_bytes; ++i) body[i] = static_cast<uint8_t>(i * 13 + sequence);
    const Bytes message = echo_request(from, to, 0x4242, sequence, body);
    Packet frame;
    frame.data.append(BufferSegment::allocate(kIpv6FrameHeadroom));
    frame.data.append_copy(message.data(), message.size());
    const size_t before = replies.size();
    if (!hosts.a->ipv6().send(to, kIpv6Icmpv6, std::move(frame), true)) return false;
    if (!hosts.run_until([&] { return replies.size() > before; }, 5s)) return false;
    return Bytes(replies.back().begin() + Icmpv6Header::kLength, replies.back().end()) == body;
  }
};

TEST(Ipv6TwoHostsTest, PingResolvesTheNeighbourAndGetsTheReply) {
  EchoOverIpv6 t;
  ASSERT_TRUE(t.ping(56, 1));
  EXPECT_EQ(t.hosts.a->stats().nd_solicitations_sent, 1u);
  EXPECT_EQ(t.hosts.b->stats().nd_advertisements_sent, 3u);  // its two announcements after DAD, and the answer
  EXPECT_EQ(t.hosts.a->neighbors().state(t.hosts.settings_b.ipv6.address), NeighborState::Reachable);
  EXPECT_EQ(t.hosts.a->neighbors().lookup(t.hosts.settings_b.ipv6.address), mac_of(2));
  // b learned a from the solicitation (STALE) and answered straight to its link-layer address.
  EXPECT_EQ(t.hosts.b->neighbors().lookup(t.hosts.settings_a.ipv6.address), mac_of(1));
  ASSERT_TRUE(t.ping(0, 2));
  EXPECT_EQ(t.hosts.a->stats().nd_solicitations_sent, 1u);  // resolved: no more solicitations
}

TEST(Ipv6TwoHostsTest, LargePingTravelsFragmentedBothWays) {
  EchoOverIpv6 t;
  ASSERT_TRUE(t.ping(4000, 1));
  EXPECT_EQ(t.hosts.b->stats().ipv6_reassembly_completed, 1u);
  EXPECT_EQ(t.hosts.a->stats().ipv6_reassembly_completed, 1u);
  EXPECT_EQ(t.hosts.b->stats().icmpv6_echo_replies_sent, 1u);
}

// Valid seeds of every kind the layer handles, then mutated: every frame must be counted and
// dropped or answered, the stack must stay bounded and keep working.
TEST_F(Ipv6LayerTest, RandomAndMutatedFramesAreCountedNeverFatal) {
  const Ipv6Address group = kOurIp.solicited_node_multicast();
  std::vector<Bytes> seeds = {
      ipv6(kPeerIp, kOurIp, kIpv6Icmpv6, echo_request(kPeerIp, kOurIp, 1, 1, data(32))),
      ipv6(kPeerIp, group, kIpv6Icmpv6, neighbor_solicitation(kPeerIp, group, kOurIp, kPeerMac), 255),
      ipv6(kPeerIp, kOurIp, kIpv6Icmpv6, neighbor_advertisement(kPeerIp, kOurIp, kPeerIp, kOtherMac, true, true), 255),
      ipv6(kPeerIp, kOurIp, kIpv6DestinationOptions, concat(destination_options(kIpv6Icmpv6, 0x9e), data(16))),
      ipv6(kPeerIp, kOurIp, kIpv6HopByHop,
           concat(destination_options(kIpv6Routing, 1), Bytes{kIpv6Icmpv6, 0, 0, 1, 0, 0, 0, 0})),
      ipv6(kPeerIp, kOurIp, kIpv6Icmpv6,
           icmpv6(kPeerIp, kOurIp, Icmpv6Header::kPacketTooBig, 0, 1300, ipv6(kOurIp, kPeerIp, kIpv6Tcp, data(40)))),
  };
  for (const Bytes& f : fragments(kIpv6Icmpv6, echo_request(kPeerIp, kOurIp, 1, 1, data(200)), {64, 128}, 5))
    seeds.push_back(f);
  std::mt19937_64 rng(1234);
  for (int i = 0; i < 20000; ++i) {
    Bytes packet = seeds[rng() % seeds.size()];
    switch (rng() % 4) {
      case 0:  // flip bytes
        for (int n = 1 + static_cast<int>(rng() % 4); n > 0; --n) packet[rng() % packet.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
        break;
      case 1:  // cut short
        packet.resize(rng() % packet.size());
        break;
      case 2:  // random bytes behind a fixed header
        packet.resize(Ipv6Header::kLength + rng() % 200);
        for (size_t b = Ipv6Header::kLength; b < packet.size(); ++b) packet[b] = static_cast<uint8_t>(rng());
        store_be16(packet.data() + 4, static_cast<uint16_t>(packet.size() - Ipv6Header::kLength));
        packet[6] = static_cast<uint8_t>(rng() % 4 == 0 ? rng() : seeds[0][6]);
        break;
      default:  // as it is (fragments fill and time out the reassembler)
        break;
    }
    inject(ethernet(i % 3 == 0 ? group.multicast_mac() : kOurMac, kPeerMac, packet));
    if (i % 1000 == 0) timers_.advance(7s);
  }
  EXPECT_LE(stack_->ipv6().reassembler().datagrams_in_progress(), settings_.ipv6.reassembly_max_datagrams);
  EXPECT_LE(stack_->neighbors().entries().size(), settings_.ipv6.nd_max_entries);
  EXPECT_GT(stack_->stats().rx_malformed_ipv6, 0u);
  EXPECT_GT(stack_->stats().rx_malformed_icmpv6, 0u);
  EXPECT_GT(stack_->stats().rx_malformed_nd, 0u);
  // Still answering.
  timers_.advance(120s);
  learn_peer();
  device_.sent.clear();
  inject_ipv6(seeds[0]);
  ASSERT_EQ(device_.sent.size(), 1u);
  EXPECT_EQ(last().icmp.type, Icmpv6Header::kEchoReply);
  // Destroying the stack cancels every timer it armed (reassembly, neighbour lines).
  stack_.reset();
  EXPECT_EQ(timers_.pending(), 0u);
}

}  // namespace
}  // namespace bypass::inet::test
