#include "tools/bypass-bench/bench_job.h"

#include <sched.h>

#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>

#include "stack/dpdk/dpdk_stack.h"
#include "stack/inet/wire/bytes.h"
#include "stack/network_stack.h"
#include "tools/bypass-bench/dpdk_link.h"

namespace bypass::bench {

namespace {

constexpr uint64_t kMaxMessageSize = uint64_t{1} << 30;
constexpr int kMaxIodepth = 65536;
const std::vector<std::string> kTransports = {"posix", "dpdk", "rdma"};

// "job.yaml:7:12: bench.iodepth: ..." — the shape of every config error.
[[noreturn]] void fail(const config::Config& conf, const std::string& key, const std::string& message) {
  throw config::ConfigError(conf.origin(key) + ": " + key + ": " + message);
}

std::string side_overlay_key(Side side, const std::string& transport) {
  return std::string("bench.") + side_name(side) + "." + transport;
}

// Overlay items must be "key=value" for an option outside bench.* other than ms.type (the
// transport is what bench.transports chooses; bench options are the job, not a side's setting).
void check_overlay_items(const config::Config& conf, const std::string& key) {
  for (const std::string& item : conf.get_list(key)) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      fail(conf, key, "item '" + item + "' is not key=value (e.g. dpdk.host_ip=10.98.0.1)");
    const std::string name = item.substr(0, eq);
    if (name == "ms.type" || name.rfind("bench.", 0) == 0)
      fail(conf, key, "item '" + item + "': " + name +
                          " cannot differ between sides (set bench.transports or the bench option itself)");
  }
}

// An IPv6 address as dpdk.host_ipv6 takes it (brackets allowed); nullopt when it is not one.
std::optional<inet::Ipv6Address> parse_host_ipv6(const std::string& text) {
  const bool bracketed = text.size() > 2 && text.front() == '[' && text.back() == ']';
  return inet::Ipv6Address::from_string(bracketed ? std::string_view(text).substr(1, text.size() - 2) : text);
}

// The IPv6 server address of the job, nullopt when bench.server_address is empty or IPv4.
std::optional<inet::Ipv6Address> ipv6_server_address(const config::Config& conf) {
  SocketAddress parsed;
  if (!SocketAddress::parse(conf.get_string("bench.server_address"), &parsed) || !parsed.is_ipv6())
    return std::nullopt;
  const std::array<uint8_t, 16> octets = parsed.ipv6_octets();
  return inet::Ipv6Address::from_bytes(octets.data());
}

// The dpdk side's dpdk.host_ipv6 when bench.server_address is IPv6: the stack speaks IPv6 only
// with an address of its own. A side whose settings name one keeps it. Otherwise the server takes
// the server address itself (it listens there), and for ::1 / :: (no host's address: "IPv6, on
// this machine") and for the client the address is the first 96 bits of the server address
// (fd00:bb:: for ::1 / ::) followed by the side's dpdk.host_ip, so the two sides are on one
// prefix and distinct whenever their IPv4 addresses are.
void give_dpdk_side_ipv6(const config::Config& conf, Side side, config::Config& out) {
  const std::optional<inet::Ipv6Address> server = ipv6_server_address(conf);
  if (!server) return;
  const bool host_address = !server->is_loopback() && !server->is_unspecified();
  const std::string key = side_overlay_key(side, "dpdk");
  if (const std::string& own = out.get_string("dpdk.host_ipv6"); !own.empty()) {
    const std::optional<inet::Ipv6Address> own_ip = parse_host_ipv6(own);
    if (side == Side::Server && host_address && own_ip && *own_ip != *server)
      fail(conf, "bench.server_address",
           "'" + conf.get_string("bench.server_address") + "' is not the server's dpdk.host_ipv6 " + own + " (" +
               out.origin("dpdk.host_ipv6") + "): a dpdk server listens on its own address; drop one of them");
    return;
  }
  if (side == Side::Server && host_address) {
    out.set("dpdk.host_ipv6", server->to_string(), "bench.server_address");
    return;
  }
  const int64_t prefix_length = out.get_int("dpdk.ipv6_prefix_length");
  if (prefix_length > 96)
    fail(conf, key, "no dpdk.host_ipv6 for the IPv6 bench.server_address '" + conf.get_string("bench.server_address") +
                        "', and dpdk.ipv6_prefix_length " + std::to_string(prefix_length) +
                        " leaves no room to derive one from dpdk.host_ip; set dpdk.host_ipv6 here");
  inet::Ipv6Address derived = host_address ? *server : inet::Ipv6Address{{0xfd, 0x00, 0x00, 0xbb}};
  const uint32_t ipv4 = out.get_ipv4("dpdk.host_ip").host_order;
  for (int i = 0; i < 4; ++i) derived.bytes[12 + i] = static_cast<uint8_t>(ipv4 >> (24 - 8 * i));
  out.set("dpdk.host_ipv6", derived.to_string(), "bench.server_address (this side's dpdk.host_ip on its prefix)");
}

}  // namespace

const char* side_name(Side side) { return side == Side::Server ? "server" : "client"; }

const char* mode_name(BenchMode mode) { return mode == BenchMode::RequestReply ? "reqrep" : "stream"; }

std::string BenchCase::name() const {
  std::string size = config::format_size(message_size);  // "4K" -> "4KiB" reads as bytes
  if (!size.empty() && (size.back() == 'K' || size.back() == 'M' || size.back() == 'G')) size += "iB";
  return transport + " " + size + " d" + std::to_string(iodepth);
}

std::vector<uint64_t> message_sizes_from_config(const config::Config& conf) {
  const std::string key = "bench.message_size";
  std::vector<uint64_t> sizes;
  for (const std::string& item : conf.get_list(key)) {
    uint64_t size = 0;
    try {
      size = config::parse_size(item);
    } catch (const config::ConfigError& e) {
      fail(conf, key, e.what());
    }
    if (size < 1 || size > kMaxMessageSize) fail(conf, key, "'" + item + "' is outside 1..1G");
    sizes.push_back(size);
  }
  if (sizes.empty()) fail(conf, key, "needs at least one size (e.g. 4K)");
  return sizes;
}

std::vector<int> iodepths_from_config(const config::Config& conf) {
  const std::string key = "bench.iodepth";
  std::vector<int> depths;
  for (const std::string& item : conf.get_list(key)) {
    int64_t depth = 0;
    try {
      depth = config::parse_int(item);
    } catch (const config::ConfigError& e) {
      fail(conf, key, e.what());
    }
    if (depth < 1 || depth > kMaxIodepth)
      fail(conf, key, "'" + item + "' is outside 1.." + std::to_string(kMaxIodepth) +
                          " (messages in flight per connection)");
    depths.push_back(static_cast<int>(depth));
  }
  if (depths.empty()) fail(conf, key, "needs at least one queue depth (e.g. 1)");
  return depths;
}

BenchJob BenchJob::from_config(const config::Config& conf) {
  BenchJob job;
  job.transports = conf.get_list("bench.transports");
  std::set<std::string> seen;
  for (const std::string& transport : job.transports) {
    if (std::find(kTransports.begin(), kTransports.end(), transport) == kTransports.end())
      fail(conf, "bench.transports", "'" + transport + "' is not one of posix, dpdk, rdma");
    if (!seen.insert(transport).second) fail(conf, "bench.transports", "'" + transport + "' is listed twice");
  }
  if (job.transports.empty()) job.transports.push_back(conf.get_string("ms.type"));

  job.mode = conf.get_string("bench.mode") == "stream" ? BenchMode::Stream : BenchMode::RequestReply;
  job.message_sizes = message_sizes_from_config(conf);
  job.iodepths = iodepths_from_config(conf);
  job.connections = static_cast<int>(conf.get_int("bench.connections"));
  job.messenger_per_thread = conf.get_string("bench.messengers") == "per-thread";
  job.duration = conf.get_duration("bench.duration");
  job.count = static_cast<uint64_t>(conf.get_int("bench.count"));
  job.warmup = conf.get_duration("bench.warmup");
  job.think_time = conf.get_duration("bench.think_time");
  if (const std::string reply = conf.get_string("bench.reply_size"); reply != "echo") {
    try {
      job.reply_size = config::parse_size(reply);
    } catch (const config::ConfigError& e) {
      fail(conf, "bench.reply_size", std::string("'") + reply + "' is neither echo nor a size: " + e.what());
    }
    if (*job.reply_size > kMaxMessageSize) fail(conf, "bench.reply_size", "'" + reply + "' is outside 0..1G");
  }
  job.server_address = conf.get_string("bench.server_address");
  job.output_path = conf.get_string("bench.output");
  const std::string& progress = conf.get_string("bench.progress");
  job.progress = progress == "line" ? ProgressStyle::Line
                 : progress == "log" ? ProgressStyle::Log
                 : progress == "off" ? ProgressStyle::Off
                                     : ProgressStyle::Auto;

  if (job.count > 0 && conf.origin("bench.duration") != "default")
    fail(conf, "bench.count", "bench.count and bench.duration (" + conf.origin("bench.duration") +
                                  ") are both set: a case ends after a count or after a duration, pick one");
  if (job.connections > 1 && !job.messenger_per_thread)
    fail(conf, "bench.connections", std::to_string(job.connections) +
                                        " connections need bench.messengers per-thread: one messenger keeps one "
                                        "session per server");
  if (job.reply_size && job.mode == BenchMode::Stream)
    fail(conf, "bench.reply_size", "a reply size needs bench.mode reqrep (a stream has no reply)");
  if (job.think_time.count() > 0 && job.mode == BenchMode::Stream)
    fail(conf, "bench.think_time", "think time needs bench.mode reqrep (a stream has no reply to wait for)");
  if (!job.server_address.empty()) {
    SocketAddress parsed;
    if (!SocketAddress::parse(job.server_address, &parsed))
      fail(conf, "bench.server_address",
           "'" + job.server_address + "' is not IPv4:port or [IPv6]:port (e.g. 127.0.0.1:6800, [::1]:6800)");
  }
  for (const std::string& transport : job.transports) {
    for (Side side : {Side::Server, Side::Client}) {
      check_overlay_items(conf, side_overlay_key(side, transport));
      const config::Config side_conf = side_config(conf, side, transport);  // a bad overlay value fails here
      if (transport != "dpdk") continue;
      inet::InetSettings ipv6_only;  // the side's IPv6 options as the stack will read them
      try {
        apply_dpdk_ipv6_options(side_conf, ipv6_only);
      } catch (const std::runtime_error& e) {
        fail(conf, side_overlay_key(side, transport), e.what());
      }
    }
  }
  return job;
}

std::vector<BenchCase> BenchJob::cases_for(const std::string& transport) const {
  std::vector<BenchCase> cases;
  for (uint64_t size : message_sizes)
    for (int depth : iodepths) cases.push_back({transport, size, depth});
  return cases;
}

std::string BenchJob::single_transport(const config::Config& conf, const std::string& command) const {
  if (transports.size() != 1)
    fail(conf, "bench.transports",
         command + " runs one transport but " + std::to_string(transports.size()) +
             " are listed; pick one (--set bench.transports=" + transports.front() +
             ") or use `bypass-bench run`");
  return transports.front();
}

config::Config side_config(const config::Config& conf, Side side, const std::string& transport) {
  config::Config out = conf;
  out.set("ms.type", transport, "bench.transports");
  const std::string key = side_overlay_key(side, transport);
  check_overlay_items(conf, key);
  for (const std::string& item : conf.get_list(key)) {
    out.set_assignment(item, conf.origin(key) + ": " + key);
  }
  if (transport == "dpdk") {
    apply_dpdk_link(conf, side, out);
    give_dpdk_side_ipv6(conf, side, out);
  }
  const std::string cpus_key = std::string("bench.") + side_name(side) + ".cpus";
  if (!conf.get_cpus(cpus_key).empty()) out.set("ms.cpus", conf.to_string(cpus_key), conf.origin(cpus_key));
  return out;
}

void check_two_process_job(const config::Config& conf, const BenchJob& job) {
  const std::vector<int> server_cpus = conf.get_cpus("bench.server.cpus");
  const std::vector<int> client_cpus = conf.get_cpus("bench.client.cpus");
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
    for (const char* key : {"bench.server.cpus", "bench.client.cpus"}) {
      for (int cpu : conf.get_cpus(key)) {
        if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed))
          fail(conf, key, "CPU " + std::to_string(cpu) + " is not available to this process (" +
                              std::to_string(CPU_COUNT(&allowed)) + " CPUs allowed)");
      }
    }
  }
  for (int cpu : server_cpus) {
    if (std::find(client_cpus.begin(), client_cpus.end(), cpu) != client_cpus.end())
      fail(conf, "bench.client.cpus", "CPU " + std::to_string(cpu) +
                                          " is also in bench.server.cpus: each side needs its own CPUs");
  }
  if (std::find(job.transports.begin(), job.transports.end(), "dpdk") == job.transports.end()) return;
  const config::Config server = side_config(conf, Side::Server, "dpdk");
  const config::Config client = side_config(conf, Side::Client, "dpdk");
  // A dpdk process owns its port and address: the two sides of one machine are two hosts.
  if (server.get_ipv4("dpdk.host_ip") == client.get_ipv4("dpdk.host_ip"))
    fail(conf, "bench.client.dpdk",
         "server and client both use dpdk.host_ip " + server.get_ipv4("dpdk.host_ip").to_string() +
             ": a dpdk run is two processes (two hosts); give each side its own address in "
             "bench.server.dpdk and bench.client.dpdk");
  const std::optional<inet::Ipv6Address> server_ipv6 = parse_host_ipv6(server.get_string("dpdk.host_ipv6"));
  if (server_ipv6 && server_ipv6 == parse_host_ipv6(client.get_string("dpdk.host_ipv6")))
    fail(conf, "bench.client.dpdk",
         "server and client both use dpdk.host_ipv6 " + server_ipv6->to_string() +
             ": give each side its own address in bench.server.dpdk and bench.client.dpdk");
  if (!server.get_bool("dpdk.in_memory") && !client.get_bool("dpdk.in_memory") &&
      server.get_string("dpdk.file_prefix") == client.get_string("dpdk.file_prefix"))
    fail(conf, "bench.client.dpdk",
         "server and client share dpdk.file_prefix '" + server.get_string("dpdk.file_prefix") +
             "' without dpdk.in_memory: two EAL instances would collide");
}

}  // namespace bypass::bench
