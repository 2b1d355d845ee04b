// FlowRule's testpmd syntax: what it parses, how it prints (printing and parsing agree), and one
// clear message naming the word for every mistake.
#include <gtest/gtest.h>

#include <sstream>

#include "pmd/flow_rule.h"

namespace bypass::pmd {
namespace {

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

FlowRule parse(const std::string& line) { return parse_flow_rule(words(line)); }

std::string error_of(const std::string& line) {
  try {
    parse(line);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(FlowRule, ParsesEveryLayerAndPrintsItBack) {
  const std::string text =
      "priority 2 ingress pattern eth dst is 02:00:0a:00:00:03 type is 0x0800 / ipv4 src is 10.0.0.1 dst is "
      "10.0.0.3 proto is 6 / tcp src is 1234 dst is 7000 / end actions queue index 1 / end";
  const FlowRule rule = parse(text);
  EXPECT_EQ(rule.priority, 2u);
  ASSERT_TRUE(rule.eth.dst);
  EXPECT_EQ(rule.eth.dst->value, (FlowRule::Mac{0x02, 0, 0x0a, 0, 0, 3}));
  EXPECT_EQ(rule.eth.type, 0x0800);
  EXPECT_EQ(rule.network, FlowRule::Network::Ipv4);
  EXPECT_EQ(rule.ipv4.dst->value, 0x0a000003u);
  EXPECT_EQ(rule.ipv4.dst->mask, 0xffffffffu);
  EXPECT_EQ(rule.ipv4.proto, 6);
  EXPECT_EQ(rule.transport, FlowRule::Transport::Tcp);
  EXPECT_EQ(rule.ports.dst, 7000);
  EXPECT_EQ(rule.fate, FlowRule::Fate::Queue);
  EXPECT_EQ(rule.queue, 1);
  EXPECT_EQ(rule.to_string(), text);
  EXPECT_EQ(rule.summary(), "ETH IPV4 TCP => QUEUE");
}

TEST(FlowRule, MasksFromSpecMaskAndPrefix) {
  const FlowRule v4 = parse("ingress pattern eth / ipv4 src spec 0.0.0.1 src mask 0.0.0.1 dst prefix 24 "
                            "dst spec 10.1.2.0 / end actions rss queues 0 1 end / end");
  EXPECT_EQ(v4.ipv4.src->value, 1u);
  EXPECT_EQ(v4.ipv4.src->mask, 1u);
  EXPECT_EQ(v4.ipv4.dst->mask, 0xffffff00u);
  EXPECT_EQ(v4.ipv4.dst->value, 0x0a010200u);
  EXPECT_EQ(v4.rss_queues, (std::vector<uint16_t>{0, 1}));
  // A masked field prints as spec and mask, which parse back to the same rule.
  EXPECT_EQ(parse(v4.to_string()).to_string(), v4.to_string());

  const FlowRule v6 = parse("ingress pattern eth / ipv6 dst is ff02::1:ff00:3 src prefix 64 src spec fd00:1:: "
                            "proto is 58 / end actions drop / end");
  EXPECT_EQ(v6.ipv6.dst->value[15], 3);
  EXPECT_EQ(v6.ipv6.src->mask[7], 0xff);
  EXPECT_EQ(v6.ipv6.src->mask[8], 0);
  EXPECT_EQ(v6.ipv6.proto, 58);
  EXPECT_EQ(v6.fate, FlowRule::Fate::Drop);
  EXPECT_EQ(parse(v6.to_string()).to_string(), v6.to_string());
}

TEST(FlowRule, ArpAndGroup) {
  const FlowRule rule = parse("group 1 ingress pattern eth / arp_eth_ipv4 tpa is 10.0.0.3 / end actions passthru / end");
  EXPECT_EQ(rule.group, 1u);
  EXPECT_EQ(rule.network, FlowRule::Network::Arp);
  EXPECT_EQ(rule.arp.tpa, 0x0a000003u);
  EXPECT_EQ(rule.to_string(),
            "group 1 ingress pattern eth / arp_eth_ipv4 tpa is 10.0.0.3 / end actions passthru / end");
  EXPECT_EQ(rule.summary(), "ETH ARP_ETH_IPV4 => PASSTHRU");
}

TEST(FlowRule, MistakesNameTheWord) {
  EXPECT_EQ(error_of("egress pattern eth / end actions drop / end"),
            "'egress' rules are not supported: Bypass claims ingress traffic only");
  EXPECT_EQ(error_of("ingress pattern eth / ipv4 dst is 10.0.0.300 / end actions drop / end"),
            "ipv4 dst: '10.0.0.300' is not an IPv4 address");
  EXPECT_EQ(error_of("ingress pattern eth / sctp / end actions drop / end"),
            "pattern: unknown item 'sctp' (expected eth, ipv4, ipv6, arp_eth_ipv4, tcp, udp or end)");
  EXPECT_EQ(error_of("ingress pattern eth / tcp dst is 80 / end actions drop / end"),
            "pattern: tcp needs ipv4 or ipv6 before it");
  EXPECT_EQ(error_of("ingress pattern eth / ipv4 / end actions queue index 70000 / end"),
            "queue index: '70000' is not a number in 0..65535");
  EXPECT_EQ(error_of("ingress pattern eth / ipv4 / end actions / end"), "actions: unknown action '/' (expected queue, "
                                                                        "rss, drop, passthru or end)");
  EXPECT_EQ(error_of("ingress pattern eth / ipv4 / end actions end"),
            "actions: the rule needs a fate (queue index N, rss queues N... end, drop or passthru)");
  EXPECT_EQ(error_of("ingress pattern eth / ipv4 / end actions drop / queue index 0 / end"),
            "actions: 'queue' after the rule's fate (one of queue, rss, drop, passthru)");
  EXPECT_EQ(error_of("ingress pattern eth type is 0x0806"), "expected '/' or end at the end of the rule");
  EXPECT_EQ(error_of("ingress pattern eth / end actions drop / end extra"), "unexpected 'extra' after the actions' end");
  EXPECT_EQ(error_of("ingress pattern eth dst is 02:00:00:00:00 / end actions drop / end"),
            "eth dst: '02:00:00:00:00' is not a MAC address (aa:bb:cc:dd:ee:ff)");
  EXPECT_EQ(error_of("ingress pattern eth / ipv4 dst prefix 33 / end actions drop / end"),
            "ipv4 dst prefix: '33' is not a number in 0..32");
  EXPECT_EQ(error_of("ingress pattern eth / end actions rss queues end / end"), "actions: rss needs 'queues N... end'");
}

}  // namespace
}  // namespace bypass::pmd
