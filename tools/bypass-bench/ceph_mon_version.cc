#include "tools/bypass-bench/ceph_mon_version.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ostream>

#include "base/log.h"
#include "msgr/mon_get_version.h"
#include "tools/bypass-bench/subcommand_flags.h"

namespace bypass::bench {

namespace {

std::chrono::nanoseconds positive_duration(const std::string& flag, const std::string& value) {
  std::chrono::nanoseconds d{};
  try {
    d = config::parse_duration(value);
  } catch (const config::ConfigError& e) {
    throw config::ConfigError("ceph-mon-version: " + flag + ": " + e.what());
  }
  if (d <= std::chrono::nanoseconds::zero()) {
    throw config::ConfigError("ceph-mon-version: " + flag + ": '" + value + "' must be positive");
  }
  return d;
}

uint64_t count_in_range(const std::string& flag, const std::string& value, uint64_t max) {
  int64_t n = 0;
  try {
    n = config::parse_int(value);
  } catch (const config::ConfigError& e) {
    throw config::ConfigError("ceph-mon-version: " + flag + ": " + e.what());
  }
  if (n < 1 || static_cast<uint64_t>(n) > max) {
    throw config::ConfigError("ceph-mon-version: " + flag + ": '" + value + "' is not in 1.." + std::to_string(max));
  }
  return static_cast<uint64_t>(n);
}

// Deep enough to saturate a monitor; a deeper queue would only measure the monitor's backlog.
constexpr uint64_t kMaxDepth = 1024;

}  // namespace

CephMonVersionOptions parse_ceph_mon_version_flags(const std::vector<std::string>& args) {
  CephMonVersionOptions options;
  std::string mon_text;
  std::vector<std::string> rate_only;  // rate-mode flags given, to refuse them without a rate mode
  const auto known = [](const std::string& flag) {
    return flag == "--mon" || flag == "--osd" || flag == "--timeout" || flag == "--duration" || flag == "--count" ||
           flag == "--depth" || flag == "--warmup" || flag == "--output";
  };
  for (const auto& [flag, value] :
       split_valued_flags(args, "ceph-mon-version", known, "bypass-bench ceph-mon-version --help")) {
    if (flag == "--mon") {
      mon_text = value;
    } else if (flag == "--osd") {
      msgr::EntityAddr osd;
      if (!msgr::EntityAddr::parse(value, &osd) || osd.type != msgr::EntityAddr::kMsgr2 || osd.is_blank_ip() ||
          osd.port() == 0)
        throw config::ConfigError("ceph-mon-version: --osd: '" + value +
                                  "' is not a msgr2 OSD address like v2:127.0.0.1:6800/1234");
      options.osd = osd;
    } else if (flag == "--timeout") {
      options.timeout = std::chrono::ceil<std::chrono::milliseconds>(positive_duration(flag, value));
    } else if (flag == "--duration") {
      options.rate.duration = positive_duration(flag, value);
      options.rate_mode = true;
    } else if (flag == "--count") {
      options.rate.count = count_in_range(flag, value, uint64_t{1} << 40);
      options.rate_mode = true;
    } else if (flag == "--depth") {
      options.rate.depth = static_cast<uint32_t>(count_in_range(flag, value, kMaxDepth));
      rate_only.push_back(flag);
    } else if (flag == "--warmup") {
      try {
        options.rate.warmup = config::parse_duration(value);
      } catch (const config::ConfigError& e) {
        throw config::ConfigError("ceph-mon-version: --warmup: " + std::string(e.what()));
      }
      rate_only.push_back(flag);
    } else {
      if (value.empty()) throw config::ConfigError("ceph-mon-version: --output needs a file name");
      options.output_path = value;
      rate_only.push_back(flag);
    }
  }
  if (mon_text.empty()) throw config::ConfigError("ceph-mon-version: --mon ADDR is required");
  // EntityAddr::parse accepts v1: and any: too, but only a msgr2 address can be probed, and a
  // monitor always listens on a real port.
  if (!msgr::EntityAddr::parse(mon_text, &options.mon) || options.mon.type != msgr::EntityAddr::kMsgr2 ||
      options.mon.is_blank_ip() || options.mon.port() == 0) {
    throw config::ConfigError("ceph-mon-version: --mon: '" + mon_text +
                              "' is not a msgr2 monitor address like v2:127.0.0.1:3300");
  }
  if (options.rate.duration.count() != 0 && options.rate.count != 0) {
    throw config::ConfigError("ceph-mon-version: --duration and --count exclude each other: give one");
  }
  if (options.rate_mode && options.osd)
    throw config::ConfigError("ceph-mon-version: --osd does not combine with --duration or --count");
  if (!options.rate_mode && !rate_only.empty()) {
    throw config::ConfigError("ceph-mon-version: " + rate_only.front() +
                              " applies to the rate mode only: add --duration or --count");
  }
  return options;
}

namespace {

int run_rate_mode(const config::Config& conf, const CephMonVersionOptions& options, std::ostream& out,
                  std::ostream& err) {
  std::ofstream file;
  if (!options.output_path.empty()) {
    // Opened before the run so a bad path fails at once, not after the whole measurement.
    file.open(options.output_path, std::ios::binary | std::ios::trunc);
    if (!file) {
      err << "bypass-bench: ceph-mon-version: --output: cannot write '" << options.output_path
          << "': " << std::strerror(errno) << "\n";
      return 1;
    }
  }
  ResultFile results;
  results.job = "ceph-mon-version --mon " + options.mon.to_string();
  results.started = iso8601_utc_now();
  fill_host_fields(results);
  for (const config::OptionSpec& spec : conf.registry().options())
    results.config.emplace_back(spec.name, conf.to_string(spec.name));
  const MonRateRun run = run_mon_rate(conf, options.mon, options.rate, options.timeout, out);
  if (!run.ok) {
    // No result: leave no empty file behind for compare to stumble over later.
    if (file.is_open()) {
      file.close();
      std::remove(options.output_path.c_str());
    }
    err << "bypass-bench: ceph-mon-version: " << run.error << "\n";
    return 1;
  }
  print_mon_rate(run.result, out);
  results.cases.push_back(run.result);
  if (file.is_open()) {
    file << result_file_json(results);
    file.close();
    if (!file) {
      err << "bypass-bench: ceph-mon-version: --output: writing '" << options.output_path << "' failed\n";
      return 1;
    }
    out << "results written to " << options.output_path << "\n";
  }
  if (run.result.errors != 0) {
    err << "bypass-bench: ceph-mon-version: " << run.result.errors << " replies carried a handle never sent\n";
    return 1;
  }
  return 0;
}

}  // namespace

int run_ceph_mon_version(const config::Config& conf, const CephMonVersionOptions& options, std::ostream& out,
                         std::ostream& err) {
  // The result line already says why a probe failed; the messenger's own info lines about the same
  // fault would only bury it. BYPASS_LOG still chooses when set.
  if (std::getenv("BYPASS_LOG") == nullptr) log::set_threshold(log::Level::Warn);
  if (options.rate_mode) return run_rate_mode(conf, options, out, err);
  const msgr::MonVersionProbeResult result =
      msgr::probe_mon_versions(conf, options.mon, options.timeout, options.osd ? &*options.osd : nullptr);
  if (!result.ok) {
    err << "bypass-bench: ceph-mon-version: " << result.error << "\n";
    return 1;
  }
  out << "monmap " << result.versions.monmap << "\n"
      << "osdmap " << result.versions.osdmap << "\n";
  if (result.osd_ticket_renewed) out << "osd ticket renewed (cephx GET_PRINCIPAL_SESSION_KEY)\n";
  if (options.osd) out << result.osd_name << " " << options.osd->to_string() << ": session established (SERVER_IDENT)\n";
  return 0;
}

const char* ceph_mon_version_usage() {
  return "usage: bypass-bench ceph-mon-version [-c FILE] [--set key=value]... --mon v2:IP:PORT\n"
         "                                     [--timeout 10s]\n"
         "\n"
         "Connects to a Ceph monitor as a client over the configured transport (ms.type; with\n"
         "ms.type=dpdk also the dpdk.* options), sends MMonGetVersion for \"monmap\" and \"osdmap\"\n"
         "and prints the two versions:\n"
         "  monmap N\n"
         "  osdmap N\n"
         "Auth is ms.auth: none, or cephx with --set ms.auth=cephx --set ms.keyring=PATH\n"
         "[--set ms.auth_name=client.admin] [--set ms.mode=secure]. Fails with one error line and\n"
         "exit status 1 when no answer arrives within --timeout or the monitor refuses us (the line\n"
         "says why: the method it requires, a rejected key), and status 2 on a malformed argument.\n"
         "  --mon ADDR        the monitor's msgr2 address (v2:IP:PORT)\n"
         "  --timeout DUR     how long to wait for both answers (default 10s)\n"
         "  --osd ADDR        then open a session to this OSD (v2:IP:PORT/NONCE) on the same\n"
         "                    messenger, with cephx through the ticket the monitor gave, and print\n"
         "                    \"osd.N ADDR: session established (SERVER_IDENT)\"\n"
         "\n"
         "Rate mode: with --duration or --count, keeps asking for the osdmap version on one session\n"
         "and prints requests/s and latency (send to reply) each second and in a summary table:\n"
         "  --duration DUR    measure for this long, or\n"
         "  --count N         until N replies were measured\n"
         "  --depth N         requests in flight (default 1, at most 1024)\n"
         "  --warmup DUR      run this long before measuring (default 0s); the session's\n"
         "                    handshake is never measured\n"
         "  --output FILE     also write the result as JSON (schema bypass-bench/1, one case,\n"
         "                    mode reqrep) for bypass-bench compare\n"
         "  --timeout DUR     then fails when no reply arrives for this long\n";
}

}  // namespace bypass::bench
