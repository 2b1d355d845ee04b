#include "tools/bypass-pmd/commands.h"

#include <regex.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#include "tools/bypass-pmd/doctor.h"
#include "tools/bypass-pmd/forward.h"
#include "tools/bypass-pmd/json.h"

namespace bypass::tools {

namespace {

std::string join(const std::vector<std::string>& items, const char* sep = " ") {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out.empty() ? "-" : out;
}

// The commands a command line may name (the shell also knows quit).
std::vector<std::string> runnable() {
  std::vector<std::string> out;
  for (const auto& n : Commands::names())
    if (n != "quit") out.push_back(n);
  return out;
}

// A compiled POSIX extended regular expression (as grep -E), freed on scope exit.
class Regex {
 public:
  explicit Regex(const std::string& pattern) {
    const int rc = regcomp(&compiled_, pattern.empty() ? "." : pattern.c_str(), REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char reason[128];
      regerror(rc, &compiled_, reason, sizeof reason);
      throw UsageError("xstats --filter: '" + pattern +
                       "' is not a valid regular expression (POSIX extended, as grep -E): " + reason);
    }
  }
  ~Regex() { regfree(&compiled_); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  bool matches(const std::string& text) const { return regexec(&compiled_, text.c_str(), 0, nullptr, 0) == 0; }

 private:
  regex_t compiled_{};
};

// Pulls "--flag VALUE" / "--flag=VALUE" pairs out of args; anything unknown is an error.
struct FlagParser {
  std::vector<std::string> args;
  size_t i = 0;
  std::string command;
  bool next(std::string& flag, std::string& value, const std::vector<std::string>& with_value,
            std::vector<std::string>& positional) {
    while (i < args.size()) {
      const std::string& a = args[i++];
      if (a.rfind("--", 0) != 0) {
        positional.push_back(a);
        continue;
      }
      const size_t eq = a.find('=');
      flag = a.substr(0, eq);
      if (std::find(with_value.begin(), with_value.end(), flag) == with_value.end())
        throw UsageError(command + ": unknown option '" + flag + "'" +
                         (with_value.empty() ? " (it takes only --json)"
                                             : " (expected " + join(with_value, ", ") + " or --json)"));
      if (eq != std::string::npos) {
        value = a.substr(eq + 1);
      } else {
        if (i >= args.size()) throw UsageError(command + " " + flag + ": needs a value");
        value = args[i++];
      }
      return true;
    }
    return false;
  }
};

void print_rates(const std::vector<PortRates>& rates, bool final, bool json, const char* mode) {
  auto ul = [](uint64_t v) { return static_cast<unsigned long>(v); };
  if (json) {
    Json j;
    j.begin_object().field("type", final ? "summary" : "interval").field("mode", mode);
    j.key("ports").begin_array();
    for (const auto& r : rates) {
      j.begin_object().field("port", unsigned{r.port_id}).field("seconds", r.seconds);
      j.field("rx_packets", r.rx_packets).field("tx_packets", r.tx_packets);
      j.field("rx_bytes", r.rx_bytes).field("tx_bytes", r.tx_bytes).field("dropped", r.dropped);
      j.field("tx_full", r.tx_full).field("redirect_drops", r.redirect_drops).field("rx_missed", r.rx_missed);
      j.field("rx_nombuf", r.rx_nombuf).field("rx_errors", r.rx_errors);
      j.field("rx_mpps", r.rx_mpps()).field("tx_mpps", r.tx_mpps());
      j.field("rx_gbps", r.rx_gbps()).field("tx_gbps", r.tx_gbps());
      j.key("workers").begin_array();
      for (const auto& w : r.workers)
        j.begin_object().field("worker", w.worker).field("rx_packets", w.rx_packets).field("tx_packets", w.tx_packets)
            .field("tx_full", w.tx_full).field("redirect_drops", w.redirect_drops)
            .field("redirected_out", w.redirected_out).field("redirected_in", w.redirected_in).end_object();
      j.end_array().end_object();
    }
    j.end_array().end_object();
    std::printf("%s\n", j.str().c_str());
  } else {
    for (const auto& r : rates) {
      if (final)
        std::printf("summary port %u: %.1fs  rx %lu pkts %.3f Mpps %.3f Gbit/s  tx %lu pkts %.3f Mpps %.3f Gbit/s  "
                    "dropped %lu\n",
                    r.port_id, r.seconds, ul(r.rx_packets), r.rx_mpps(), r.rx_gbps(), ul(r.tx_packets), r.tx_mpps(),
                    r.tx_gbps(), ul(r.dropped));
      else
        std::printf("port %u: rx %.3f Mpps %.3f Gbit/s  tx %.3f Mpps %.3f Gbit/s  dropped %lu\n", r.port_id,
                    r.rx_mpps(), r.rx_gbps(), r.tx_mpps(), r.tx_gbps(), ul(r.dropped));
      if (!final) continue;
      std::printf("  drops: redirect ring full %lu  rx missed %lu  rx nombuf %lu  rx errors %lu  tx queue full %lu%s\n",
                  ul(r.redirect_drops), ul(r.rx_missed), ul(r.rx_nombuf), ul(r.rx_errors), ul(r.tx_full),
                  std::string(mode) == "io" || std::string(mode) == "mac" ? "" : " (unsent, not lost)");
      for (const auto& w : r.workers)
        std::printf("  worker %u: rx %lu tx %lu tx queue full %lu redirect drops %lu redirected out %lu in %lu\n",
                    w.worker, ul(w.rx_packets), ul(w.tx_packets), ul(w.tx_full), ul(w.redirect_drops),
                    ul(w.redirected_out), ul(w.redirected_in));
    }
  }
  std::fflush(stdout);
}

void stats_json(Json& j, const pmd::Port& port, const pmd::PortStats& s) {
  j.begin_object().field("port", unsigned{port.id()}).field("name", port.info().name);
  j.field("rx_packets", s.rx_packets).field("tx_packets", s.tx_packets);
  j.field("rx_bytes", s.rx_bytes).field("tx_bytes", s.tx_bytes);
  j.field("rx_missed", s.rx_missed).field("rx_errors", s.rx_errors).field("tx_errors", s.tx_errors);
  j.field("rx_nombuf", s.rx_nombuf);
  auto queues = [&](const char* key, const std::vector<pmd::QueueStats>& qs) {
    j.key(key).begin_array();
    for (const auto& q : qs)
      j.begin_object().field("packets", q.packets).field("bytes", q.bytes).field("errors", q.errors).end_object();
    j.end_array();
  };
  queues("rx_queues", s.rx_queues);
  queues("tx_queues", s.tx_queues);
  j.key("workers").begin_array();
  for (const auto& w : s.workers)
    j.begin_object().field("rx_packets", w.rx_packets).field("tx_packets", w.tx_packets)
        .field("redirected_out", w.redirected_out).field("redirected_in", w.redirected_in)
        .field("redirect_drops", w.redirect_drops).field("tx_full", w.tx_full).end_object();
  j.end_array();
  auto faults = [&](const char* key, const pmd::FaultCounters& f) {
    j.key(key).begin_object().field("seen", f.seen).field("dropped", f.dropped).field("duplicated", f.duplicated)
        .field("reordered", f.reordered).field("delayed", f.delayed).field("corrupted", f.corrupted).end_object();
  };
  faults("rx_faults", s.rx_faults);
  faults("tx_faults", s.tx_faults);
  j.end_object();
}

void stats_text(const pmd::Port& port, const pmd::PortStats& s, const pmd::PortStats* before, double seconds) {
  std::printf("######## port %u (%s) ########\n", port.id(), port.info().name.c_str());
  std::printf("  RX-packets: %-12lu RX-missed: %-10lu RX-errors: %-10lu RX-nombuf: %lu\n",
              static_cast<unsigned long>(s.rx_packets), static_cast<unsigned long>(s.rx_missed),
              static_cast<unsigned long>(s.rx_errors), static_cast<unsigned long>(s.rx_nombuf));
  std::printf("  RX-bytes:   %lu\n", static_cast<unsigned long>(s.rx_bytes));
  std::printf("  TX-packets: %-12lu TX-errors: %-10lu TX-bytes: %lu\n", static_cast<unsigned long>(s.tx_packets),
              static_cast<unsigned long>(s.tx_errors), static_cast<unsigned long>(s.tx_bytes));
  if (before && seconds > 0)
    std::printf("  Rate: rx %.3f Mpps %.3f Gbit/s  tx %.3f Mpps %.3f Gbit/s\n",
                (s.rx_packets - before->rx_packets) / seconds / 1e6, (s.rx_bytes - before->rx_bytes) * 8 / seconds / 1e9,
                (s.tx_packets - before->tx_packets) / seconds / 1e6, (s.tx_bytes - before->tx_bytes) * 8 / seconds / 1e9);
  for (size_t q = 0; q < s.rx_queues.size(); ++q)
    std::printf("  rxq %zu: %lu packets %lu bytes\n", q, static_cast<unsigned long>(s.rx_queues[q].packets),
                static_cast<unsigned long>(s.rx_queues[q].bytes));
  for (size_t q = 0; q < s.tx_queues.size(); ++q)
    std::printf("  txq %zu: %lu packets %lu bytes\n", q, static_cast<unsigned long>(s.tx_queues[q].packets),
                static_cast<unsigned long>(s.tx_queues[q].bytes));
  uint64_t redirect_drops = 0, tx_full = 0;
  for (size_t w = 0; w < s.workers.size(); ++w) {
    const auto& c = s.workers[w];
    redirect_drops += c.redirect_drops;
    tx_full += c.tx_full;
    std::printf("  worker %zu: rx %lu tx %lu redirected out %lu in %lu redirect drops %lu tx queue full %lu\n", w,
                static_cast<unsigned long>(c.rx_packets), static_cast<unsigned long>(c.tx_packets),
                static_cast<unsigned long>(c.redirected_out), static_cast<unsigned long>(c.redirected_in),
                static_cast<unsigned long>(c.redirect_drops), static_cast<unsigned long>(c.tx_full));
  }
  std::printf("  drops: redirect ring full %lu  rx missed %lu  rx nombuf %lu  rx errors %lu  tx errors %lu  "
              "tx queue full %lu\n",
              static_cast<unsigned long>(redirect_drops), static_cast<unsigned long>(s.rx_missed),
              static_cast<unsigned long>(s.rx_nombuf), static_cast<unsigned long>(s.rx_errors),
              static_cast<unsigned long>(s.tx_errors), static_cast<unsigned long>(tx_full));
  for (const auto& [dir, f] : {std::pair{"rx", &s.rx_faults}, std::pair{"tx", &s.tx_faults}})
    if (f->seen)
      std::printf("  %s faults: seen %lu dropped %lu duplicated %lu reordered %lu delayed %lu corrupted %lu\n", dir,
                  static_cast<unsigned long>(f->seen), static_cast<unsigned long>(f->dropped),
                  static_cast<unsigned long>(f->duplicated), static_cast<unsigned long>(f->reordered),
                  static_cast<unsigned long>(f->delayed), static_cast<unsigned long>(f->corrupted));
}

}  // namespace

std::chrono::nanoseconds duration_arg(const std::string& flag, const std::string& text) {
  try {
    return config::parse_duration(text);
  } catch (const std::exception& e) {
    throw UsageError(flag + ": " + e.what());
  }
}

uint64_t number_arg(const std::string& flag, const std::string& text, uint64_t min, uint64_t max,
                    const std::string& hint) {
  uint64_t v = 0;
  size_t used = 0;
  // stoull would accept "-1" (wrapping) and leading blanks: only plain digits are a number here.
  const bool digits =
      !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (digits) {
    try {
      v = std::stoull(text, &used);
    } catch (const std::exception&) {
      used = 0;  // out of range for 64 bits: reported like any other bad value below
    }
  }
  if (!digits || used != text.size() || v < min || v > max)
    throw UsageError(flag + ": '" + text + "' must be a whole number in " + std::to_string(min) + ".." +
                     std::to_string(max) + hint);
  return v;
}

std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  std::string w;
  while (in >> w) words.push_back(w);
  return words;
}

const std::vector<std::string>& Commands::names() {
  static const std::vector<std::string> n = {"ports", "stats", "xstats", "reset-stats", "fwd", "mempool",
                                             "flow", "stack", "doctor", "help", "quit"};
  return n;
}

std::string Commands::help() {
  return "commands (each takes --json):\n"
         "  ports                                 driver, MAC, link, MTU, queues, offloads (capable vs enabled)\n"
         "  stats [--watch 1s] [--duration D]     port, queue, worker and fault counters\n"
         "  xstats [--filter REGEX]               driver extended statistics\n"
         "  reset-stats                           zero basic and extended statistics\n"
         "  fwd io|mac|rxonly|txonly|flowgen [--size N] [--burst N] [--flows N] [--duration D] [--linger D]\n"
         "                                        forward or generate; Mpps and Gbit/s per port each second\n"
         "  mempool                               mbuf pool usage\n"
         "  doctor [--root DIR]                   check the host against the configuration (hugepages per NUMA\n"
         "                                        node, IOMMU/vfio, NIC drivers, cores, RDMA memlock and GID);\n"
         "                                        exit 0 when it can run, 1 when not; starts no EAL\n" +
         flow_help() + "  help, quit\n" + stack_help();
}

ParsedCommand Commands::parse(const std::vector<std::string>& words_in, const config::Config& config) {
  ParsedCommand command;
  std::vector<std::string> words;
  for (const auto& w : words_in) {
    if (w == "--json")
      command.json = true;
    else
      words.push_back(w);
  }
  if (words.empty()) throw UsageError("no command given (expected " + join(runnable(), ", ") + ")");
  command.name = words[0];
  const std::vector<std::string> args(words.begin() + 1, words.end());
  FlagParser parser{args, 0, command.name};
  std::string flag, value;
  std::vector<std::string> positional;
  auto no_positional = [&] {
    if (!positional.empty()) throw UsageError(command.name + ": unexpected argument '" + positional[0] + "'");
  };
  if (command.name == "ports" || command.name == "reset-stats" || command.name == "mempool" ||
      command.name == "help") {
    while (parser.next(flag, value, {}, positional)) {
    }
    no_positional();
  } else if (command.name == "stats") {
    while (parser.next(flag, value, {"--watch", "--duration"}, positional)) {
      if (flag == "--watch") command.watch = duration_arg("stats --watch", value);
      if (flag == "--duration") command.duration = duration_arg("stats --duration", value);
    }
    no_positional();
    if (command.watch.count() > 0 && command.watch < std::chrono::milliseconds(10))
      throw UsageError("stats --watch: '" + config::format_duration(command.watch) +
                       "' is too short; use 10ms or more (or 0 to print once)");
  } else if (command.name == "xstats") {
    while (parser.next(flag, value, {"--filter"}, positional)) command.filter = value;
    no_positional();
    const Regex check(command.filter);  // throws UsageError for a bad pattern
  } else if (command.name == "fwd") {
    // A generated frame must fit in one mbuf after its headroom (txonly/flowgen build single-segment frames).
    const uint64_t data_room = config.get_size("dpdk.mbuf_size");
    const uint64_t max_frame =
        std::min<uint64_t>(9000, data_room > RTE_PKTMBUF_HEADROOM ? data_room - RTE_PKTMBUF_HEADROOM : 0);
    FwdOptions& options = command.fwd;
    while (parser.next(flag, value, {"--size", "--burst", "--flows", "--duration", "--linger"}, positional)) {
      if (flag == "--size")
        options.packet_size = static_cast<uint16_t>(number_arg(
            "fwd --size", value, kMinFrameBytes, std::max<uint64_t>(kMinFrameBytes, max_frame),
            " (frame bytes without CRC; Ethernet+IPv4+UDP headers need " + std::to_string(kMinFrameBytes) +
                "; raise dpdk.mbuf_size for larger frames)"));
      if (flag == "--burst") options.burst = static_cast<uint16_t>(number_arg("fwd --burst", value, 1, kMaxFwdBurst));
      if (flag == "--flows")
        options.flows = static_cast<uint32_t>(number_arg("fwd --flows", value, 1, 65535 - 1024,
                                                         " (UDP source ports 1024 and up)"));
      if (flag == "--duration") options.duration = duration_arg("fwd --duration", value);
      if (flag == "--linger") options.linger = duration_arg("fwd --linger", value);
    }
    if (positional.empty()) throw UsageError("fwd: needs a mode: io, mac, rxonly, txonly or flowgen");
    if (positional.size() > 1) throw UsageError("fwd: unexpected argument '" + positional[1] + "' after the mode");
    try {
      options.mode = parse_fwd_mode(positional[0]);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  } else if (command.name == "flow") {
    command.flow = parse_flow_command(args);
  } else if (command.name == "doctor") {
    while (parser.next(flag, value, {"--root"}, positional)) {
      if (value.empty()) throw UsageError("doctor --root: needs a directory (/ for this host)");
      command.doctor_root = value;
    }
    no_positional();
  } else if (command.name == "stack") {
    if (!args.empty() && (args[0] == "help" || args[0] == "--help" || args[0] == "-h")) command.name = "help";
    else command.stack = parse_stack_command(args, command.json);
  } else if (command.name == "quit" || command.name == "exit") {
    throw UsageError(command.name + ": only inside the interactive shell (-i)");
  } else {
    throw UsageError("unknown command '" + command.name + "' (expected " + join(runnable(), ", ") + ")");
  }
  return command;
}

int Commands::run(const ParsedCommand& command) {
  const std::string& name = command.name;
  if (name == "ports") return ports(command.json);
  if (name == "stats") return stats(command);
  if (name == "xstats") return xstats(command);
  if (name == "reset-stats") return reset_stats(command.json);
  if (name == "fwd") return fwd(command);
  if (name == "mempool") return mempool(command.json);
  if (name == "flow") return run_flow_command(ports_, command.flow, command.json);
  if (name == "doctor") return doctor::run_command(config_, command.doctor_root, command.json);
  if (name == "help") {
    std::printf("%s", help().c_str());
    return 0;
  }
  if (name == "stack")
    throw UsageError("stack commands run on their own (bypass-pmd [options] stack ...), not inside -i: the stack "
                     "needs the port the shell holds");
  throw UsageError("unknown command '" + name + "' (expected " + join(runnable(), ", ") + ")");
}

int Commands::ports(bool json) {
  Json j;
  j.begin_object().key("ports").begin_array();
  for (auto& port_ptr : ports_.ports()) {
    const pmd::Port& port = *port_ptr;
    const pmd::PortInfo& info = port.info();
    const pmd::LinkState link = port.link();
    if (json) {
      j.begin_object().field("port", unsigned{info.port_id}).field("name", info.name).field("driver", info.driver);
      j.field("mac", info.mac_text()).field("numa_socket", info.numa_socket);
      j.key("link").begin_object().field("up", link.up).field("speed_mbps", link.speed_mbps)
          .field("duplex", link.full_duplex ? "full" : "half").field("autoneg", link.autoneg).end_object();
      j.field("mtu", unsigned{info.mtu}).field("rx_queues", unsigned{info.rx_queues})
          .field("tx_queues", unsigned{info.tx_queues}).field("max_rx_queues", unsigned{info.max_rx_queues})
          .field("max_tx_queues", unsigned{info.max_tx_queues}).field("workers", port.workers());
      j.key("capabilities").strings(info.offloads.supported.names());
      j.key("enabled").strings(info.offloads.enabled.names());
      j.key("fallbacks").strings(info.offloads.fallbacks);
      j.field("software_redirect", info.software_redirect);
      j.field("rss_reta_size", unsigned{info.capabilities.reta_size})
          .field("rss_key_size", unsigned{info.capabilities.hash_key_size});
      j.end_object();
    } else {
      std::printf("port %u: %s (driver %s) mac %s socket %d\n", info.port_id, info.name.c_str(), info.driver.c_str(),
                  info.mac_text().c_str(), info.numa_socket);
      std::printf("  link %s, %u Mbit/s, %s duplex%s\n", link.up ? "up" : "down", link.speed_mbps,
                  link.full_duplex ? "full" : "half", link.autoneg ? ", autoneg" : "");
      std::printf("  mtu %u, queues rx %u/%u tx %u/%u for %u workers%s\n", info.mtu, info.rx_queues,
                  info.max_rx_queues, info.tx_queues, info.max_tx_queues, port.workers(),
                  info.software_redirect ? ", software redirect" : "");
      std::printf("  capable: %s\n", join(info.offloads.supported.names()).c_str());
      std::printf("  enabled: %s\n", join(info.offloads.enabled.names()).c_str());
      for (const auto& f : info.offloads.fallbacks) std::printf("  fallback: %s\n", f.c_str());
    }
  }
  j.end_array().end_object();
  if (json) std::printf("%s\n", j.str().c_str());
  std::fflush(stdout);
  return 0;
}

int Commands::stats(const ParsedCommand& command) {
  const bool json = command.json;
  const std::chrono::nanoseconds watch = command.watch, duration = command.duration;
  const auto start = std::chrono::steady_clock::now();
  std::vector<pmd::PortStats> before;
  auto last = start;
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - last).count();
    std::vector<pmd::PortStats> current;
    for (auto& port : ports_.ports()) current.push_back(port->stats());
    if (json) {
      Json j;
      j.begin_object().key("ports").begin_array();
      for (size_t i = 0; i < current.size(); ++i) stats_json(j, *ports_.ports()[i], current[i]);
      j.end_array().end_object();
      std::printf("%s\n", j.str().c_str());
    } else {
      for (size_t i = 0; i < current.size(); ++i)
        stats_text(*ports_.ports()[i], current[i], before.empty() ? nullptr : &before[i], seconds);
    }
    std::fflush(stdout);
    if (watch.count() == 0) return 0;
    before = std::move(current);
    last = now;
    const auto next = now + watch;
    while (std::chrono::steady_clock::now() < next) {
      if (stop_.load()) return 0;
      if (duration.count() > 0 && std::chrono::steady_clock::now() - start >= duration) return 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

int Commands::xstats(const ParsedCommand& command) {
  const bool json = command.json;
  const Regex pattern(command.filter);
  Json j;
  j.begin_object().key("ports").begin_array();
  for (auto& port : ports_.ports()) {
    if (json) j.begin_object().field("port", unsigned{port->id()}).key("xstats").begin_object();
    else std::printf("######## port %u (%s) xstats ########\n", port->id(), port->info().name.c_str());
    for (const auto& x : port->xstats()) {
      if (!pattern.matches(x.name)) continue;
      if (json) j.field(x.name, x.value);
      else std::printf("  %-40s %lu\n", x.name.c_str(), static_cast<unsigned long>(x.value));
    }
    if (json) j.end_object().end_object();
  }
  j.end_array().end_object();
  if (json) std::printf("%s\n", j.str().c_str());
  std::fflush(stdout);
  return 0;
}

int Commands::reset_stats(bool json) {
  for (auto& port : ports_.ports()) port->reset_stats();
  if (json) std::printf("{\"reset\":%zu}\n", ports_.ports().size());
  else std::printf("statistics of %zu ports reset\n", ports_.ports().size());
  std::fflush(stdout);
  return 0;
}

int Commands::fwd(const ParsedCommand& command) {
  const bool json = command.json;
  const FwdOptions& options = command.fwd;
  ports_.wait_links(config_.get_duration("dpdk.link_wait"));
  const char* mode = fwd_mode_name(options.mode);
  if (!json)
    std::printf("fwd %s: %zu ports, %u lcores, size %u, burst %u%s\n", mode, ports_.ports().size(),
                rte_lcore_count(), options.packet_size, options.burst,
                options.duration.count() ? (", " + config::format_duration(options.duration)).c_str() : "");
  try {
    run_forwarding(ports_, options,
                   [&](const std::vector<PortRates>& rates, bool final) { print_rates(rates, final, json, mode); },
                   stop_);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  stop_.store(false);
  linger(options);
  if (!json) {
    for (auto& port : ports_.ports()) {
      const pmd::PortStats s = port->stats();
      std::printf("port %u device counters: rx %lu tx %lu missed %lu nombuf %lu\n", port->id(),
                  static_cast<unsigned long>(s.rx_packets), static_cast<unsigned long>(s.tx_packets),
                  static_cast<unsigned long>(s.rx_missed), static_cast<unsigned long>(s.rx_nombuf));
    }
  }
  std::fflush(stdout);
  return 0;
}

void Commands::linger(const FwdOptions& options) {
  using namespace std::chrono;
  const nanoseconds limit =
      options.linger.value_or(options.mode == FwdMode::RxOnly ? nanoseconds{0} : nanoseconds{milliseconds(500)});
  const auto until = steady_clock::now() + limit;
  auto all_links_down = [&] {
    for (auto& port : ports_.ports())
      if (port->link().up) return false;
    return true;
  };
  while (steady_clock::now() < until && !stop_.load() && !all_links_down())
    std::this_thread::sleep_for(milliseconds(10));
  stop_.store(false);
}

int Commands::mempool(bool json) {
  Json j;
  j.begin_object().key("mempools").begin_array();
  for (const auto& u : ports_.pools().usage()) {
    if (json)
      j.begin_object().field("name", u.name).field("socket", u.socket).field("size", u.size)
          .field("available", u.available).field("in_use", u.in_use).field("cache_size", u.cache_size)
          .field("data_room", u.data_room).end_object();
    else
      std::printf("mempool %s (socket %d): %u mbufs of %u bytes, %u in use, %u available, cache %u\n",
                  u.name.c_str(), u.socket, u.size, u.data_room, u.in_use, u.available, u.cache_size);
  }
  j.end_array().end_object();
  if (json) std::printf("%s\n", j.str().c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace bypass::tools
