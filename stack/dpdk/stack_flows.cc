#include "stack/dpdk/stack_flows.h"

#include <algorithm>
#include <stdexcept>

#include "base/log.h"
#include "pmd/port.h"
#include "stack/inet/neighbor_cache.h"

namespace bypass {

namespace {

constexpr uint16_t kEtherTypeArp = 0x0806;
constexpr uint8_t kIpProtocolIcmpv6 = 58;
// Per-source steering keys on this many low address bits at most (16 queues' worth of rules).
constexpr unsigned kMaxSourceBuckets = 16;

pmd::FlowRule to_queue(pmd::FlowRule rule, uint16_t queue) {
  rule.fate = pmd::FlowRule::Fate::Queue;
  rule.queue = queue;
  return rule;
}

unsigned source_buckets(uint16_t queues) {
  unsigned buckets = 1;
  while (buckets < queues && buckets < kMaxSourceBuckets) buckets <<= 1;
  return buckets;
}

pmd::FlowRule ipv4_to(uint32_t address) {
  pmd::FlowRule rule;
  rule.network = pmd::FlowRule::Network::Ipv4;
  rule.ipv4.dst = pmd::Masked<uint32_t>{address, 0xffffffffu};
  return rule;
}

pmd::FlowRule ipv6_to(const inet::Ipv6Address& address) {
  pmd::FlowRule rule;
  rule.network = pmd::FlowRule::Network::Ipv6;
  pmd::FlowRule::Ipv6Bytes full;
  full.fill(0xff);
  rule.ipv6.dst = pmd::Masked<pmd::FlowRule::Ipv6Bytes>{address.bytes, full};
  return rule;
}

// Everything to one address, spread over the queues: RSS; else a rule per queue on the low bits of
// the source address (its last octet for IPv6); else queue 0.
FlowClaim address_claim(const std::string& what, const pmd::FlowRule& to_address, uint16_t queues) {
  FlowClaim claim{what, {}, {}};
  if (queues > 1) {
    pmd::FlowRule rss = to_address;
    rss.fate = pmd::FlowRule::Fate::Rss;
    for (uint16_t q = 0; q < queues; ++q) rss.rss_queues.push_back(q);
    claim.choices.push_back({rss});
    claim.notes.push_back("");
    const unsigned buckets = source_buckets(queues);
    std::vector<pmd::FlowRule> per_source;
    for (unsigned b = 0; b < buckets; ++b) {
      pmd::FlowRule rule = to_queue(to_address, static_cast<uint16_t>(b % queues));
      if (rule.network == pmd::FlowRule::Network::Ipv4) {
        rule.ipv4.src = pmd::Masked<uint32_t>{b, buckets - 1};
      } else {
        pmd::Masked<pmd::FlowRule::Ipv6Bytes> source{};
        source.value[15] = static_cast<uint8_t>(b);
        source.mask[15] = static_cast<uint8_t>(buckets - 1);
        rule.ipv6.src = source;
      }
      per_source.push_back(rule);
    }
    claim.choices.push_back(per_source);
    claim.notes.push_back("no RSS action: a queue per source address (low bits)");
  }
  claim.choices.push_back({to_queue(to_address, 0)});
  claim.notes.push_back(queues > 1 ? "neither RSS nor source-address rules: everything on queue 0, the redirect "
                                     "ring spreads it over the workers"
                                   : "");
  return claim;
}

}  // namespace

std::vector<FlowClaim> stack_flow_claims(const inet::InetSettings& settings, const inet::MacAddress& mac,
                                         uint16_t queues) {
  std::vector<FlowClaim> claims;
  const uint32_t host = settings.address.value;
  const std::string host_text = settings.address.to_string();

  // ARP (RFC 826): by target address where the port matches ARP fields; else only the ARP frames
  // sent to our own MAC, since claiming every ARP frame would take the kernel's.
  FlowClaim arp{"ARP for " + host_text, {}, {}};
  pmd::FlowRule by_target;
  by_target.network = pmd::FlowRule::Network::Arp;
  by_target.arp.tpa = host;
  arp.choices.push_back({by_target});
  arp.notes.push_back("");
  pmd::FlowRule to_our_mac;
  to_our_mac.eth.dst = pmd::Masked<pmd::FlowRule::Mac>{mac.bytes, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
  to_our_mac.eth.type = kEtherTypeArp;
  arp.choices.push_back({to_our_mac});
  arp.notes.push_back("the port cannot match ARP by target address: ARP sent to " + mac.to_string() +
                      " arrives (replies to the stack's requests, unicast probes) but broadcast requests for " +
                      host_text + " stay with the kernel; a peer learns the stack's MAC when the stack first "
                      "speaks to it (RFC 826) or from a static neighbour entry");
  claims.push_back(arp);

  claims.push_back(address_claim("IPv4 to " + host_text, ipv4_to(host), queues));

  if (!settings.ipv6.address.is_unspecified()) {
    const inet::Ipv6Address link_local = inet::link_local_address(mac);
    claims.push_back(address_claim("IPv6 to " + settings.ipv6.address.to_string(), ipv6_to(settings.ipv6.address), queues));
    claims.push_back(address_claim("IPv6 to " + link_local.to_string(), ipv6_to(link_local), queues));
    // Neighbor Solicitations (and DAD probes) for our addresses go to their solicited-node groups
    // (RFC 4861 §7.2.2); two addresses with the same low 24 bits share one.
    std::vector<inet::Ipv6Address> groups = {settings.ipv6.address.solicited_node_multicast()};
    if (link_local.solicited_node_multicast() != groups[0]) groups.push_back(link_local.solicited_node_multicast());
    for (const inet::Ipv6Address& group : groups) {
      pmd::FlowRule rule = to_queue(ipv6_to(group), 0);
      rule.ipv6.proto = kIpProtocolIcmpv6;
      claims.push_back({"Neighbor Discovery to " + group.to_string(), {{rule}}, {""}});
    }
  }
  return claims;
}

StackFlowRules::StackFlowRules(pmd::Port& port, const std::vector<FlowClaim>& claims) : port_(port) {
  pmd::FlowTable& table = port.flows();
  for (const FlowClaim& claim : claims) {
    std::string refusals;
    bool installed = false;
    for (size_t c = 0; c < claim.choices.size() && !installed; ++c) {
      std::vector<uint32_t> created;
      std::string error;
      for (const pmd::FlowRule& rule : claim.choices[c]) {
        const auto id = table.create(rule, error);
        if (!id) {
          refusals += (refusals.empty() ? "" : "; ") + rule.to_string() + ": " + error;
          break;
        }
        created.push_back(*id);
      }
      if (created.size() == claim.choices[c].size()) {
        installed = true;
        ids_.insert(ids_.end(), created.begin(), created.end());
        if (!claim.notes[c].empty())
          BYPASS_LOG(Warn, "dpdk", "%s: %s: %s (refused: %s)", table.label().c_str(), claim.what.c_str(),
                     claim.notes[c].c_str(), refusals.c_str());
        continue;
      }
      for (uint32_t id : created) table.destroy(id, error);
    }
    if (!installed) {
      remove_all();
      throw std::runtime_error("dpdk.flow_isolate: " + table.label() + " refused every rule for " + claim.what +
                               ": " + refusals);
    }
  }
  BYPASS_LOG(Info, "dpdk", "%s: isolated; %zu flow rules claim the stack's traffic", table.label().c_str(),
             ids_.size());
}

StackFlowRules::~StackFlowRules() { remove_all(); }

void StackFlowRules::remove_all() {
  pmd::FlowTable& table = port_.flows();
  std::string error;
  for (auto id = ids_.rbegin(); id != ids_.rend(); ++id)
    if (!table.destroy(*id, error)) BYPASS_LOG(Warn, "dpdk", "%s", error.c_str());
  ids_.clear();
}

std::vector<std::string> StackFlowRules::describe() const {
  std::vector<std::string> out;
  for (const pmd::FlowTable::Entry& entry : port_.flows().entries())
    if (std::find(ids_.begin(), ids_.end(), entry.id) != ids_.end())
      out.push_back(std::to_string(entry.id) + " " + entry.rule.to_string());
  return out;
}

}  // namespace bypass
