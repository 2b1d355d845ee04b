#include "pmd/flow_rule.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

namespace bypass::pmd {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument(what); }

bool parse_mac(const std::string& text, FlowRule::Mac& out) {
  unsigned b[6];
  char extra;
  if (std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &extra) != 6)
    return false;
  for (int i = 0; i < 6; ++i) {
    if (b[i] > 0xff) return false;
    out[static_cast<size_t>(i)] = static_cast<uint8_t>(b[i]);
  }
  return true;
}

bool parse_ipv4(const std::string& text, uint32_t& out) {
  in_addr a{};
  if (inet_pton(AF_INET, text.c_str(), &a) != 1) return false;
  out = ntohl(a.s_addr);
  return true;
}

bool parse_ipv6(const std::string& text, FlowRule::Ipv6Bytes& out) {
  return inet_pton(AF_INET6, text.c_str(), out.data()) == 1;
}

// Decimal or 0x-prefixed hexadecimal, within [0, max].
bool parse_number(const std::string& text, uint64_t max, uint64_t& out) {
  if (text.empty()) return false;
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const std::string digits = hex ? text.substr(2) : text;
  if (digits.empty() || digits.size() > 16) return false;
  uint64_t v = 0;
  for (char c : digits) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (hex && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (hex && c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return false;
    v = v * (hex ? 16 : 10) + static_cast<uint64_t>(d);
    if (v > max) return false;
  }
  out = v;
  return true;
}

template <size_t N>
std::array<uint8_t, N> prefix_mask(unsigned bits) {
  std::array<uint8_t, N> mask{};
  for (unsigned i = 0; i < N * 8 && i < bits; ++i) mask[i / 8] |= static_cast<uint8_t>(0x80u >> (i % 8));
  return mask;
}

// Reads the words of a rule in order; every mistake names the word and what was expected.
class Reader {
 public:
  explicit Reader(const std::vector<std::string>& words) : words_(words) {}
  bool done() const { return at_ >= words_.size(); }
  const std::string& peek() const {
    static const std::string end_of_line = "(end of line)";
    return done() ? end_of_line : words_[at_];
  }
  std::string take(const char* expected) {
    if (done()) fail(std::string("expected ") + expected + " at the end of the rule");
    return words_[at_++];
  }
  void expect(const std::string& word) {
    const std::string got = take(("'" + word + "'").c_str());
    if (got != word) fail("expected '" + word + "', got '" + got + "'");
  }
  uint64_t number(const std::string& what, uint64_t max) {
    const std::string text = take(what.c_str());
    uint64_t v = 0;
    if (!parse_number(text, max, v)) fail(what + ": '" + text + "' is not a number in 0.." + std::to_string(max));
    return v;
  }

 private:
  const std::vector<std::string>& words_;
  size_t at_ = 0;
};

// One "FIELD is|spec|mask|prefix VALUE" of a masked field; `parse` reads one value of its type.
template <typename T, typename Parse, typename FullMask, typename PrefixMask>
void masked_field(Reader& in, const std::string& item, const std::string& field, std::optional<Masked<T>>& slot,
                  const char* kind, Parse parse, FullMask full, PrefixMask prefix, unsigned max_prefix) {
  const std::string how = in.take("is, spec, mask or prefix");
  if (how == "prefix") {
    const auto bits = static_cast<unsigned>(in.number(item + " " + field + " prefix", max_prefix));
    if (!slot) slot = Masked<T>{};
    slot->mask = prefix(bits);
    return;
  }
  if (how != "is" && how != "spec" && how != "mask")
    fail(item + " " + field + ": expected is, spec, mask or prefix, got '" + how + "'");
  const std::string text = in.take(kind);
  T value{};
  if (!parse(text, value)) fail(item + " " + field + ": '" + text + "' is not " + kind);
  if (!slot) slot = Masked<T>{T{}, full()};
  if (how == "mask") slot->mask = value;
  else slot->value = value;
  if (how == "is") slot->mask = full();
}

void parse_eth(Reader& in, FlowRule& rule) {
  while (!in.done() && in.peek() != "/") {
    const std::string field = in.take("an eth field");
    if (field == "dst" || field == "src") {
      masked_field<FlowRule::Mac>(in, "eth", field, field == "dst" ? rule.eth.dst : rule.eth.src,
                                  "a MAC address (aa:bb:cc:dd:ee:ff)", parse_mac,
                                  [] { return FlowRule::Mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}; },
                                  [](unsigned bits) { return prefix_mask<6>(bits); }, 48);
    } else if (field == "type") {
      in.expect("is");
      rule.eth.type = static_cast<uint16_t>(in.number("eth type (an EtherType, e.g. 0x0806)", 0xffff));
    } else {
      fail("eth: unknown field '" + field + "' (expected dst, src or type)");
    }
  }
}

// ipv4 and ipv6 items: masked src and dst addresses, exact proto. `Header` is FlowRule::Ipv4 or
// FlowRule::Ipv6; `full` and `prefix` give its address type's masks.
template <typename Header, typename Parse, typename FullMask, typename PrefixMask>
void parse_ip_item(Reader& in, const std::string& item, Header& header, const char* kind, Parse parse, FullMask full,
                   PrefixMask prefix, unsigned max_prefix) {
  while (!in.done() && in.peek() != "/") {
    const std::string field = in.take(("an " + item + " field").c_str());
    if (field == "src" || field == "dst") {
      masked_field(in, item, field, field == "src" ? header.src : header.dst, kind, parse, full, prefix, max_prefix);
    } else if (field == "proto") {
      in.expect("is");
      header.proto = static_cast<uint8_t>(in.number(item + " proto", 255));
    } else {
      fail(item + ": unknown field '" + field + "' (expected src, dst or proto)");
    }
  }
}

void parse_ipv4_item(Reader& in, FlowRule& rule) {
  parse_ip_item(in, "ipv4", rule.ipv4, "an IPv4 address", parse_ipv4, [] { return 0xffffffffu; },
                [](unsigned bits) { return bits == 0 ? 0u : ~0u << (32 - bits); }, 32);
}

void parse_ipv6_item(Reader& in, FlowRule& rule) {
  parse_ip_item(in, "ipv6", rule.ipv6, "an IPv6 address", parse_ipv6, [] { return prefix_mask<16>(128); },
                [](unsigned bits) { return prefix_mask<16>(bits); }, 128);
}

void parse_arp_item(Reader& in, FlowRule& rule) {
  while (!in.done() && in.peek() != "/") {
    const std::string field = in.take("an arp_eth_ipv4 field");
    if (field != "spa" && field != "tpa") fail("arp_eth_ipv4: unknown field '" + field + "' (expected spa or tpa)");
    in.expect("is");
    const std::string text = in.take("an IPv4 address");
    uint32_t address = 0;
    if (!parse_ipv4(text, address)) fail("arp_eth_ipv4 " + field + ": '" + text + "' is not an IPv4 address");
    (field == "spa" ? rule.arp.spa : rule.arp.tpa) = address;
  }
}

void parse_ports(Reader& in, const std::string& item, FlowRule& rule) {
  while (!in.done() && in.peek() != "/") {
    const std::string field = in.take(("a " + item + " field").c_str());
    if (field != "src" && field != "dst") fail(item + ": unknown field '" + field + "' (expected src or dst)");
    in.expect("is");
    (field == "src" ? rule.ports.src : rule.ports.dst) =
        static_cast<uint16_t>(in.number(item + " " + field + " port", 65535));
  }
}

void parse_pattern(Reader& in, FlowRule& rule) {
  enum { kStart, kAfterEth, kAfterNetwork, kAfterTransport } layer = kStart;
  for (;;) {
    const std::string item = in.take("a pattern item (eth, ipv4, ipv6, arp_eth_ipv4, tcp, udp) or end");
    if (item == "end") break;
    if (item == "eth") {
      if (layer != kStart) fail("pattern: eth must come first");
      parse_eth(in, rule);
      layer = kAfterEth;
    } else if (item == "ipv4" || item == "ipv6" || item == "arp_eth_ipv4") {
      if (layer >= kAfterNetwork) fail("pattern: " + item + " after another network item");
      if (item == "ipv4") {
        rule.network = FlowRule::Network::Ipv4;
        parse_ipv4_item(in, rule);
      } else if (item == "ipv6") {
        rule.network = FlowRule::Network::Ipv6;
        parse_ipv6_item(in, rule);
      } else {
        rule.network = FlowRule::Network::Arp;
        parse_arp_item(in, rule);
      }
      layer = kAfterNetwork;
    } else if (item == "tcp" || item == "udp") {
      if (rule.network != FlowRule::Network::Ipv4 && rule.network != FlowRule::Network::Ipv6)
        fail("pattern: " + item + " needs ipv4 or ipv6 before it");
      if (layer == kAfterTransport) fail("pattern: " + item + " after another transport item");
      rule.transport = item == "tcp" ? FlowRule::Transport::Tcp : FlowRule::Transport::Udp;
      parse_ports(in, item, rule);
      layer = kAfterTransport;
    } else {
      fail("pattern: unknown item '" + item + "' (expected eth, ipv4, ipv6, arp_eth_ipv4, tcp, udp or end)");
    }
    const std::string separator = in.take("'/' or end");
    if (separator != "/") fail("pattern: expected '/' after " + item + ", got '" + separator + "'");
  }
}

void parse_actions(Reader& in, FlowRule& rule) {
  bool fate = false;
  for (;;) {
    const std::string action = in.take("an action (queue, rss, drop, passthru) or end");
    if (action == "end") break;
    if (fate) fail("actions: '" + action + "' after the rule's fate (one of queue, rss, drop, passthru)");
    fate = true;
    if (action == "queue") {
      in.expect("index");
      rule.fate = FlowRule::Fate::Queue;
      rule.queue = static_cast<uint16_t>(in.number("queue index", 65535));
    } else if (action == "rss") {
      rule.fate = FlowRule::Fate::Rss;
      if (in.peek() == "queues") {
        in.take("queues");
        while (in.peek() != "end") rule.rss_queues.push_back(static_cast<uint16_t>(in.number("rss queue", 65535)));
        in.take("end");
      }
      if (rule.rss_queues.empty()) fail("actions: rss needs 'queues N... end'");
    } else if (action == "drop") {
      rule.fate = FlowRule::Fate::Drop;
    } else if (action == "passthru") {
      rule.fate = FlowRule::Fate::Passthru;
    } else {
      fail("actions: unknown action '" + action + "' (expected queue, rss, drop, passthru or end)");
    }
    const std::string separator = in.take("'/' or end");
    if (separator != "/") fail("actions: expected '/' after " + action + ", got '" + separator + "'");
  }
  if (!fate) fail("actions: the rule needs a fate (queue index N, rss queues N... end, drop or passthru)");
}

template <typename T, typename Show>
void print_masked(std::string& out, const char* field, const std::optional<Masked<T>>& slot, const T& full,
                  Show show) {
  if (!slot) return;
  if (slot->mask == full) {
    out += std::string(" ") + field + " is " + show(slot->value);
  } else {
    out += std::string(" ") + field + " spec " + show(slot->value) + " " + field + " mask " + show(slot->mask);
  }
}

}  // namespace

std::string mac_to_string(const FlowRule::Mac& m) {
  char text[18];
  std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return text;
}

std::string ipv4_to_string(uint32_t host_order) {
  const in_addr a{htonl(host_order)};
  char text[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, &a, text, sizeof text);
}

std::string ipv6_to_string(const FlowRule::Ipv6Bytes& bytes) {
  char text[INET6_ADDRSTRLEN];
  return inet_ntop(AF_INET6, bytes.data(), text, sizeof text);
}

FlowRule parse_flow_rule(const std::vector<std::string>& words) {
  FlowRule rule;
  Reader in(words);
  for (;;) {
    const std::string word = in.take("ingress");
    if (word == "group") {
      rule.group = static_cast<uint32_t>(in.number("group", UINT32_MAX));
    } else if (word == "priority") {
      rule.priority = static_cast<uint32_t>(in.number("priority", UINT32_MAX));
    } else if (word == "ingress") {
      break;
    } else if (word == "egress" || word == "transfer") {
      fail("'" + word + "' rules are not supported: Bypass claims ingress traffic only");
    } else {
      fail("expected group, priority or ingress, got '" + word + "'");
    }
  }
  in.expect("pattern");
  parse_pattern(in, rule);
  in.expect("actions");
  parse_actions(in, rule);
  if (!in.done()) fail("unexpected '" + in.peek() + "' after the actions' end");
  return rule;
}

std::string FlowRule::to_string() const {
  std::string out;
  if (group) out += "group " + std::to_string(group) + " ";
  if (priority) out += "priority " + std::to_string(priority) + " ";
  out += "ingress pattern eth";
  const Mac full_mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  print_masked(out, "dst", eth.dst, full_mac, mac_to_string);
  print_masked(out, "src", eth.src, full_mac, mac_to_string);
  if (eth.type) {
    char type[8];
    std::snprintf(type, sizeof type, "0x%04x", *eth.type);
    out += std::string(" type is ") + type;
  }
  if (network == Network::Ipv4) {
    out += " / ipv4";
    print_masked(out, "src", ipv4.src, 0xffffffffu, ipv4_to_string);
    print_masked(out, "dst", ipv4.dst, 0xffffffffu, ipv4_to_string);
    if (ipv4.proto) out += " proto is " + std::to_string(*ipv4.proto);
  } else if (network == Network::Ipv6) {
    out += " / ipv6";
    const Ipv6Bytes full = prefix_mask<16>(128);
    print_masked(out, "src", ipv6.src, full, ipv6_to_string);
    print_masked(out, "dst", ipv6.dst, full, ipv6_to_string);
    if (ipv6.proto) out += " proto is " + std::to_string(*ipv6.proto);
  } else if (network == Network::Arp) {
    out += " / arp_eth_ipv4";
    if (arp.spa) out += " spa is " + ipv4_to_string(*arp.spa);
    if (arp.tpa) out += " tpa is " + ipv4_to_string(*arp.tpa);
  }
  if (transport != Transport::None) {
    out += transport == Transport::Tcp ? " / tcp" : " / udp";
    if (ports.src) out += " src is " + std::to_string(*ports.src);
    if (ports.dst) out += " dst is " + std::to_string(*ports.dst);
  }
  out += " / end actions ";
  switch (fate) {
    case Fate::Queue: out += "queue index " + std::to_string(queue); break;
    case Fate::Rss:
      out += "rss queues";
      for (uint16_t q : rss_queues) out += " " + std::to_string(q);
      out += " end";
      break;
    case Fate::Drop: out += "drop"; break;
    case Fate::Passthru: out += "passthru"; break;
  }
  return out + " / end";
}

std::string FlowRule::summary() const {
  std::string out = "ETH";
  if (network == Network::Ipv4) out += " IPV4";
  if (network == Network::Ipv6) out += " IPV6";
  if (network == Network::Arp) out += " ARP_ETH_IPV4";
  if (transport == Transport::Tcp) out += " TCP";
  if (transport == Transport::Udp) out += " UDP";
  static const char* const kFates[] = {"QUEUE", "RSS", "DROP", "PASSTHRU"};
  return out + " => " + kFates[static_cast<int>(fate)];
}

}  // namespace bypass::pmd
