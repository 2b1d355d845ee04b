// One bulk transfer between two stacks over the in-memory wire, for profiling the receive path
// (not a test): valgrind --tool=callgrind inet_rx_profile [--gro on|off] [--bytes N] [--burst N]
// Prints what crossed the wire so instruction counts can be put per byte and per segment.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/unit/inet/harness.h"

using namespace bypass::inet;
using namespace bypass::inet::test;

int main(int argc, char** argv) {
  bool gro = true;
  uint64_t bytes = 64ull << 20;
  size_t burst = 32;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--gro") gro = value == "on";
    else if (flag == "--bytes") bytes = std::strtoull(value.c_str(), nullptr, 10);
    else if (flag == "--burst") burst = std::strtoul(value.c_str(), nullptr, 10);
    else {
      std::fprintf(stderr, "usage: inet_rx_profile [--gro on|off] [--bytes N] [--burst N]\n");
      return 2;
    }
  }
  InetSettings settings;
  settings.tcp.gro = gro;
  TwoHosts hosts(5, settings);
  hosts.wire.burst = burst;
  auto [client, server] = connect_pair(hosts);
  if (!client || !server) {
    std::fprintf(stderr, "inet_rx_profile: no connection\n");
    return 1;
  }
  TransferResult result = transfer(hosts, client, server, bytes, 600s);
  const InetStats& rx = hosts.b->stats();
  std::printf("gro=%s burst=%zu bytes=%llu complete=%d receiver: segments=%llu gro_units=%llu gro_segments=%llu "
              "acks_sent=%llu\n",
              gro ? "on" : "off", burst, static_cast<unsigned long long>(result.received), result.complete ? 1 : 0,
              static_cast<unsigned long long>(rx.tcp_segments_received),
              static_cast<unsigned long long>(rx.tcp_gro_units), static_cast<unsigned long long>(rx.tcp_gro_segments),
              static_cast<unsigned long long>(rx.tcp_segments_sent));
  return result.complete ? 0 : 1;
}
