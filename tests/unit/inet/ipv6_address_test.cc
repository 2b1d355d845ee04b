// Our own IPv6 addresses on one stack (Ipv6AddressSet, stack/inet/ipv6_address_set.h): the
// link-local address formed from the MAC (RFC 4291 §2.5.6, Appendix A), Duplicate Address
// Detection of it and of the configured address (RFC 4862 §5.4: probes from ::, the tentative
// state, the two kinds of evidence of a duplicate, the announcement once an address passes), the
// groups they listen to, and source address selection (RFC 6724, simplified).
#include <gtest/gtest.h>

#include "tests/unit/inet/harness.h"
#include "tests/unit/inet/ipv6_frames.h"

namespace bypass::inet::test {
namespace {

// A stack that has not started: its addresses are tentative, nothing has been sent.
class Ipv6AddressTest : public Ipv6StackTest {
 protected:
  Ipv6AddressTest() { fresh(); }
  void fresh() {
    stack_ = std::make_unique<InetStack>(settings_, device_, timers_, 42);
    device_.sent.clear();
  }
  // The IPv6 frames sent so far, parsed (the gratuitous ARP left out).
  std::vector<SentFrame> ipv6_sent() const {
    std::vector<SentFrame> out;
    for (const Bytes& frame : device_.sent)
      if (EthernetView(frame.data(), frame.size()).ethertype() == static_cast<uint16_t>(EtherType::Ipv6)) out.push_back(SentFrame::parse(frame));
    return out;
  }
  // Another node's Duplicate Address Detection probe for `target` (RFC 4862 §5.4.2), sent from
  // the Ethernet address `from`.
  void inject_probe(const Ipv6Address& target, MacAddress from = kOtherMac) {
    const Ipv6Address group = target.solicited_node_multicast();
    inject(ethernet(group.multicast_mac(), from,
                    ipv6(Ipv6Address{}, group, kIpv6Icmpv6,
                         neighbor_solicitation(Ipv6Address{}, group, target, std::nullopt), 255)));
  }
  // An unsolicited advertisement of `target` by `owner` to all-nodes (RFC 4861 §7.2.6), as the
  // node that has the address sends to defend it (§7.2.4).
  void inject_advertisement(const Ipv6Address& target, MacAddress owner = kOtherMac) {
    const Ipv6Address all = Ipv6Address::all_nodes();
    inject(ethernet(all.multicast_mac(), owner,
                    ipv6(target, all, kIpv6Icmpv6, neighbor_advertisement(target, all, target, owner, false, true),
                         255)));
  }
  void inject_echo(const Ipv6Address& from, const Ipv6Address& to, uint16_t sequence = 1) {
    inject_ipv6(ipv6(from, to, kIpv6Icmpv6, echo_request(from, to, 7, sequence, {1, 2, 3, 4})));
  }
  std::optional<AddressState> state(const Ipv6Address& ip) { return stack_->ipv6().address_state(ip); }
  void finish_dad() { timers_.advance(settings_.ipv6.nd_retrans_timer * settings_.ipv6.dad_transmits); }
};

// Checks that `f` is a Duplicate Address Detection probe for `target` (RFC 4862 §5.4.2).
void expect_probe(const SentFrame& f, const Ipv6Address& target) {
  ASSERT_TRUE(f.icmp_ok);
  ASSERT_EQ(f.icmp.type, Icmpv6Header::kNeighborSolicitation);
  EXPECT_TRUE(f.ip.source.is_unspecified());
  EXPECT_EQ(f.ip.destination, target.solicited_node_multicast());
  EXPECT_EQ(f.eth.destination, target.solicited_node_multicast().multicast_mac());
  EXPECT_EQ(f.eth.source, kOurMac);
  EXPECT_EQ(f.ip.hop_limit, 255);
  NeighborSolicitation ns;
  ASSERT_EQ(NeighborSolicitation::parse(f.l4.data(), f.l4.size(), ns), nullptr);
  EXPECT_EQ(ns.target, target);
  EXPECT_FALSE(ns.options.source_link_layer);  // none from :: (RFC 4861 §7.1.1)
}

// Checks that `f` is an unsolicited advertisement of `target` to all-nodes, from `target`.
void expect_announcement(const SentFrame& f, const Ipv6Address& target) {
  ASSERT_TRUE(f.icmp_ok);
  ASSERT_EQ(f.icmp.type, Icmpv6Header::kNeighborAdvertisement);
  EXPECT_EQ(f.ip.source, target);
  EXPECT_EQ(f.ip.destination, Ipv6Address::all_nodes());
  NeighborAdvertisement na;
  ASSERT_EQ(NeighborAdvertisement::parse(f.l4.data(), f.l4.size(), na), nullptr);
  EXPECT_EQ(na.target, target);
  EXPECT_FALSE(na.solicited);
  EXPECT_TRUE(na.override_flag);
  EXPECT_EQ(na.options.target_link_layer, kOurMac);
}

TEST(LinkLocalAddressTest, IsTheModifiedEui64OfTheMac) {
  // RFC 2464 §4, §5's example: 34-56-78-9A-BC-DE gives fe80::3656:78ff:fe9a:bcde, the universal/
  // local bit (0x02 of the first octet) inverted (RFC 4291 Appendix A) and ff:fe in the middle.
  EXPECT_EQ(link_local_address(MacAddress{{0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde}}), v6("fe80::3656:78ff:fe9a:bcde"));
  // A universal (IEEE-assigned) MAC gets the bit set, a local one (ours: 02:...) cleared.
  EXPECT_EQ(link_local_address(MacAddress{{0x00, 0x1b, 0x21, 0x3a, 0x4c, 0x5d}}), v6("fe80::21b:21ff:fe3a:4c5d"));
  EXPECT_EQ(link_local_address(kOurMac), v6("fe80::ff:fe00:1"));
  EXPECT_TRUE(link_local_address(kOurMac).is_link_local_unicast());
}

TEST_F(Ipv6AddressTest, TheStackHasTheLinkLocalAddressOfItsMacBesidesTheConfiguredOne) {
  EXPECT_EQ(stack_->ipv6().link_local_address(), kOurLinkLocal);
  const std::vector<OwnAddressInfo> addresses = stack_->addresses().entries();
  ASSERT_EQ(addresses.size(), 2u);
  EXPECT_EQ(addresses[0].ip, kOurLinkLocal);
  EXPECT_EQ(addresses[1].ip, kOurIp);
  EXPECT_EQ(state(v6("2001:db8::2")), std::nullopt);  // not ours
  // Without a configured address IPv6 is off: no link-local address either.
  InetSettings off;
  RecordingDevice device;
  InetStack v4_only(off, device, timers_, 1);
  EXPECT_TRUE(v4_only.addresses().entries().empty());
  EXPECT_EQ(v4_only.ipv6().address_state(kOurLinkLocal), std::nullopt);
}

TEST_F(Ipv6AddressTest, StartProbesEachAddressFromTheUnspecifiedAddress) {
  EXPECT_EQ(state(kOurLinkLocal), AddressState::Tentative);
  EXPECT_EQ(state(kOurIp), AddressState::Tentative);
  stack_->start();
  const std::vector<SentFrame> sent = ipv6_sent();
  ASSERT_EQ(sent.size(), 2u);  // one probe each (DupAddrDetectTransmits 1), no advertisement yet
  expect_probe(sent[0], kOurLinkLocal);
  expect_probe(sent[1], kOurIp);
  EXPECT_EQ(stack_->stats().ipv6_dad_solicitations_sent, 2u);
  EXPECT_EQ(stack_->stats().nd_solicitations_sent, 0u);
  EXPECT_EQ(stack_->stats().nd_advertisements_sent, 0u);
  EXPECT_EQ(state(kOurIp), AddressState::Tentative);
  EXPECT_EQ(stack_->addresses().entries()[1].dad_solicitations_sent, 1);
  stack_->start();  // a second start starts nothing
  EXPECT_EQ(ipv6_sent().size(), 2u);
}

TEST_F(Ipv6AddressTest, AfterRetransTimerWithoutAnswerTheAddressesArePreferredAndAnnounced) {
  stack_->start();
  device_.sent.clear();
  timers_.advance(settings_.ipv6.nd_retrans_timer - 1ms);
  EXPECT_TRUE(device_.sent.empty());  // RFC 4862 §5.4: no advertisement of a tentative address
  EXPECT_EQ(state(kOurIp), AddressState::Tentative);
  timers_.advance(1ms);
  EXPECT_EQ(state(kOurLinkLocal), AddressState::Preferred);
  EXPECT_EQ(state(kOurIp), AddressState::Preferred);
  const std::vector<SentFrame> sent = ipv6_sent();
  ASSERT_EQ(sent.size(), 2u);
  expect_announcement(sent[0], kOurLinkLocal);
  expect_announcement(sent[1], kOurIp);
  EXPECT_EQ(stack_->stats().ipv6_dad_duplicates, 0u);
  timers_.advance(10s);  // and nothing more
  EXPECT_EQ(device_.sent.size(), 2u);
}

TEST_F(Ipv6AddressTest, SeveralTransmitsAreRetransTimerApart) {
  settings_.ipv6.dad_transmits = 3;
  fresh();
  stack_->start();
  EXPECT_EQ(ipv6_sent().size(), 2u);
  timers_.advance(1s);
  EXPECT_EQ(ipv6_sent().size(), 4u);
  timers_.advance(1s);
  ASSERT_EQ(ipv6_sent().size(), 6u);
  for (size_t i = 0; i < 6; ++i) expect_probe(ipv6_sent()[i], i % 2 == 0 ? kOurLinkLocal : kOurIp);
  EXPECT_EQ(state(kOurIp), AddressState::Tentative);
  timers_.advance(1s);  // RetransTimer after the third
  EXPECT_EQ(state(kOurIp), AddressState::Preferred);
  EXPECT_EQ(ipv6_sent().size(), 8u);
  EXPECT_EQ(stack_->stats().ipv6_dad_solicitations_sent, 6u);
}

TEST_F(Ipv6AddressTest, AnAdvertisementForATentativeAddressMakesItDuplicated) {
  stack_->start();
  inject_advertisement(kOurIp, kOtherMac);  // RFC 4862 §5.4.4
  EXPECT_EQ(state(kOurIp), AddressState::Duplicated);
  EXPECT_EQ(stack_->stats().ipv6_dad_duplicates, 1u);
  EXPECT_EQ(stack_->addresses().entries()[1].claimed_by, kOtherMac);
  inject_advertisement(kOurIp, kOtherMac);  // counted (and logged) once
  EXPECT_EQ(stack_->stats().ipv6_dad_duplicates, 1u);
  device_.sent.clear();
  finish_dad();
  // The link-local address passed and is announced; the duplicated one never is.
  EXPECT_EQ(state(kOurLinkLocal), AddressState::Preferred);
  EXPECT_EQ(state(kOurIp), AddressState::Duplicated);
  std::vector<SentFrame> sent = ipv6_sent();
  ASSERT_EQ(sent.size(), 1u);
  expect_announcement(sent[0], kOurLinkLocal);
  // No traffic from it: nothing to a global destination has a source.
  learn_peer();
  device_.sent.clear();
  EXPECT_FALSE(send_to(kPeerIp));
  EXPECT_EQ(stack_->stats().ipv6_tx_no_source, 1u);
  EXPECT_EQ(stack_->ipv6().source_address(kPeerIp), Ipv6Address{});
  // Nor to it: an echo request is not ours, a solicitation for it is not answered.
  inject_echo(kPeerIp, kOurIp);
  EXPECT_EQ(stack_->stats().rx_ipv6_not_for_us, 1u);
  const Ipv6Address group = kOurIp.solicited_node_multicast();  // the link-local's group too
  inject(ethernet(group.multicast_mac(), kPeerMac,
                  ipv6(kPeerIp, group, kIpv6Icmpv6, neighbor_solicitation(kPeerIp, group, kOurIp, kPeerMac), 255)));
  EXPECT_EQ(stack_->stats().nd_target_not_ours, 1u);
  EXPECT_TRUE(device_.sent.empty());
  // Link-local IPv6 still works.
  stack_->neighbors().learn(kPeerLinkLocal, kPeerMac, true);
  inject_echo(kPeerLinkLocal, kOurLinkLocal);
  ASSERT_EQ(device_.sent.size(), 1u);
  EXPECT_EQ(last().icmp.type, Icmpv6Header::kEchoReply);
  EXPECT_EQ(last().ip.source, kOurLinkLocal);
}

// Another worker's replica of this stack passed DAD first and announced the address; on a port that
// loops frames back (net_ring) the announcement, from our own MAC, reaches this replica while it is
// still tentative, and once preferred: ours, neither a duplicate nor a conflict.
TEST_F(Ipv6AddressTest, AnAdvertisementFromOurOwnMacIsOursLoopedBack) {
  stack_->start();
  inject_advertisement(kOurIp, kOurMac);
  EXPECT_EQ(state(kOurIp), AddressState::Tentative);
  finish_dad();
  EXPECT_EQ(state(kOurIp), AddressState::Preferred);
  inject_advertisement(kOurIp, kOurMac);
  EXPECT_EQ(stack_->stats().ipv6_dad_duplicates, 0u);
  EXPECT_EQ(stack_->stats().nd_duplicate_address, 0u);
}

TEST_F(Ipv6AddressTest, AProbeFromTheUnspecifiedAddressDuringDadMakesItDuplicated) {
  stack_->start();
  // Someone resolving the tentative address (unicast source) is ignored (RFC 4862 §5.4.3).
  const Ipv6Address group = kOurIp.solicited_node_multicast();
  inject(ethernet(group.multicast_mac(), kPeerMac,
                  ipv6(kPeerIp, group, kIpv6Icmpv6, neighbor_solicitation(kPeerIp, group, kOurIp, kPeerMac), 255)));
  EXPECT_EQ(state(kOurIp), AddressState::Tentative);
  EXPECT_TRUE(stack_->neighbors().entries().empty());
  // Our own probe looped back is no evidence.
  inject_probe(kOurIp, kOurMac);
  EXPECT_EQ(state(kOurIp), AddressState::Tentative);
  EXPECT_EQ(ipv6_sent().size(), 2u);  // our probes only: nothing answered
  // Another node probing for the same address: a duplicate for both (§5.4.3).
  inject_probe(kOurIp, kOtherMac);
  EXPECT_EQ(state(kOurIp), AddressState::Duplicated);
  EXPECT_EQ(stack_->addresses().entries()[1].claimed_by, kOtherMac);
  EXPECT_EQ(stack_->stats().ipv6_dad_duplicates, 1u);
  EXPECT_EQ(state(kOurLinkLocal), AddressState::Tentative);
  finish_dad();
  EXPECT_EQ(state(kOurLinkLocal), AddressState::Preferred);
  EXPECT_EQ(state(kOurIp), AddressState::Duplicated);
  EXPECT_EQ(ipv6_sent().size(), 3u);  // the link-local announcement only
}

TEST_F(Ipv6AddressTest, ADuplicateIsReportedToAndLearnedFromOtherReplicas) {
  std::vector<std::pair<Ipv6Address, MacAddress>> reported;
  stack_->addresses().set_duplicate_hook(
      [&](const Ipv6Address& ip, MacAddress claimed_by) { reported.emplace_back(ip, claimed_by); });
  stack_->start();
  inject_probe(kOurIp, kOtherMac);
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(reported[0], std::make_pair(kOurIp, kOtherMac));
  // Another worker's replica, told by the glue: the address is given up there too, not counted
  // twice, even once its own DAD would have passed.
  InetStack replica(settings_, device_, timers_, 43);
  replica.addresses().set_duplicate_hook([&](const Ipv6Address&, MacAddress) { ADD_FAILURE() << "reported back"; });
  replica.start();
  replica.addresses().learn_duplicate(kOurIp, kOtherMac);
  replica.addresses().learn_duplicate(v6("2001:db8::99"), kOtherMac);  // not ours: nothing
  finish_dad();
  EXPECT_EQ(replica.ipv6().address_state(kOurIp), AddressState::Duplicated);
  EXPECT_EQ(replica.ipv6().address_state(kOurLinkLocal), AddressState::Preferred);
  EXPECT_EQ(replica.addresses().entries()[1].claimed_by, kOtherMac);
  EXPECT_EQ(replica.stats().ipv6_dad_duplicates, 0u);
  EXPECT_EQ(reported.size(), 1u);
}

TEST_F(Ipv6AddressTest, InvalidProbesAreNoEvidence) {
  stack_->start();
  const Ipv6Address group = kOurIp.solicited_node_multicast();
  // From :: with a source link-layer option, or not to a solicited-node group (RFC 4861 §7.1.1).
  inject(ethernet(group.multicast_mac(), kOtherMac,
                  ipv6(Ipv6Address{}, group, kIpv6Icmpv6,
                       neighbor_solicitation(Ipv6Address{}, group, kOurIp, kOtherMac), 255)));
  inject(ethernet(Ipv6Address::all_nodes().multicast_mac(), kOtherMac,
                  ipv6(Ipv6Address{}, Ipv6Address::all_nodes(), kIpv6Icmpv6,
                       neighbor_solicitation(Ipv6Address{}, Ipv6Address::all_nodes(), kOurIp, std::nullopt), 255)));
  // A hop limit below 255 (through a router).
  inject(ethernet(group.multicast_mac(), kOtherMac,
                  ipv6(Ipv6Address{}, group, kIpv6Icmpv6,
                       neighbor_solicitation(Ipv6Address{}, group, kOurIp, std::nullopt), 64)));
  EXPECT_EQ(stack_->stats().rx_malformed_nd, 3u);
  EXPECT_EQ(stack_->stats().ipv6_dad_duplicates, 0u);
  finish_dad();
  EXPECT_EQ(state(kOurIp), AddressState::Preferred);
}

TEST_F(Ipv6AddressTest, ADuplicatedLinkLocalAddressTakesIpv6Down) {
  // RFC 4862 §5.4.5: the MAC-derived address is taken, so the MAC is not unique on the link.
  stack_->start();
  inject_advertisement(kOurLinkLocal, kOtherMac);
  EXPECT_EQ(state(kOurLinkLocal), AddressState::Duplicated);
  EXPECT_TRUE(stack_->addresses().ipv6_disabled());
  finish_dad();
  const size_t sent = device_.sent.size();
  learn_peer();
  EXPECT_FALSE(send_to(kPeerIp));
  EXPECT_FALSE(send_to(v6("fe80::9")));
  inject_echo(kPeerIp, kOurIp);
  inject(ethernet(Ipv6Address::all_nodes().multicast_mac(), kPeerMac,
                  ipv6(kPeerIp, Ipv6Address::all_nodes(), kIpv6Icmpv6,
                       echo_request(kPeerIp, Ipv6Address::all_nodes(), 1, 1, {}))));
  EXPECT_EQ(device_.sent.size(), sent);  // nothing, not even the configured address's announcement
  EXPECT_EQ(stack_->stats().ipv6_tx_no_source, 2u);
  EXPECT_EQ(stack_->stats().rx_not_for_us, 1u);  // all-nodes is no longer listened to
  EXPECT_EQ(stack_->stats().rx_ipv6_not_for_us, 1u);
  EXPECT_EQ(stack_->stats().icmpv6_echo_replies_sent, 0u);
}

TEST_F(Ipv6AddressTest, PacketsToATentativeAddressAreDropped) {
  stack_->start();
  device_.sent.clear();
  learn_peer();
  stack_->neighbors().learn(kPeerLinkLocal, kPeerMac, true);
  inject_echo(kPeerIp, kOurIp);
  inject_echo(kPeerLinkLocal, kOurLinkLocal);
  inject_ipv6(ipv6(kPeerIp, kOurIp, 253, Bytes(8, 0)));
  EXPECT_EQ(stack_->stats().rx_ipv6_to_tentative, 3u);
  EXPECT_EQ(stack_->stats().icmpv6_echo_replies_sent, 0u);
  // Nor do we send from it.
  EXPECT_FALSE(send_to(kPeerIp));
  EXPECT_EQ(stack_->stats().ipv6_tx_no_source, 1u);
  EXPECT_TRUE(device_.sent.empty());
  finish_dad();
  device_.sent.clear();
  inject_echo(kPeerIp, kOurIp, 2);
  ASSERT_EQ(device_.sent.size(), 1u);
  EXPECT_EQ(last().icmp.type, Icmpv6Header::kEchoReply);
  EXPECT_EQ(last().ip.source, kOurIp);
  EXPECT_EQ(stack_->stats().rx_ipv6_to_tentative, 3u);
}

TEST_F(Ipv6AddressTest, BothSolicitedNodeGroupsAreListenedToFromTheStart) {
  // An address whose low 24 bits differ from the link-local one's: two groups (RFC 4291 §2.7.1).
  settings_.ipv6.address = v6("2001:db8::ab:cdef");
  fresh();
  const Ipv6Address global_group = v6("ff02::1:ffab:cdef");
  const Ipv6Address link_local_group = v6("ff02::1:ff00:1");
  // Tentative addresses' groups already (RFC 4862 §5.4.2): that is how another node's probe is heard.
  EXPECT_TRUE(stack_->ipv6().accepts_destination(global_group));
  EXPECT_TRUE(stack_->ipv6().accepts_destination(link_local_group));
  EXPECT_FALSE(stack_->ipv6().accepts_destination(v6("ff02::1:ff00:2")));
  EXPECT_TRUE(stack_->ipv6().accepts_link_group(global_group.multicast_mac()));
  EXPECT_TRUE(stack_->ipv6().accepts_link_group(link_local_group.multicast_mac()));
  EXPECT_FALSE(stack_->ipv6().accepts_link_group(v6("ff02::1:ff00:2").multicast_mac()));
  EXPECT_FALSE(stack_->ipv6().accepts_destination(settings_.ipv6.address));  // tentative
  stack_->start();
  inject_probe(settings_.ipv6.address);
  EXPECT_EQ(state(settings_.ipv6.address), AddressState::Duplicated);
  EXPECT_EQ(stack_->stats().rx_not_for_us, 0u);
  // A duplicated address's group is left; the link-local one stays.
  EXPECT_FALSE(stack_->ipv6().accepts_link_group(global_group.multicast_mac()));
  EXPECT_TRUE(stack_->ipv6().accepts_link_group(link_local_group.multicast_mac()));
  finish_dad();
  EXPECT_TRUE(stack_->ipv6().accepts_destination(kOurLinkLocal));
}

// With Duplicate Address Detection done (the Ipv6StackTest fixture): the link-local address in use.
using LinkLocalTest = Ipv6StackTest;

TEST_F(LinkLocalTest, ASolicitationForOurLinkLocalAddressIsAnsweredFromIt) {
  const Ipv6Address group = kOurLinkLocal.solicited_node_multicast();
  inject(ethernet(group.multicast_mac(), kPeerMac,
                  ipv6(kPeerLinkLocal, group, kIpv6Icmpv6,
                       neighbor_solicitation(kPeerLinkLocal, group, kOurLinkLocal, kPeerMac), 255)));
  ASSERT_EQ(device_.sent.size(), 1u);
  SentFrame f = last();
  ASSERT_TRUE(f.icmp_ok);
  ASSERT_EQ(f.icmp.type, Icmpv6Header::kNeighborAdvertisement);
  EXPECT_EQ(f.ip.source, kOurLinkLocal);
  EXPECT_EQ(f.ip.destination, kPeerLinkLocal);
  EXPECT_EQ(f.eth.destination, kPeerMac);
  NeighborAdvertisement na;
  ASSERT_EQ(NeighborAdvertisement::parse(f.l4.data(), f.l4.size(), na), nullptr);
  EXPECT_EQ(na.target, kOurLinkLocal);
  EXPECT_TRUE(na.solicited);
  EXPECT_EQ(na.options.target_link_layer, kOurMac);
  EXPECT_EQ(stack_->neighbors().lookup(kPeerLinkLocal), kPeerMac);
  // And another node's probe for it is defended to all-nodes, from it (RFC 4861 §7.2.4).
  inject(ethernet(group.multicast_mac(), kOtherMac,
                  ipv6(Ipv6Address{}, group, kIpv6Icmpv6,
                       neighbor_solicitation(Ipv6Address{}, group, kOurLinkLocal, std::nullopt), 255)));
  ASSERT_EQ(device_.sent.size(), 2u);
  EXPECT_EQ(last().ip.destination, Ipv6Address::all_nodes());
  EXPECT_EQ(last().ip.source, kOurLinkLocal);
  EXPECT_EQ(stack_->ipv6().address_state(kOurLinkLocal), AddressState::Preferred);
}

TEST_F(LinkLocalTest, EchoToOurLinkLocalAddressIsAnsweredFromIt) {
  stack_->neighbors().learn(kPeerLinkLocal, kPeerMac, true);
  inject_ipv6(ipv6(kPeerLinkLocal, kOurLinkLocal, kIpv6Icmpv6, echo_request(kPeerLinkLocal, kOurLinkLocal, 3, 9, {5})));
  ASSERT_EQ(device_.sent.size(), 1u);
  SentFrame f = last();
  ASSERT_TRUE(f.icmp_ok);  // the checksum covers the link-local source
  EXPECT_EQ(f.icmp.type, Icmpv6Header::kEchoReply);
  EXPECT_EQ(f.ip.source, kOurLinkLocal);
  EXPECT_EQ(f.ip.destination, kPeerLinkLocal);
  EXPECT_EQ(f.icmp.echo_sequence(), 9);
  // A request from a global address to the link-local one is answered from the address it was
  // sent to (RFC 4443 §4.2).
  learn_peer();
  inject_ipv6(ipv6(kPeerIp, kOurLinkLocal, kIpv6Icmpv6, echo_request(kPeerIp, kOurLinkLocal, 3, 10, {})));
  ASSERT_EQ(device_.sent.size(), 2u);
  EXPECT_TRUE(last().icmp_ok);
  EXPECT_EQ(last().ip.source, kOurLinkLocal);
  EXPECT_EQ(last().ip.destination, kPeerIp);
}

TEST_F(LinkLocalTest, SourceSelectionMatchesTheDestinationsScope) {
  EXPECT_EQ(stack_->ipv6().source_address(v6("fe80::9")), kOurLinkLocal);
  EXPECT_EQ(stack_->ipv6().source_address(Ipv6Address::all_nodes()), kOurLinkLocal);  // ff02: link scope
  EXPECT_EQ(stack_->ipv6().source_address(kPeerIp), kOurIp);
  EXPECT_EQ(stack_->ipv6().source_address(v6("ff05::1:3")), kOurIp);  // site scope
  EXPECT_EQ(stack_->ipv6().source_address(v6("2001:db9::1")), kOurIp);
  // Resolution of a link-local neighbour solicits from the link-local address (the prompting
  // packet's source, RFC 4861 §7.2.2); the packet itself leaves from it once resolved.
  ASSERT_TRUE(send_to(v6("fe80::9")));
  ASSERT_EQ(device_.sent.size(), 1u);
  EXPECT_EQ(last().icmp.type, Icmpv6Header::kNeighborSolicitation);
  EXPECT_EQ(last().ip.source, kOurLinkLocal);
  EXPECT_TRUE(last().icmp_ok);
  inject_ipv6(ipv6(v6("fe80::9"), kOurLinkLocal, kIpv6Icmpv6,
                   neighbor_advertisement(v6("fe80::9"), kOurLinkLocal, v6("fe80::9"), kOtherMac, true, true), 255));
  ASSERT_EQ(device_.sent.size(), 2u);
  EXPECT_EQ(last().ip.next_header, 253);
  EXPECT_EQ(last().ip.source, kOurLinkLocal);
  // A global destination resolves from the global address.
  ASSERT_TRUE(send_to(kPeerIp));
  EXPECT_EQ(last().icmp.type, Icmpv6Header::kNeighborSolicitation);
  EXPECT_EQ(last().ip.source, kOurIp);
}

TEST_F(LinkLocalTest, ALinkLocalRouterIsSolicitedFromTheSourceOfThePacketForIt) {
  // RFC 4861 §7.2.2: the packet waiting for the gateway fe80::1 comes from the global address,
  // and so does the solicitation, so the router's answer goes where the reply will.
  settings_.ipv6.gateway = v6("fe80::1");
  restart();
  ASSERT_TRUE(send_to(v6("2001:db9::5")));
  ASSERT_EQ(device_.sent.size(), 1u);
  EXPECT_EQ(last().icmp.type, Icmpv6Header::kNeighborSolicitation);
  EXPECT_EQ(last().ip.destination, v6("fe80::1").solicited_node_multicast());
  EXPECT_EQ(last().ip.source, kOurIp);
  timers_.advance(settings_.ipv6.nd_retrans_timer);  // the retransmission too
  ASSERT_EQ(device_.sent.size(), 2u);
  EXPECT_EQ(last().ip.source, kOurIp);
}

// A started stack whose addresses passed DAD (Ipv6StackTest), or one rebuilt without DAD.
using StartedStackTest = Ipv6StackTest;

TEST_F(StartedStackTest, OnlyOurIpv6GroupsPassTheEthernetFilter) {
  const Ipv6Address other_group = v6("2001:db8::77").solicited_node_multicast();
  inject(ethernet(other_group.multicast_mac(), kPeerMac,
                  ipv6(kPeerIp, other_group, kIpv6Icmpv6,
                       neighbor_solicitation(kPeerIp, other_group, v6("2001:db8::77"), kPeerMac), 255)));
  EXPECT_EQ(stack_->stats().rx_not_for_us, 1u);
  EXPECT_EQ(stack_->stats().nd_target_not_ours, 0u);
}

TEST_F(StartedStackTest, WithoutDuplicateAddressDetectionStartAnnouncesAtOnce) {
  settings_.ipv6.dad_transmits = 0;  // RFC 4862 §5.1: no DAD, the addresses are usable at once
  stack_ = std::make_unique<InetStack>(settings_, device_, timers_, 42);
  device_.sent.clear();
  EXPECT_EQ(stack_->ipv6().address_state(kOurIp), AddressState::Preferred);
  EXPECT_EQ(stack_->ipv6().address_state(kOurLinkLocal), AddressState::Preferred);
  stack_->start();
  std::vector<Ipv6Address> announced;
  for (const Bytes& frame : device_.sent) {
    if (EthernetView(frame.data(), frame.size()).ethertype() != static_cast<uint16_t>(EtherType::Ipv6)) continue;
    SentFrame f = SentFrame::parse(frame);
    EXPECT_EQ(f.ip.destination, Ipv6Address::all_nodes());
    ASSERT_EQ(f.icmp.type, Icmpv6Header::kNeighborAdvertisement);
    NeighborAdvertisement na;
    ASSERT_EQ(NeighborAdvertisement::parse(f.l4.data(), f.l4.size(), na), nullptr);
    EXPECT_EQ(f.ip.source, na.target);  // each from the address it announces
    announced.push_back(na.target);
  }
  EXPECT_EQ(announced, (std::vector<Ipv6Address>{kOurLinkLocal, kOurIp}));
  EXPECT_EQ(stack_->stats().ipv6_dad_solicitations_sent, 0u);
  // Traffic at once, without advancing the clock.
  learn_peer();
  EXPECT_TRUE(send_to(kPeerIp));
}

// Two stacks over the in-memory wire configured with the same address: each hears the other's
// probe from :: and both give the address up (RFC 4862 §5.4.3), keeping their distinct link-local
// addresses.
TEST(Ipv6DadTwoHostsTest, SimultaneousProbesForOneAddressMakeItDuplicatedOnBoth) {
  VirtualTimerService timers;
  Wire wire(timers, 3);
  PipeDevice dev_a(wire, 0, mac_of(1)), dev_b(wire, 1, mac_of(2));
  InetSettings settings;
  settings.address = ip_of(1);
  settings.ipv6.address = v6("2001:db8::7");
  InetStack a(settings, dev_a, timers, 1);
  settings.address = ip_of(2);
  InetStack b(settings, dev_b, timers, 2);
  wire.attach(0, &a);
  wire.attach(1, &b);
  a.start();
  b.start();
  timers.advance(2s);
  for (InetStack* stack : {&a, &b}) {
    EXPECT_EQ(stack->ipv6().address_state(v6("2001:db8::7")), AddressState::Duplicated);
    EXPECT_EQ(stack->ipv6().address_state(stack->ipv6().link_local_address()), AddressState::Preferred);
    EXPECT_EQ(stack->stats().ipv6_dad_duplicates, 1u);
  }
  EXPECT_EQ(a.addresses().entries()[1].claimed_by, mac_of(2));
  EXPECT_EQ(b.addresses().entries()[1].claimed_by, mac_of(1));
  wire.attach(0, nullptr);
  wire.attach(1, nullptr);
}

// After DAD (TwoHosts runs it), a pings b's link-local address from its own: resolution, request
// and reply all between link-local addresses.
TEST(Ipv6DadTwoHostsTest, PingBetweenLinkLocalAddresses) {
  TwoHosts hosts{5, [] {
    InetSettings s;
    s.ipv6.address = v6("2001:db8::");
    return s;
  }()};
  const Ipv6Address from = hosts.a->ipv6().link_local_address();
  const Ipv6Address to = hosts.b->ipv6().link_local_address();
  EXPECT_EQ(from, link_local_address(mac_of(1)));
  EXPECT_EQ(to, link_local_address(mac_of(2)));
  std::vector<Ipv6Address> reply_sources;
  hosts.a->ipv6().icmp().set_echo_reply_receiver(
      [&](const Ipv6Header& ip, const Icmpv6Header& icmp, const BufferList&) {
        EXPECT_EQ(icmp.type, Icmpv6Header::kEchoReply);
        EXPECT_EQ(ip.destination, from);
        reply_sources.push_back(ip.source);
      });
  ASSERT_EQ(hosts.a->ipv6().source_address(to), from);
  const Bytes message = echo_request(from, to, 0x77, 1, {1, 2, 3});
  Packet frame;
  frame.data.append(BufferSegment::allocate(kIpv6FrameHeadroom));
  frame.data.append_copy(message.data(), message.size());
  ASSERT_TRUE(hosts.a->ipv6().send(to, kIpv6Icmpv6, std::move(frame)));
  ASSERT_TRUE(hosts.run_until([&] { return !reply_sources.empty(); }, 5s));
  EXPECT_EQ(reply_sources[0], to);
  EXPECT_EQ(hosts.a->neighbors().lookup(to), mac_of(2));
  EXPECT_EQ(hosts.b->neighbors().lookup(from), mac_of(1));  // from a's solicitation, sent from `from`
}

}  // namespace
}  // namespace bypass::inet::test
