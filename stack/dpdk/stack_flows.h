// What the dpdk stack claims on a port it shares with the kernel (dpdk.flow_isolate): rte_flow
// rules built from its own addresses, so that in isolated mode only its traffic reaches it and the
// kernel keeps everything else on the link (its ssh, its monitoring, its own addresses).
//
// Claims, each one or more rules, spread over the worker queues where the port can:
//   - ARP for dpdk.host_ip (RFC 826): by target protocol address where the port matches ARP
//     fields; else ARP frames to the stack's own MAC only (replies to its requests, unicast
//     probes), and the broadcast requests stay with the kernel;
//   - every IPv4 datagram to dpdk.host_ip: TCP, ICMP echo and errors, fragments;
//   - with IPv6, every datagram to dpdk.host_ipv6 and to the stack's link-local address, and the
//     ICMPv6 sent to their solicited-node groups (Neighbor Solicitations and DAD probes, RFC 4861
//     §7.2.2, RFC 4862 §5.4.2).
// Spreading: one RSS rule over the worker queues; where the port refuses RSS (net_tap on kernels
// whose verifier rejects its BPF program), one rule per queue keyed on the low bits of the source
// address; where it refuses that too, queue 0. pmd's redirect ring hands each packet to its owner.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pmd/flow_rule.h"
#include "stack/inet/inet_config.h"
#include "stack/inet/wire/bytes.h"

namespace bypass::pmd {
class Port;
}

namespace bypass {

struct FlowClaim {
  std::string what;                                 // "ARP for 10.0.0.3"
  std::vector<std::vector<pmd::FlowRule>> choices;  // in order of preference: the first the port takes
  std::vector<std::string> notes;                   // one per choice: what taking it means ("" if nothing)
};

// The claims for a stack with `settings` answering from `mac`, its packets spread over `queues`.
std::vector<FlowClaim> stack_flow_claims(const inet::InetSettings& settings, const inet::MacAddress& mac,
                                         uint16_t queues);

// Installs every claim on `port` (the first choice of each that the port validates and creates)
// and removes them again when destroyed. Throws std::runtime_error naming the claim no choice of
// which the port accepted, with the port's reasons; what it created until then is removed.
class StackFlowRules {
 public:
  StackFlowRules(pmd::Port& port, const std::vector<FlowClaim>& claims);
  ~StackFlowRules();
  StackFlowRules(const StackFlowRules&) = delete;
  StackFlowRules& operator=(const StackFlowRules&) = delete;

  // The rules in force, in testpmd syntax (for logs and bypass-pmd's --state).
  std::vector<std::string> describe() const;

 private:
  void remove_all();
  pmd::Port& port_;
  std::vector<uint32_t> ids_;
};

}  // namespace bypass
