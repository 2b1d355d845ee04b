// A messenger benchmark job (`bypass-bench server|client|run`), read from the bench.* options and
// checked as a whole before anything starts: every bad value or impossible combination is one
// config::ConfigError naming the option and where its value came from.
//
// A job sweeps transports x message sizes x queue depths; each combination is one case. The server
// side and the client side of a transport run with the shared options plus their own overlays
// (bench.server.<transport>, bench.client.<transport>: "key=value" items) and CPUs
// (bench.server.cpus, bench.client.cpus), because e.g. two dpdk processes over net_memif need
// different addresses, memif roles and cores.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace bypass::bench {

enum class BenchMode { RequestReply, Stream };
enum class ProgressStyle { Auto, Line, Log, Off };
enum class Side { Server, Client };

const char* side_name(Side side);
const char* mode_name(BenchMode mode);  // "reqrep" / "stream", as in the result JSON

struct BenchCase {
  std::string transport;
  uint64_t message_size = 0;
  int iodepth = 0;
  // "posix 4KiB d1": the column header `compare` shows.
  std::string name() const;
};

struct BenchJob {
  std::vector<std::string> transports;  // never empty
  BenchMode mode = BenchMode::RequestReply;
  std::vector<uint64_t> message_sizes;  // never empty
  std::vector<int> iodepths;            // never empty
  int connections = 1;
  bool messenger_per_thread = false;
  std::chrono::nanoseconds duration{0};
  uint64_t count = 0;  // > 0: measure this many messages per case instead of `duration`
  std::chrono::nanoseconds warmup{0};
  std::chrono::nanoseconds think_time{0};
  std::optional<uint64_t> reply_size;  // bench.reply_size; none: the server echoes the request
  std::string server_address;  // may be empty (see bench.server_address)
  std::string output_path;
  ProgressStyle progress = ProgressStyle::Auto;

  // Reads and checks every bench.* option, and both sides' overlays for every transport.
  static BenchJob from_config(const config::Config& conf);

  // The cases of one transport, message sizes outermost.
  std::vector<BenchCase> cases_for(const std::string& transport) const;
  // The one transport a lone `server` or `client` process runs; an error naming `command` when
  // bench.transports lists several.
  std::string single_transport(const config::Config& conf, const std::string& command) const;
};

// The configuration one side runs with for `transport`: `conf` with ms.type set to it, the side's
// overlay items applied and ms.cpus taken from bench.<side>.cpus when that is set. For dpdk, a named
// bench.dpdk_link gives the side its port (dpdk_link.h), and with an IPv6 bench.server_address, a side without dpdk.host_ipv6 gets one: the server the server address
// (unless it is ::1 or ::), otherwise the first 96 bits of the server address (fd00:bb:: for ::1
// and ::) followed by the side's dpdk.host_ip.
config::Config side_config(const config::Config& conf, Side side, const std::string& transport);

// Checks that a server and a client process can run side by side on this machine for every
// transport of `job` (`run`): distinct CPUs, and for dpdk distinct addresses and EAL files.
void check_two_process_job(const config::Config& conf, const BenchJob& job);

// bench.message_size / bench.iodepth items, each checked (used by `echo` too).
std::vector<uint64_t> message_sizes_from_config(const config::Config& conf);
std::vector<int> iodepths_from_config(const config::Config& conf);

}  // namespace bypass::bench
