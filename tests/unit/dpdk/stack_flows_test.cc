// The rules the dpdk stack claims its traffic with under dpdk.flow_isolate (no EAL: the claims are
// plain FlowRules; installing them is tested for real in the flow_isolation_guest test).
#include "stack/dpdk/stack_flows.h"

#include <gtest/gtest.h>

namespace bypass {
namespace {

std::vector<std::vector<std::string>> texts(const FlowClaim& claim) {
  std::vector<std::vector<std::string>> out;
  for (const auto& choice : claim.choices) {
    out.emplace_back();
    for (const auto& rule : choice) out.back().push_back(rule.to_string());
  }
  return out;
}

const inet::MacAddress kMac{{0x02, 0x00, 0x0a, 0x00, 0x00, 0x03}};

TEST(StackFlows, OneQueueIpv4OnlyClaimsArpAndItsAddress) {
  inet::InetSettings settings;
  settings.address = inet::Ipv4Address::from_octets(10, 0, 0, 3);
  const auto claims = stack_flow_claims(settings, kMac, 1);
  ASSERT_EQ(claims.size(), 2u);
  EXPECT_EQ(claims[0].what, "ARP for 10.0.0.3");
  EXPECT_EQ(texts(claims[0]),
            (std::vector<std::vector<std::string>>{
                {"ingress pattern eth / arp_eth_ipv4 tpa is 10.0.0.3 / end actions queue index 0 / end"},
                {"ingress pattern eth dst is 02:00:0a:00:00:03 type is 0x0806 / end actions queue index 0 / end"}}));
  // The fallback says what it costs: broadcast requests stay with the kernel.
  EXPECT_NE(claims[0].notes[1].find("broadcast requests for 10.0.0.3 stay with the kernel"), std::string::npos);
  EXPECT_EQ(claims[1].what, "IPv4 to 10.0.0.3");
  EXPECT_EQ(texts(claims[1]), (std::vector<std::vector<std::string>>{
                                  {"ingress pattern eth / ipv4 dst is 10.0.0.3 / end actions queue index 0 / end"}}));
}

TEST(StackFlows, SeveralQueuesTryRssThenSourceAddressesThenQueueZero) {
  inet::InetSettings settings;
  settings.address = inet::Ipv4Address::from_octets(10, 0, 0, 3);
  settings.ipv6.address = *inet::Ipv6Address::from_string("fd00::3");
  const auto claims = stack_flow_claims(settings, kMac, 3);
  // ARP, IPv4, IPv6 global, IPv6 link-local (fe80::aff:fe00:3 from the MAC) and one solicited-node
  // group: both addresses end in 00:00:03, so they share it (RFC 4291 §2.7.1).
  ASSERT_EQ(claims.size(), 5u);
  const auto ipv4 = texts(claims[1]);
  ASSERT_EQ(ipv4.size(), 3u);
  EXPECT_EQ(ipv4[0], (std::vector<std::string>{
                         "ingress pattern eth / ipv4 dst is 10.0.0.3 / end actions rss queues 0 1 2 end / end"}));
  // Three queues: four buckets on the source's two low bits, the fourth back on queue 0.
  ASSERT_EQ(ipv4[1].size(), 4u);
  EXPECT_EQ(ipv4[1][3], "ingress pattern eth / ipv4 src spec 0.0.0.3 src mask 0.0.0.3 dst is 10.0.0.3 / end actions "
                        "queue index 0 / end");
  EXPECT_EQ(ipv4[2], (std::vector<std::string>{
                         "ingress pattern eth / ipv4 dst is 10.0.0.3 / end actions queue index 0 / end"}));
  EXPECT_EQ(claims[2].what, "IPv6 to fd00::3");
  EXPECT_EQ(texts(claims[2])[1][1], "ingress pattern eth / ipv6 src spec ::1 src mask ::3 dst is fd00::3 / end "
                                    "actions queue index 1 / end");
  EXPECT_EQ(claims[3].what, "IPv6 to fe80::aff:fe00:3");
  EXPECT_EQ(texts(claims[4]), (std::vector<std::vector<std::string>>{
                                  {"ingress pattern eth / ipv6 dst is ff02::1:ff00:3 proto is 58 / end actions queue "
                                   "index 0 / end"}}));
  EXPECT_EQ(claims[4].what, "Neighbor Discovery to ff02::1:ff00:3");
}

}  // namespace
}  // namespace bypass
