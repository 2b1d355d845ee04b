// One rte_flow rule as Bypass builds, shows and parses it: an ingress pattern of up to three layers
// (Ethernet; IPv4, IPv6 or ARP over Ethernet/IPv4; TCP or UDP) and one fate action (queue, RSS over
// queues, drop, passthru). Its text form is testpmd's `flow create` syntax, so a rule shown by
// `bypass-pmd flow list` can be pasted into testpmd and the other way round.
//
// This header is plain C++ (no DPDK types): the stack builds rules from its addresses and the unit
// tests check parsing and printing without an EAL. pmd/flow_table.h turns a rule into rte_flow items.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace bypass::pmd {

// A value matched under a mask (testpmd's `is` is the full mask; `spec`/`mask` and `prefix` give others).
template <typename T>
struct Masked {
  T value{};
  T mask{};
};

struct FlowRule {
  using Mac = std::array<uint8_t, 6>;
  using Ipv6Bytes = std::array<uint8_t, 16>;

  struct Eth {
    std::optional<Masked<Mac>> dst, src;
    std::optional<uint16_t> type;  // EtherType, exact (drivers rarely mask it)
  };
  struct Ipv4 {                    // addresses in host byte order
    std::optional<Masked<uint32_t>> src, dst;
    std::optional<uint8_t> proto;  // next protocol, exact
  };
  struct Ipv6 {
    std::optional<Masked<Ipv6Bytes>> src, dst;
    std::optional<uint8_t> proto;  // next header, exact
  };
  struct Arp {                     // ARP for Ethernet/IPv4 (RFC 826): sender and target protocol address
    std::optional<uint32_t> spa, tpa;
  };
  struct Ports {
    std::optional<uint16_t> src, dst;
  };
  enum class Network { None, Ipv4, Ipv6, Arp };
  enum class Transport { None, Tcp, Udp };
  enum class Fate { Queue, Rss, Drop, Passthru };

  uint32_t group = 0;
  uint32_t priority = 0;
  Eth eth;
  Network network = Network::None;
  Ipv4 ipv4;
  Ipv6 ipv6;
  Arp arp;
  Transport transport = Transport::None;
  Ports ports;
  Fate fate = Fate::Queue;
  uint16_t queue = 0;               // Fate::Queue
  std::vector<uint16_t> rss_queues; // Fate::Rss

  // "ingress pattern eth type is 0x0806 / end actions queue index 0 / end" (with "group N" and
  // "priority N" before "ingress" when not 0).
  std::string to_string() const;
  // testpmd's one-line summary in `flow list`: "ETH IPV4 TCP => RSS".
  std::string summary() const;
};

// The words of a rule in testpmd syntax, as after "flow create PORT". Throws std::invalid_argument
// naming the word that is wrong and what was expected there.
FlowRule parse_flow_rule(const std::vector<std::string>& words);

// Text forms shared by printing and parsing.
std::string mac_to_string(const FlowRule::Mac& mac);
std::string ipv4_to_string(uint32_t host_order);
std::string ipv6_to_string(const FlowRule::Ipv6Bytes& bytes);

}  // namespace bypass::pmd
