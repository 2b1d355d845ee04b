// Offload negotiation: enable what is both supported and configured, report every fallback.
#include <gtest/gtest.h>
#include <rte_ethdev.h>

#include <algorithm>

#include "pmd/offloads.h"

namespace bypass::pmd {
namespace {

DeviceCapabilities everything() {
  DeviceCapabilities c;
  c.rx_offload_capa = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_TCP_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM |
                      RTE_ETH_RX_OFFLOAD_TCP_LRO | RTE_ETH_RX_OFFLOAD_SCATTER | RTE_ETH_RX_OFFLOAD_RSS_HASH;
  c.tx_offload_capa = RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_TCP_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM |
                      RTE_ETH_TX_OFFLOAD_TCP_TSO | RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  c.flow_type_rss_offloads = RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP | RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_IPV6 |
                             RTE_ETH_RSS_NONFRAG_IPV6_TCP | RTE_ETH_RSS_NONFRAG_IPV6_UDP | RTE_ETH_RSS_L2_PAYLOAD;
  c.reta_size = 128;
  c.hash_key_size = 40;
  c.max_rx_queues = c.max_tx_queues = 8;
  return c;
}

OffloadRequest all_requested() {
  OffloadRequest r;
  r.lro = true;
  return r;
}

bool mentions(const OffloadPlan& plan, const std::string& what) {
  return std::any_of(plan.fallbacks.begin(), plan.fallbacks.end(),
                     [&](const std::string& f) { return f.rfind(what + ":", 0) == 0; });
}

TEST(Offloads, FullDeviceEnablesEverythingRequested) {
  const OffloadPlan plan = negotiate(everything(), all_requested(), 4, "nic");
  EXPECT_EQ(plan.enabled, plan.supported);
  EXPECT_TRUE(plan.fallbacks.empty());
  EXPECT_TRUE(plan.rx_offloads & RTE_ETH_RX_OFFLOAD_TCP_LRO);
  EXPECT_TRUE(plan.rx_offloads & RTE_ETH_RX_OFFLOAD_RSS_HASH);
  EXPECT_TRUE(plan.tx_offloads & RTE_ETH_TX_OFFLOAD_TCP_TSO);
  EXPECT_EQ(plan.rss_hf, RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP | RTE_ETH_RSS_NONFRAG_IPV4_UDP |
                            RTE_ETH_RSS_IPV6 | RTE_ETH_RSS_NONFRAG_IPV6_TCP | RTE_ETH_RSS_NONFRAG_IPV6_UDP);
}

// A device that hashes IPv4 TCP only is asked for what it has, not for IPv6 it cannot hash.
TEST(Offloads, RssAsksOnlyForTheFlowTypesTheDeviceHashes) {
  DeviceCapabilities caps = everything();
  caps.flow_type_rss_offloads = RTE_ETH_RSS_NONFRAG_IPV4_TCP;
  const OffloadPlan plan = negotiate(caps, all_requested(), 4, "nic");
  EXPECT_EQ(plan.rss_hf, RTE_ETH_RSS_NONFRAG_IPV4_TCP);
}

TEST(Offloads, NotRequestedIsNotEnabledAndNotAFallback) {
  OffloadRequest none;
  none.rx_checksum = none.tx_checksum = none.tso = none.lro = none.rss = none.multi_seg = false;
  const OffloadPlan plan = negotiate(everything(), none, 4, "nic");
  EXPECT_TRUE(plan.fallbacks.empty());
  EXPECT_FALSE(plan.enabled.tso);
  EXPECT_FALSE(plan.enabled.rss);
  EXPECT_EQ(plan.tx_offloads, 0u);
  EXPECT_EQ(plan.rss_hf, 0u);
}

// Each capability removed on its own: that offload falls back and is reported, the rest stay.
struct Missing {
  const char* name;
  uint64_t rx, tx;
  bool no_rss;
  bool OffloadFlags::*flag;
};

class MissingCapability : public testing::TestWithParam<Missing> {};

TEST_P(MissingCapability, FallsBackAndReports) {
  const Missing& m = GetParam();
  DeviceCapabilities caps = everything();
  caps.rx_offload_capa &= ~m.rx;
  caps.tx_offload_capa &= ~m.tx;
  if (m.no_rss) caps.reta_size = 0;
  const OffloadPlan plan = negotiate(caps, all_requested(), 4, "vdev");
  EXPECT_FALSE(plan.enabled.*m.flag) << m.name;
  EXPECT_TRUE(mentions(plan, m.name)) << m.name;
  for (const auto& f : plan.fallbacks) EXPECT_NE(f.find("not supported by vdev"), std::string::npos) << f;
}

INSTANTIATE_TEST_SUITE_P(
    EachOffload, MissingCapability,
    testing::Values(Missing{"rx-ipv4-cksum", RTE_ETH_RX_OFFLOAD_IPV4_CKSUM, 0, false, &OffloadFlags::rx_ipv4_checksum},
                    Missing{"rx-tcp-cksum", RTE_ETH_RX_OFFLOAD_TCP_CKSUM, 0, false, &OffloadFlags::rx_tcp_checksum},
                    Missing{"rx-udp-cksum", RTE_ETH_RX_OFFLOAD_UDP_CKSUM, 0, false, &OffloadFlags::rx_udp_checksum},
                    Missing{"tx-ipv4-cksum", 0, RTE_ETH_TX_OFFLOAD_IPV4_CKSUM, false, &OffloadFlags::tx_ipv4_checksum},
                    Missing{"tx-tcp-cksum", 0, RTE_ETH_TX_OFFLOAD_TCP_CKSUM, false, &OffloadFlags::tx_tcp_checksum},
                    Missing{"tx-udp-cksum", 0, RTE_ETH_TX_OFFLOAD_UDP_CKSUM, false, &OffloadFlags::tx_udp_checksum},
                    Missing{"tso", 0, RTE_ETH_TX_OFFLOAD_TCP_TSO, false, &OffloadFlags::tso},
                    Missing{"lro", RTE_ETH_RX_OFFLOAD_TCP_LRO, 0, false, &OffloadFlags::lro},
                    Missing{"rss", 0, 0, true, &OffloadFlags::rss},
                    Missing{"tx-multi-seg", 0, RTE_ETH_TX_OFFLOAD_MULTI_SEGS, false, &OffloadFlags::multi_seg}),
    [](const testing::TestParamInfo<Missing>& info) {
      std::string n = info.param.name;
      std::replace(n.begin(), n.end(), '-', '_');
      return n;
    });

TEST(Offloads, TsoNeedsMultiSegAndTxChecksums) {
  DeviceCapabilities caps = everything();
  caps.tx_offload_capa &= ~RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  const OffloadPlan plan = negotiate(caps, all_requested(), 4, "nic");
  EXPECT_TRUE(plan.supported.tso);
  EXPECT_FALSE(plan.enabled.tso);
  EXPECT_TRUE(mentions(plan, "tso"));
  OffloadRequest no_tx_checksum = all_requested();
  no_tx_checksum.tx_checksum = false;
  EXPECT_FALSE(negotiate(everything(), no_tx_checksum, 4, "nic").enabled.tso);
}

// virtio-user with a vhost-user peer that offers TSO: TCP checksum and TSO, no IPv4 checksum.
TEST(Offloads, TsoDoesNotNeedIpv4ChecksumOffload) {
  DeviceCapabilities caps = everything();
  caps.tx_offload_capa &= ~RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
  const OffloadPlan plan = negotiate(caps, all_requested(), 1, "net_virtio_user");
  EXPECT_FALSE(plan.enabled.tx_ipv4_checksum);
  EXPECT_TRUE(plan.enabled.tso);
  EXPECT_TRUE(plan.tx_offloads & RTE_ETH_TX_OFFLOAD_TCP_TSO);
}

TEST(Offloads, RssOverOneQueueIsNotEnabled) {
  const OffloadPlan plan = negotiate(everything(), all_requested(), 1, "nic");
  EXPECT_FALSE(plan.enabled.rss);
  EXPECT_EQ(plan.rss_hf, 0u);
  EXPECT_FALSE(mentions(plan, "rss"));  // nothing fell back: there is nothing to spread
}

TEST(Offloads, RingLikeDeviceFallsBackOnEverythingButMultiSeg) {
  DeviceCapabilities ring;
  ring.rx_offload_capa = RTE_ETH_RX_OFFLOAD_SCATTER;
  ring.tx_offload_capa = RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  const OffloadPlan plan = negotiate(ring, all_requested(), 2, "net_ring");
  EXPECT_EQ(plan.enabled.names(), (std::vector<std::string>{"tx-multi-seg", "rx-scatter"}));
  for (const char* name : {"rx-ipv4-cksum", "rx-tcp-cksum", "rx-udp-cksum", "tx-ipv4-cksum", "tx-tcp-cksum",
                           "tx-udp-cksum", "tso", "lro", "rss"})
    EXPECT_TRUE(mentions(plan, name)) << name;
}

}  // namespace
}  // namespace bypass::pmd
