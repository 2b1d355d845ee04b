// Command-line parsing of `bypass-pmd stack ...`: every value is checked here, before the EAL starts.
#include <arpa/inet.h>

#include <algorithm>
#include <optional>

#include "stack/inet/icmp_echo.h"
#include "tools/bypass-pmd/commands.h"
#include "tools/bypass-pmd/stack_commands.h"

namespace bypass::tools {

namespace {

constexpr uint64_t kMaxPingCount = 1'000'000;

std::string without_brackets(const std::string& text) {
  return text.size() > 2 && text.front() == '[' && text.back() == ']' ? text.substr(1, text.size() - 2) : text;
}

// A unicast IPv6 address, with or without brackets ("fd00::1", "[fd00::1]"); nullopt when `text`
// is no IPv6 address at all.
std::optional<inet::Ipv6Address> ipv6_arg(const std::string& where, const std::string& text) {
  const auto ip = inet::Ipv6Address::from_string(without_brackets(text));
  if (!ip) return std::nullopt;
  // RFC 4291 §2.5.2, §2.5.3, §2.7: ::, ::1 and groups name no one neighbour to talk to.
  if (ip->is_unspecified() || ip->is_loopback() || ip->is_multicast())
    throw UsageError(where + ": '" + text + "' is not a unicast IPv6 address");
  return ip;
}

uint32_t ipv4_arg(const std::string& where, const std::string& text) {
  in_addr addr{};
  if (inet_pton(AF_INET, text.c_str(), &addr) != 1)
    throw UsageError(where + ": '" + text + "' is not an IPv4 address (dotted quad, e.g. 10.67.0.1)");
  const uint32_t ip = ntohl(addr.s_addr);
  if (ip == 0 || ip == 0xffffffffu || (ip >> 28) == 0xe)
    throw UsageError(where + ": '" + text + "' is not a unicast address");
  return ip;
}

// Splits "-c 3", "--count=3" style flags off `args`. Flags with a value are listed as
// {short, long}; `switches` take none.
struct StackFlags {
  std::string command;
  std::vector<std::pair<std::string, std::string>> with_value;
  std::vector<std::string> switches;
  std::vector<std::string> positional;
  struct Value {
    std::string name;   // the long name
    std::string typed;  // as given ("-c")
    std::string text;
  };
  std::vector<Value> values;
  std::vector<std::string> set;                              // switches given

  void parse(const std::vector<std::string>& args) {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a.size() < 2 || a[0] != '-') {
        positional.push_back(a);
        continue;
      }
      const size_t eq = a.find('=');
      const std::string flag = a.substr(0, eq);
      if (std::find(switches.begin(), switches.end(), flag) != switches.end()) {
        if (eq != std::string::npos) throw UsageError("stack " + command + " " + flag + ": takes no value");
        set.push_back(flag);
        continue;
      }
      auto known = std::find_if(with_value.begin(), with_value.end(),
                                [&](const auto& f) { return f.first == flag || f.second == flag; });
      if (known == with_value.end()) throw UsageError("stack " + command + ": unknown option '" + flag + "'" + expected());
      std::string value;
      if (eq != std::string::npos) {
        value = a.substr(eq + 1);
      } else {
        if (i + 1 >= args.size()) throw UsageError("stack " + command + " " + flag + ": needs a value");
        value = args[++i];
      }
      values.push_back(Value{known->second, flag, value});
    }
  }
  std::string expected() const {
    std::string out;
    for (const auto& [s, l] : with_value) out += (out.empty() ? "" : ", ") + (s.empty() ? l : s + "/" + l) + " VALUE";
    for (const auto& s : switches) out += (out.empty() ? "" : ", ") + s;
    return " (expected " + (out.empty() ? std::string("no options") : out) + ")";
  }
  bool has(const std::string& name) const { return std::find(set.begin(), set.end(), name) != set.end(); }
  std::string where(const std::string& flag) const { return "stack " + command + " " + flag; }
};

}  // namespace

std::string stack_help() {
  return "stack commands (the userspace TCP/IP stack on the port: dpdk.host_ip, netmask, gateway, vdev;\n"
         "  dpdk.host_ipv6, ipv6_prefix_length, gateway_ipv6 for IPv6):\n"
         "  stack ping IP [-c N] [-s BYTES] [-i 1s] [-W 1s]   ICMP echo from the stack, ping(8) output;\n"
         "                                          an IPv6 address (fd00::1 or [fd00::1]) sends ICMPv6 echo\n"
         "  stack arp IP... [-W 3s]                 resolve; print the ARP cache (IP, MAC, state, age);\n"
         "                                          IPv6 neighbours: stack neigh\n"
         "  stack neigh [IPV6...] [-W 3s]           resolve by Neighbor Discovery; print the neighbour cache\n"
         "  stack echo-server PORT [--stats-interval D]   echo every byte back until SIGINT/SIGTERM\n"
         "  stack discard-server PORT [--stats-interval D]   read and drop until SIGINT/SIGTERM\n"
         "  stack send IP:PORT --bytes N [-W 10s]   send N random bytes, wait for the peer to close, bytes/s\n"
         "                                          ([IPV6]:PORT once TCP runs over IPv6)\n"
         "  each takes --state (ARP cache and TCP connections before exiting) and --json; a running\n"
         "  server prints both on SIGUSR1 and every --stats-interval\n";
}

StackCommand parse_stack_command(const std::vector<std::string>& args, bool json) {
  StackCommand c;
  c.json = json;
  if (args.empty())
    throw UsageError("stack: needs a command: ping, arp, neigh, echo-server, discard-server or send");
  c.name = args[0];
  StackFlags flags;
  flags.command = c.name;
  flags.switches = {"--state"};
  if (c.name == "ping") {
    c.kind = StackCommand::Kind::Ping;
    flags.with_value = {{"-c", "--count"}, {"-s", "--size"}, {"-i", "--interval"}, {"-W", "--timeout"}};
  } else if (c.name == "arp") {
    c.kind = StackCommand::Kind::Arp;
    c.timeout = std::chrono::seconds(3);
    flags.with_value = {{"-W", "--timeout"}};
  } else if (c.name == "neigh") {
    c.kind = StackCommand::Kind::Neigh;
    c.timeout = std::chrono::seconds(3);
    flags.with_value = {{"-W", "--timeout"}};
  } else if (c.name == "echo-server" || c.name == "discard-server") {
    c.kind = c.name == "echo-server" ? StackCommand::Kind::EchoServer : StackCommand::Kind::DiscardServer;
    flags.with_value = {{"", "--stats-interval"}};
  } else if (c.name == "send") {
    c.kind = StackCommand::Kind::Send;
    c.timeout = std::chrono::seconds(10);
    flags.with_value = {{"", "--bytes"}, {"-W", "--timeout"}};
  } else if (c.name == "conns") {
    throw UsageError("stack conns: connections live in a running stack; give a server or `stack send` --state, "
                     "--stats-interval D, or send SIGUSR1 to a running server");
  } else {
    throw UsageError("stack: unknown command '" + c.name +
                     "' (expected ping, arp, neigh, echo-server, discard-server or send)");
  }
  flags.parse(std::vector<std::string>(args.begin() + 1, args.end()));
  c.state = flags.has("--state");
  bool have_bytes = false;
  for (const auto& [name, typed, value] : flags.values) {
    const std::string where = flags.where(typed);
    if (name == "--count") c.count = number_arg(where, value, 1, kMaxPingCount);
    if (name == "--size") c.data_bytes = number_arg(where, value, 0, inet::IcmpEcho::kMaxDataBytes, " (data bytes)");
    if (name == "--interval") c.interval = duration_arg(where, value);
    if (name == "--timeout") c.timeout = duration_arg(where, value);
    if (name == "--stats-interval") c.stats_interval = duration_arg(where, value);
    if (name == "--bytes") {
      try {
        c.bytes = config::parse_size(value);
      } catch (const std::exception& e) {
        throw UsageError(where + ": '" + value + "' is not a byte count (e.g. 1000, 64K, 10M, 1G): " + e.what());
      }
      if (c.bytes == 0) throw UsageError(where + ": must be at least 1");
      have_bytes = true;
    }
  }
  if (c.interval < std::chrono::milliseconds(1))
    throw UsageError("stack ping -i: '" + config::format_duration(c.interval) + "' is too short; use 1ms or more");
  if (c.timeout < std::chrono::milliseconds(1))
    throw UsageError(flags.where("-W") + ": '" + config::format_duration(c.timeout) + "' is too short; use 1ms or more");
  if (c.stats_interval.count() != 0 && c.stats_interval < std::chrono::milliseconds(100))
    throw UsageError(flags.where("--stats-interval") + ": '" + config::format_duration(c.stats_interval) +
                     "' is too short; use 100ms or more");
  const auto& pos = flags.positional;
  auto extra = [&](size_t allowed) {
    if (pos.size() > allowed) throw UsageError("stack " + c.name + ": unexpected argument '" + pos[allowed] + "'");
  };
  switch (c.kind) {
    case StackCommand::Kind::Ping:
      if (pos.empty()) throw UsageError("stack ping: needs the IPv4 or IPv6 address to ping");
      extra(1);
      c.target_ipv6 = ipv6_arg("stack ping", pos[0]);
      if (!c.target_ipv6 && pos[0].find(':') != std::string::npos)
        throw UsageError("stack ping: '" + pos[0] + "' is not an IPv6 address (e.g. fd00::1 or [fd00::1])");
      if (!c.target_ipv6) c.target_ip = ipv4_arg("stack ping", pos[0]);
      break;
    case StackCommand::Kind::Arp:
      if (pos.empty()) throw UsageError("stack arp: needs one or more IPv4 addresses to resolve");
      for (const auto& p : pos) {
        if (ipv6_arg("stack arp", p))
          throw UsageError("stack arp: '" + p + "' is an IPv6 address; IPv6 neighbours are resolved by `stack neigh " + p + "`");
        c.arp_targets.push_back(ipv4_arg("stack arp", p));
      }
      break;
    case StackCommand::Kind::Neigh:
      for (const auto& p : pos) {
        const auto ip = ipv6_arg("stack neigh", p);
        if (!ip) throw UsageError("stack neigh: '" + p + "' is not an IPv6 address (e.g. fd00::1); IPv4: stack arp");
        c.neigh_targets.push_back(*ip);
      }
      break;
    case StackCommand::Kind::EchoServer:
    case StackCommand::Kind::DiscardServer:
      if (pos.empty()) throw UsageError("stack " + c.name + ": needs a TCP port to listen on (1..65535)");
      extra(1);
      c.port = static_cast<uint16_t>(number_arg("stack " + c.name + " PORT", pos[0], 1, 65535));
      break;
    case StackCommand::Kind::Send: {
      if (pos.empty()) throw UsageError("stack send: needs the peer as IP:PORT or [IPV6]:PORT, e.g. 10.67.0.1:9");
      extra(1);
      const std::string& peer = pos[0];
      if (!peer.empty() && peer.front() == '[') {
        // RFC 3986 §3.2.2: an IPv6 literal with a port is written in brackets.
        const size_t close = peer.find(']');
        if (close == std::string::npos)
          throw UsageError("stack send: '" + peer + "' has no closing ']'; give [IPV6]:PORT, e.g. [fd00::1]:9");
        if (close + 1 >= peer.size() || peer[close + 1] != ':')
          throw UsageError("stack send: '" + peer + "' has no port; give [IPV6]:PORT, e.g. [fd00::1]:9");
        const std::string host = peer.substr(0, close + 1);
        const auto ip = ipv6_arg("stack send", host);
        if (!ip) throw UsageError("stack send: '" + host + "' is not an IPv6 address (e.g. [fd00::1]:9)");
        const auto port = static_cast<uint16_t>(number_arg("stack send port", peer.substr(close + 2), 1, 65535));
        if (!SocketAddress::parse("[" + ip->to_string() + "]:" + std::to_string(port), &c.peer))
          throw UsageError("stack send: '" + peer + "' is not an address");
      } else {
        const size_t colon = peer.rfind(':');
        if (colon == std::string::npos)
          throw UsageError("stack send: '" + peer + "' has no port; give IP:PORT, e.g. 10.67.0.1:9");
        if (peer.find(':') != colon)
          throw UsageError("stack send: '" + peer + "': write an IPv6 peer in brackets, [IPV6]:PORT (e.g. [fd00::1]:9)");
        const uint32_t ip = ipv4_arg("stack send", peer.substr(0, colon));
        const auto port = static_cast<uint16_t>(number_arg("stack send port", peer.substr(colon + 1), 1, 65535));
        c.peer = SocketAddress::ipv4(ip, port);
      }
      if (!have_bytes) throw UsageError("stack send: needs --bytes N (how much to send, e.g. 10M)");
      break;
    }
  }
  return c;
}

}  // namespace bypass::tools
