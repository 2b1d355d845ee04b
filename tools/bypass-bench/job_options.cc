#include "tools/bypass-bench/job_options.h"

#include <map>

#include "tools/bypass-bench/bench_job.h"
#include "tools/bypass-bench/subcommand_flags.h"

namespace bypass::bench {

EchoJobOptions EchoJobOptions::from_config(const config::Config& conf) {
  // Echo runs one case in one process: no sweep, and no transport that owns a port per process.
  if (conf.get_string("ms.type") == "dpdk")
    throw config::ConfigError(conf.origin("ms.type") +
                              ": ms.type: echo runs server and client in one process, but a dpdk process owns "
                              "one port: use `bypass-bench run` (two processes)");
  const std::vector<uint64_t> sizes = message_sizes_from_config(conf);
  const std::vector<int> depths = iodepths_from_config(conf);
  if (sizes.size() != 1)
    throw config::ConfigError(conf.origin("bench.message_size") + ": bench.message_size: echo runs one size, " +
                              std::to_string(sizes.size()) + " are listed (sweeps are for `bypass-bench run`)");
  if (depths.size() != 1)
    throw config::ConfigError(conf.origin("bench.iodepth") + ": bench.iodepth: echo runs one queue depth, " +
                              std::to_string(depths.size()) + " are listed (sweeps are for `bypass-bench run`)");
  EchoJobOptions opts;
  opts.message_size = sizes.front();
  opts.connections = static_cast<int>(conf.get_int("bench.connections"));
  opts.depth = depths.front();
  opts.duration = conf.get_duration("bench.duration");
  return opts;
}

EchoJobOptions parse_echo_flags(const std::vector<std::string>& args, config::Config& conf) {
  static const std::map<std::string, std::string, std::less<>> kShorthands = {
      {"--size", "bench.message_size"},
      {"--connections", "bench.connections"},
      {"--depth", "bench.iodepth"},
      {"--duration", "bench.duration"},
  };
  std::string addr_text = "127.0.0.1:0";
  std::string json_path;
  const auto known = [](const std::string& flag) {
    return kShorthands.count(flag) != 0 || flag == "--addr" || flag == "--json";
  };
  for (const auto& [flag, value] : split_valued_flags(args, "echo", known, "bypass-bench --help")) {
    if (auto it = kShorthands.find(flag); it != kShorthands.end()) {
      conf.set(it->second, value, flag);
    } else if (flag == "--addr") {
      addr_text = value;
    } else {
      json_path = value;
    }
  }
  EchoJobOptions opts = EchoJobOptions::from_config(conf);
  if (!SocketAddress::parse(addr_text, &opts.listen_address)) {
    throw config::ConfigError("echo: --addr: '" + addr_text +
                              "' is not IPv4:port or [IPv6]:port (e.g. 127.0.0.1:0)");
  }
  opts.json_path = json_path;
  return opts;
}

const char* echo_usage() {
  return "usage: bypass-bench echo [-c FILE] [--set key=value]... [--size 4K] [--connections N]\n"
         "                         [--depth N] [--duration 5s] [--addr 127.0.0.1:0] [--json FILE]\n"
         "\n"
         "Runs an echo server and a ping-pong client in this process, each on its own NetworkStack\n"
         "of the configured transport (ms.type, ms.workers). Every connection keeps --depth messages\n"
         "of --size bytes in flight for --duration; prints progress each second, then messages/s,\n"
         "MB/s (message bytes one way), latency percentiles and CPU time.\n"
         "  --size         bench.message_size   --connections  bench.connections\n"
         "  --depth        bench.iodepth        --duration     bench.duration\n"
         "  --addr         server listen address (port 0 picks a free port)\n"
         "  --json FILE    also write the results as JSON\n";
}

}  // namespace bypass::bench
