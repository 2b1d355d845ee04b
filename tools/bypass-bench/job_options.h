// What one benchmark job does, read from the Config (bench.* options) plus the few settings that
// only make sense on the command line.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "stack/network_stack.h"

namespace bypass::bench {

struct EchoJobOptions {
  uint64_t message_size = 4096;
  int connections = 1;
  int depth = 1;  // messages in flight per connection
  std::chrono::nanoseconds duration = std::chrono::seconds(10);
  SocketAddress listen_address;  // port 0: any free port
  std::string json_path;         // empty: no JSON output

  static EchoJobOptions from_config(const config::Config& conf);
};

// Flags of `bypass-bench echo` beyond the common ones (-c, --set, --help-options). --size,
// --connections, --depth and --duration are shorthands for --set bench.<option>=VALUE and are
// applied to `conf` (errors name the flag); --addr and --json fill the returned options.
// Throws config::ConfigError on an unknown flag or a bad value.
EchoJobOptions parse_echo_flags(const std::vector<std::string>& args, config::Config& conf);

const char* echo_usage();

}  // namespace bypass::bench
