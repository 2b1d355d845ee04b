// bypass-pmd stack ...: the userspace TCP/IP stack (stack/inet on the dpdk transport, configured by
// the same dpdk.* options) brought up on a port, so an operator can test it against anything on
// the wire: ping, ARP resolution, echo and discard servers, and a bulk sender.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "stack/inet/wire/bytes.h"
#include "stack/network_stack.h"

namespace bypass::tools {

// One `stack` command line with every value checked (before the EAL starts).
struct StackCommand {
  enum class Kind { Ping, Arp, Neigh, EchoServer, DiscardServer, Send };
  Kind kind = Kind::Ping;
  std::string name;                                  // "ping", "echo-server" ...
  uint32_t target_ip = 0;                            // ping an IPv4 address (host order)
  std::optional<inet::Ipv6Address> target_ipv6;      // ping an IPv6 address (ICMPv6 echo) instead
  std::vector<uint32_t> arp_targets;                 // arp (host order)
  std::vector<inet::Ipv6Address> neigh_targets;      // neigh: resolve these first (may be none)
  SocketAddress peer;                                // send
  uint16_t port = 0;                                 // echo-server, discard-server
  uint64_t count = 0;                                // ping -c (0: until interrupted)
  size_t data_bytes = 56;                            // ping -s
  std::chrono::nanoseconds interval = std::chrono::seconds(1);  // ping -i
  std::chrono::nanoseconds timeout = std::chrono::seconds(1);   // ping/arp -W; send: wait for the peer
  uint64_t bytes = 0;                                // send --bytes
  std::chrono::nanoseconds stats_interval{0};        // servers: dump ARP + connections this often
  bool state = false;                                // --state: dump ARP + connections before exiting
  bool json = false;
};

// Parses the words after "stack" (e.g. {"ping", "10.0.0.1", "-c", "3"}); throws UsageError.
StackCommand parse_stack_command(const std::vector<std::string>& args, bool json);
std::string stack_help();

// Brings the stack up, runs `command` and tears everything down. `stop` is raised by SIGINT and
// SIGTERM (`stop_signal` says which), `dump` by SIGUSR1 (print the ARP cache and TCP connections
// now). Returns the exit status.
int run_stack_command(const StackCommand& command, const config::Config& config, std::atomic<bool>& stop,
                      std::atomic<bool>& dump, const std::atomic<int>& stop_signal);

}  // namespace bypass::tools
