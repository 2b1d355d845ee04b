// Neighbor Discovery (RFC 4861) in one stack: address resolution with multicast solicitations
// and their retransmission, the bounded pending queue, the reachability states of §7.3.2 on the
// virtual clock, answering solicitations, cache updates from solicitations and advertisements, the
// drop-and-count of invalid messages, and replication between replicas.
#include <gtest/gtest.h>

#include "tests/unit/inet/ipv6_frames.h"

namespace bypass::inet::test {
namespace {

using NeighborCacheTest = Ipv6StackTest;

// Checks that `f` is a Neighbor Solicitation for `target` carrying our link-layer address, sent
// with hop limit 255 (RFC 4861 §7.1.1) from our address.
void expect_solicitation(const SentFrame& f, const Ipv6Address& target) {
  ASSERT_TRUE(f.icmp_ok);
  EXPECT_EQ(f.icmp.type, Icmpv6Header::kNeighborSolicitation);
  EXPECT_EQ(f.ip.hop_limit, 255);
  EXPECT_EQ(f.ip.source, kOurIp);
  NeighborSolicitation ns;
  ASSERT_EQ(NeighborSolicitation::parse(f.l4.data(), f.l4.size(), ns), nullptr);
  EXPECT_EQ(ns.target, target);
  ASSERT_TRUE(ns.options.source_link_layer);
  EXPECT_EQ(*ns.options.source_link_layer, kOurMac);
}

TEST_F(NeighborCacheTest, ResolutionSolicitsTheSolicitedNodeGroup) {
  ASSERT_TRUE(send_to(kPeerIp));
  ASSERT_EQ(device_.sent.size(), 1u);
  SentFrame f = last();
  expect_solicitation(f, kPeerIp);
  // RFC 4291 §2.7.1 group ff02::1:ff00:2 and its Ethernet mapping 33:33:ff:00:00:02 (RFC 2464 §7).
  EXPECT_EQ(f.ip.destination, v6("ff02::1:ff00:2"));
  EXPECT_EQ(f.eth.destination, (MacAddress{{0x33, 0x33, 0xff, 0x00, 0x00, 0x02}}));
  EXPECT_EQ(f.eth.source, kOurMac);
  EXPECT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Incomplete);
  EXPECT_EQ(stack_->neighbors().pending_packets(), 1u);
  EXPECT_EQ(stack_->stats().nd_solicitations_sent, 1u);
}

TEST_F(NeighborCacheTest, SolicitedAdvertisementCompletesResolutionAndSendsTheQueue) {
  std::vector<std::pair<Ipv6Address, bool>> learned;
  stack_->neighbors().set_learn_hook(
      [&](const Ipv6Address& ip, MacAddress mac, bool reachable) {
        EXPECT_EQ(mac, kPeerMac);
        learned.emplace_back(ip, reachable);
      });
  ASSERT_TRUE(send_to(kPeerIp));
  ASSERT_TRUE(send_to(kPeerIp, 16));
  ASSERT_EQ(device_.sent.size(), 1u);  // one solicitation, two packets waiting
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6Icmpv6,
                   neighbor_advertisement(kPeerIp, kOurIp, kPeerIp, kPeerMac, true, true), 255));
  ASSERT_EQ(device_.sent.size(), 3u);
  for (size_t i = 1; i < 3; ++i) {
    SentFrame f = SentFrame::parse(device_.sent[i]);
    EXPECT_EQ(f.eth.destination, kPeerMac);
    EXPECT_EQ(f.ip.destination, kPeerIp);
    EXPECT_EQ(f.ip.next_header, 253);
    EXPECT_EQ(f.ip.hop_limit, 64);
  }
  EXPECT_EQ(SentFrame::parse(device_.sent[2]).l4.size(), 16u);  // in the order queued
  EXPECT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Reachable);
  EXPECT_EQ(stack_->neighbors().pending_packets(), 0u);
  ASSERT_EQ(learned.size(), 1u);
  EXPECT_EQ(learned[0], std::make_pair(kPeerIp, true));
  // No more solicitations once resolved.
  timers_.advance(5s);
  EXPECT_EQ(stack_->stats().nd_solicitations_sent, 1u);
}

TEST_F(NeighborCacheTest, ThreeSolicitationsOneSecondApartThenResolutionFails) {
  ASSERT_TRUE(send_to(kPeerIp));
  ASSERT_TRUE(send_to(kPeerIp));
  timers_.advance(999ms);
  EXPECT_EQ(device_.sent.size(), 1u);
  timers_.advance(1ms);
  EXPECT_EQ(device_.sent.size(), 2u);  // RETRANS_TIMER
  timers_.advance(1s);
  ASSERT_EQ(device_.sent.size(), 3u);  // MAX_MULTICAST_SOLICIT
  for (const Bytes& frame : device_.sent) expect_solicitation(SentFrame::parse(frame), kPeerIp);
  EXPECT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Incomplete);
  timers_.advance(1s);  // RETRANS_TIMER after the last one: failed
  EXPECT_EQ(device_.sent.size(), 3u);
  EXPECT_FALSE(stack_->neighbors().state(kPeerIp));
  EXPECT_EQ(stack_->stats().nd_resolution_failed, 1u);
  EXPECT_EQ(stack_->stats().nd_pending_dropped, 2u);
  EXPECT_EQ(stack_->neighbors().pending_packets(), 0u);
  // The next packet starts afresh.
  ASSERT_TRUE(send_to(kPeerIp));
  EXPECT_EQ(device_.sent.size(), 4u);
}

TEST_F(NeighborCacheTest, PendingQueueIsBoundedPerAddress) {
  for (int i = 0; i < 6; ++i) send_to(kPeerIp);
  EXPECT_EQ(stack_->neighbors().pending_packets(), 4u);  // nd_pending_per_address
  EXPECT_EQ(stack_->stats().nd_pending_dropped, 2u);
  EXPECT_EQ(device_.sent.size(), 1u);
}

TEST_F(NeighborCacheTest, CacheIsBoundedAndUnconfirmedLinesMakeRoom) {
  settings_.ipv6.nd_max_entries = 2;
  restart();
  // Lines being resolved are kept: the third address finds no room.
  send_to(v6("2001:db8::a"));
  send_to(v6("2001:db8::b"));
  send_to(v6("2001:db8::c"));
  EXPECT_EQ(stack_->neighbors().entries().size(), 2u);
  EXPECT_EQ(stack_->stats().nd_cache_full, 1u);
  EXPECT_EQ(device_.sent.size(), 2u);
  // A reachable line stays too; a STALE one (here learned from a solicitation's source, never
  // confirmed) gives way to a new neighbour.
  stack_->neighbors().learn(v6("2001:db8::a"), kPeerMac, true);
  stack_->neighbors().learn(v6("2001:db8::b"), kOtherMac, false);
  ASSERT_TRUE(send_to(v6("2001:db8::c")));
  EXPECT_EQ(stack_->neighbors().state(v6("2001:db8::c")), NeighborState::Incomplete);
  EXPECT_FALSE(stack_->neighbors().state(v6("2001:db8::b")));
  EXPECT_EQ(stack_->neighbors().state(v6("2001:db8::a")), NeighborState::Reachable);
  EXPECT_EQ(stack_->stats().nd_cache_full, 1u);
  // Solicitations from ever new sources cannot push out the lines in use.
  const Ipv6Address group = kOurIp.solicited_node_multicast();
  for (int i = 0; i < 10; ++i) {
    Ipv6Address source = v6("2001:db8::1:0");
    source.bytes[15] = static_cast<uint8_t>(i);
    inject(ethernet(group.multicast_mac(), kOtherMac,
                    ipv6(source, group, kIpv6Icmpv6, neighbor_solicitation(source, group, kOurIp, kOtherMac), 255)));
  }
  EXPECT_EQ(stack_->neighbors().state(v6("2001:db8::a")), NeighborState::Reachable);
  EXPECT_EQ(stack_->neighbors().state(v6("2001:db8::c")), NeighborState::Incomplete);
  // Each is still answered, straight to its link-layer address, though no line could be made.
  size_t answers = 0;
  for (const Bytes& frame : device_.sent) {
    const SentFrame f = SentFrame::parse(frame);
    answers += f.icmp.type == Icmpv6Header::kNeighborAdvertisement && f.eth.destination == kOtherMac;
  }
  EXPECT_EQ(answers, 10u);
}

TEST_F(NeighborCacheTest, AnswersASolicitationForOurAddressAndCachesTheSolicitor) {
  // §7.2.3, §7.2.4: to our solicited-node group, with the solicitor's link-layer address.
  const Ipv6Address group = kOurIp.solicited_node_multicast();
  inject(ethernet(group.multicast_mac(), kPeerMac,
                  ipv6(kPeerIp, group, kIpv6Icmpv6, neighbor_solicitation(kPeerIp, group, kOurIp, kPeerMac), 255)));
  ASSERT_EQ(device_.sent.size(), 1u);
  SentFrame f = last();
  ASSERT_TRUE(f.icmp_ok);
  EXPECT_EQ(f.icmp.type, Icmpv6Header::kNeighborAdvertisement);
  EXPECT_EQ(f.eth.destination, kPeerMac);
  EXPECT_EQ(f.ip.destination, kPeerIp);
  EXPECT_EQ(f.ip.source, kOurIp);
  EXPECT_EQ(f.ip.hop_limit, 255);
  NeighborAdvertisement na;
  ASSERT_EQ(NeighborAdvertisement::parse(f.l4.data(), f.l4.size(), na), nullptr);
  EXPECT_EQ(na.target, kOurIp);
  EXPECT_TRUE(na.solicited);
  EXPECT_TRUE(na.override_flag);
  EXPECT_FALSE(na.router);
  ASSERT_TRUE(na.options.target_link_layer);
  EXPECT_EQ(*na.options.target_link_layer, kOurMac);
  // The solicitor is now cached STALE (not confirmed reachable) with its address.
  EXPECT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Stale);
  EXPECT_EQ(stack_->neighbors().lookup(kPeerIp), kPeerMac);
  EXPECT_EQ(stack_->stats().nd_advertisements_sent, 1u);
}

TEST_F(NeighborCacheTest, SolicitationSourceCompletesAnIncompleteLine) {
  ASSERT_TRUE(send_to(kPeerIp));
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6Icmpv6, neighbor_solicitation(kPeerIp, kOurIp, kOurIp, kPeerMac), 255));
  // The queued packet left, then our advertisement.
  ASSERT_EQ(device_.sent.size(), 3u);
  EXPECT_EQ(SentFrame::parse(device_.sent[1]).ip.next_header, 253);
  EXPECT_EQ(SentFrame::parse(device_.sent[2]).icmp.type, Icmpv6Header::kNeighborAdvertisement);
  EXPECT_EQ(stack_->neighbors().lookup(kPeerIp), kPeerMac);
}

TEST_F(NeighborCacheTest, DuplicateAddressDetectionProbeIsAnsweredToAllNodes) {
  const Ipv6Address group = kOurIp.solicited_node_multicast();
  inject(ethernet(group.multicast_mac(), kPeerMac,
                  ipv6(Ipv6Address{}, group, kIpv6Icmpv6,
                       neighbor_solicitation(Ipv6Address{}, group, kOurIp, std::nullopt), 255)));
  ASSERT_EQ(device_.sent.size(), 1u);
  SentFrame f = last();
  EXPECT_EQ(f.ip.destination, Ipv6Address::all_nodes());
  EXPECT_EQ(f.eth.destination, (MacAddress{{0x33, 0x33, 0, 0, 0, 1}}));
  NeighborAdvertisement na;
  ASSERT_EQ(NeighborAdvertisement::parse(f.l4.data(), f.l4.size(), na), nullptr);
  EXPECT_FALSE(na.solicited);
  EXPECT_TRUE(stack_->neighbors().entries().empty());
}

TEST_F(NeighborCacheTest, InvalidSolicitationsAreCountedAndDropped) {
  const Ipv6Address group = kOurIp.solicited_node_multicast();
  auto send = [&](const Bytes& message, uint8_t hop_limit) {
    inject(ethernet(group.multicast_mac(), kPeerMac, ipv6(kPeerIp, group, kIpv6Icmpv6, message, hop_limit)));
  };
  send(neighbor_solicitation(kPeerIp, group, kOurIp, kPeerMac), 254);  // came through a router
  EXPECT_EQ(stack_->stats().rx_malformed_nd, 1u);
  Bytes bad_code = neighbor_solicitation(kPeerIp, group, kOurIp, kPeerMac);
  bad_code[1] = 1;
  store_be16(bad_code.data() + 2, 0);
  store_be16(bad_code.data() + 2, icmpv6_checksum(kPeerIp, group, bad_code.data(), bad_code.size()));
  send(bad_code, 255);
  EXPECT_EQ(stack_->stats().rx_malformed_nd, 2u);
  Bytes zero_option = neighbor_solicitation(kPeerIp, group, kOurIp, kPeerMac);
  zero_option[NeighborSolicitation::kLength + 1] = 0;  // option length 0 (§4.6)
  store_be16(zero_option.data() + 2, 0);
  store_be16(zero_option.data() + 2, icmpv6_checksum(kPeerIp, group, zero_option.data(), zero_option.size()));
  send(zero_option, 255);
  EXPECT_EQ(stack_->stats().rx_malformed_nd, 3u);
  send(neighbor_solicitation(kPeerIp, group, v6("2001:db8::99"), kPeerMac), 255);  // not our address
  EXPECT_EQ(stack_->stats().nd_target_not_ours, 1u);
  Bytes bad_sum = neighbor_solicitation(kPeerIp, group, kOurIp, kPeerMac);
  bad_sum[10] ^= 1;
  send(bad_sum, 255);
  EXPECT_EQ(stack_->stats().rx_malformed_icmpv6, 1u);
  EXPECT_TRUE(device_.sent.empty());
  EXPECT_TRUE(stack_->neighbors().entries().empty());
}

TEST_F(NeighborCacheTest, UnsolicitedAdvertisementsCreateNoLine) {
  inject(ethernet(MacAddress{{0x33, 0x33, 0, 0, 0, 1}}, kPeerMac,
                  ipv6(kPeerIp, Ipv6Address::all_nodes(), kIpv6Icmpv6,
                       neighbor_advertisement(kPeerIp, Ipv6Address::all_nodes(), kPeerIp, kPeerMac, false, true),
                       255)));
  EXPECT_TRUE(stack_->neighbors().entries().empty());  // §7.2.5
  EXPECT_EQ(stack_->stats().rx_malformed_nd, 0u);
  // Solicited flag to a multicast destination is invalid (§7.1.2).
  inject(ethernet(MacAddress{{0x33, 0x33, 0, 0, 0, 1}}, kPeerMac,
                  ipv6(kPeerIp, Ipv6Address::all_nodes(), kIpv6Icmpv6,
                       neighbor_advertisement(kPeerIp, Ipv6Address::all_nodes(), kPeerIp, kPeerMac, true, true),
                       255)));
  EXPECT_EQ(stack_->stats().rx_malformed_nd, 1u);
}

TEST_F(NeighborCacheTest, AdvertisementOfOurOwnAddressIsCounted) {
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6Icmpv6,
                   neighbor_advertisement(kPeerIp, kOurIp, kOurIp, kPeerMac, true, true), 255));
  EXPECT_EQ(stack_->stats().nd_duplicate_address, 1u);
  EXPECT_TRUE(stack_->neighbors().entries().empty());
}

TEST_F(NeighborCacheTest, ReachableGoesStaleThenDelayThenProbesByUnicast) {
  learn_peer();
  EXPECT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Reachable);
  timers_.advance(settings_.ipv6.nd_reachable_time);  // §7.3.3: ReachableTime passed
  EXPECT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Stale);
  ASSERT_TRUE(send_to(kPeerIp));  // a STALE line still sends, then waits in DELAY
  ASSERT_EQ(device_.sent.size(), 1u);
  EXPECT_EQ(last().eth.destination, kPeerMac);
  EXPECT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Delay);
  timers_.advance(settings_.ipv6.nd_delay_first_probe);
  EXPECT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Probe);
  ASSERT_EQ(device_.sent.size(), 2u);
  SentFrame probe = last();
  expect_solicitation(probe, kPeerIp);
  EXPECT_EQ(probe.ip.destination, kPeerIp);  // unicast, to the cached address
  EXPECT_EQ(probe.eth.destination, kPeerMac);
  ASSERT_TRUE(send_to(kPeerIp));  // PROBE still sends to the cached address
  EXPECT_EQ(last().eth.destination, kPeerMac);
  timers_.advance(2s);
  EXPECT_EQ(stack_->stats().nd_solicitations_sent, 3u);  // MAX_UNICAST_SOLICIT
  timers_.advance(1s);
  EXPECT_FALSE(stack_->neighbors().state(kPeerIp));  // §7.3.3: deleted
  EXPECT_EQ(stack_->stats().nd_resolution_failed, 1u);
}

TEST_F(NeighborCacheTest, ProbeAnsweredMakesTheLineReachableAgain) {
  learn_peer();
  timers_.advance(settings_.ipv6.nd_reachable_time);
  send_to(kPeerIp);
  timers_.advance(settings_.ipv6.nd_delay_first_probe);
  ASSERT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Probe);
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6Icmpv6,
                   neighbor_advertisement(kPeerIp, kOurIp, kPeerIp, kPeerMac, true, false), 255));
  EXPECT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Reachable);
  timers_.advance(10s);
  EXPECT_EQ(stack_->stats().nd_solicitations_sent, 1u);  // no more probes
}

TEST_F(NeighborCacheTest, UpperLayerConfirmationAvoidsTheProbe) {
  learn_peer();
  timers_.advance(settings_.ipv6.nd_reachable_time);
  send_to(kPeerIp);
  ASSERT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Delay);
  stack_->neighbors().confirm_reachable(kPeerIp);  // §7.3.1, e.g. TCP saw its data acknowledged
  timers_.advance(settings_.ipv6.nd_delay_first_probe);
  EXPECT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Reachable);
  EXPECT_EQ(stack_->stats().nd_solicitations_sent, 0u);
}

TEST_F(NeighborCacheTest, AdvertisementWithoutOverrideDoesNotReplaceAKnownAddress) {
  learn_peer();
  // §7.2.5: O clear and a different address: a REACHABLE line only turns STALE.
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6Icmpv6,
                   neighbor_advertisement(kPeerIp, kOurIp, kPeerIp, kOtherMac, true, false), 255));
  EXPECT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Stale);
  EXPECT_EQ(stack_->neighbors().lookup(kPeerIp), kPeerMac);
  // O set: the new address is taken; solicited, so REACHABLE.
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6Icmpv6,
                   neighbor_advertisement(kPeerIp, kOurIp, kPeerIp, kOtherMac, true, true), 255));
  EXPECT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Reachable);
  EXPECT_EQ(stack_->neighbors().lookup(kPeerIp), kOtherMac);
  // Unsolicited with O set and another address: taken, but only STALE.
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6Icmpv6,
                   neighbor_advertisement(kPeerIp, kOurIp, kPeerIp, kPeerMac, false, true), 255));
  EXPECT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Stale);
  EXPECT_EQ(stack_->neighbors().lookup(kPeerIp), kPeerMac);
}

TEST_F(NeighborCacheTest, AReplicaLearningFromAnotherWorkerSendsItsQueue) {
  ASSERT_TRUE(send_to(kPeerIp));
  stack_->neighbors().learn(kPeerIp, kPeerMac, false);
  ASSERT_EQ(device_.sent.size(), 2u);
  EXPECT_EQ(last().eth.destination, kPeerMac);
  EXPECT_EQ(stack_->neighbors().state(kPeerIp), NeighborState::Stale);
  timers_.advance(5s);
  EXPECT_EQ(stack_->stats().nd_solicitations_sent, 1u);  // the retransmission timer was cancelled
  // Nonsense is not learned.
  stack_->neighbors().learn(v6("ff02::1"), kPeerMac, true);
  stack_->neighbors().learn(v6("2001:db8::7"), MacAddress{}, true);
  EXPECT_EQ(stack_->neighbors().entries().size(), 1u);
}

// With several workers the answer to one replica's solicitation may reach another. That one has no
// line, so it learns nothing (§7.2.5) but hands the advertisement to the hook; the replica that
// asked completes its INCOMPLETE line from it, and one that did not ask creates no line.
TEST_F(NeighborCacheTest, AnAdvertisementWithNoLineGoesToTheOtherReplicasNotIntoTheCache) {
  std::vector<NeighborCache::Advertisement> handed_on;
  stack_->neighbors().set_unmatched_advertisement_hook(
      [&](const NeighborCache::Advertisement& advertisement) { handed_on.push_back(advertisement); });
  stack_->neighbors().set_learn_hook([&](const Ipv6Address&, MacAddress, bool) { ADD_FAILURE() << "learned"; });
  inject_ipv6(ipv6(kPeerIp, kOurIp, kIpv6Icmpv6,
                   neighbor_advertisement(kPeerIp, kOurIp, kPeerIp, kPeerMac, true, true), 255));
  EXPECT_TRUE(stack_->neighbors().entries().empty());
  ASSERT_EQ(handed_on.size(), 1u);
  EXPECT_EQ(handed_on[0].target, kPeerIp);
  EXPECT_EQ(handed_on[0].link_layer, kPeerMac);
  EXPECT_TRUE(handed_on[0].solicited);
  EXPECT_TRUE(handed_on[0].override_flag);
  // A replica that did not ask: still no line (an advertisement creates none).
  stack_->neighbors().learn_advertisement(handed_on[0]);
  EXPECT_TRUE(stack_->neighbors().entries().empty());

  // The replica that asked: its INCOMPLETE line turns REACHABLE (solicited) and sends what waited.
  InetStack asker(settings_, device_, timers_, 43);
  asker.start();
  timers_.advance(settings_.ipv6.nd_retrans_timer * settings_.ipv6.dad_transmits);
  asker.neighbors().set_learn_hook([&](const Ipv6Address&, MacAddress, bool) { ADD_FAILURE() << "shared back"; });
  const Ipv6Address unsolicited_target = v6("2001:db8::7");
  for (const Ipv6Address& to : {kPeerIp, unsolicited_target}) {
    Packet frame;
    frame.data.append(BufferSegment::allocate(kIpv6FrameHeadroom));
    frame.data.append_copy("payload!", 8);
    ASSERT_TRUE(asker.ipv6().send(to, 253, std::move(frame), false));
    EXPECT_EQ(asker.neighbors().state(to), NeighborState::Incomplete);
  }
  device_.sent.clear();
  asker.neighbors().learn_advertisement(handed_on[0]);
  EXPECT_EQ(asker.neighbors().state(kPeerIp), NeighborState::Reachable);
  EXPECT_EQ(asker.neighbors().lookup(kPeerIp), kPeerMac);
  ASSERT_EQ(device_.sent.size(), 1u);
  EXPECT_EQ(last().eth.destination, kPeerMac);
  EXPECT_EQ(last().ip.next_header, 253);
  // Not solicited: STALE (§7.2.5). Without the link-layer address an INCOMPLETE line stays so.
  asker.neighbors().learn_advertisement({unsolicited_target, std::nullopt, false, true});
  EXPECT_EQ(asker.neighbors().state(unsolicited_target), NeighborState::Incomplete);
  asker.neighbors().learn_advertisement({unsolicited_target, kOtherMac, false, false});
  EXPECT_EQ(asker.neighbors().state(unsolicited_target), NeighborState::Stale);
  EXPECT_EQ(asker.neighbors().lookup(unsolicited_target), kOtherMac);
  EXPECT_EQ(asker.stats().nd_pending_dropped, 0u);
}

TEST(NeighborCacheDisabledTest, WithoutAnIpv6AddressIpv6FramesAreUnsupported) {
  InetSettings settings;
  settings.address = Ipv4Address::from_octets(10, 0, 0, 1);
  RecordingDevice device;
  VirtualTimerService timers;
  InetStack stack(settings, device, timers, 1);
  stack.start();
  EXPECT_EQ(device.sent.size(), 1u);  // the gratuitous ARP only
  Bytes frame = ethernet(kOurMac, kPeerMac, ipv6(kPeerIp, kOurIp, kIpv6Icmpv6, echo_request(kPeerIp, kOurIp, 1, 1, {})));
  Packet packet;
  packet.data.append(BufferSegment::copy_of(frame.data(), frame.size()));
  stack.receive(std::move(packet));
  EXPECT_EQ(stack.stats().rx_unsupported_ethertype, 1u);
  EXPECT_EQ(device.sent.size(), 1u);
  // Nor does anything leave over IPv6 without an address.
  Packet frame_out;
  frame_out.data.append(BufferSegment::allocate(kIpv6FrameHeadroom + 8));
  EXPECT_FALSE(stack.ipv6().send(kPeerIp, 253, std::move(frame_out)));
  EXPECT_EQ(stack.stats().ipv6_tx_no_route, 1u);
  EXPECT_EQ(device.sent.size(), 1u);
}

}  // namespace
}  // namespace bypass::inet::test
