#include "tools/bypass-bench/ceph_mon_version.h"

#include <cstdlib>
#include <ostream>

#include "config/log.h"
#include "msgr/mon_get_version.h"
#include "tools/bypass-bench/subcommand_flags.h"

namespace bypass::bench {

CephMonVersionOptions parse_ceph_mon_version_flags(const std::vector<std::string>& args) {
  CephMonVersionOptions options;
  std::string mon_text;
  const auto known = [](const std::string& flag) { return flag == "--mon" || flag == "--timeout"; };
  for (const auto& [flag, value] :
       split_valued_flags(args, "ceph-mon-version", known, "bypass-bench ceph-mon-version --help")) {
    if (flag == "--mon") {
      mon_text = value;
    } else {
      std::chrono::nanoseconds timeout{};
      try {
        timeout = config::parse_duration(value);
      } catch (const config::ConfigError& e) {
        throw config::ConfigError(std::string("ceph-mon-version: --timeout: ") + e.what());
      }
      if (timeout <= std::chrono::nanoseconds::zero()) {
        throw config::ConfigError("ceph-mon-version: --timeout: '" + value + "' must be positive");
      }
      options.timeout = std::chrono::ceil<std::chrono::milliseconds>(timeout);
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
  return options;
}

int run_ceph_mon_version(const config::Config& conf, const CephMonVersionOptions& options, std::ostream& out,
                         std::ostream& err) {
  // The result line already says why a probe failed; the messenger's own info lines about the same
  // fault would only bury it. BYPASS_LOG still chooses when set.
  if (std::getenv("BYPASS_LOG") == nullptr) log::set_threshold(log::Level::Warn);
  const msgr::MonVersionProbeResult result = msgr::probe_mon_versions(conf, options.mon, options.timeout);
  if (!result.ok) {
    err << "bypass-bench: ceph-mon-version: " << result.error << "\n";
    return 1;
  }
  out << "monmap " << result.versions.monmap << "\n"
      << "osdmap " << result.versions.osdmap << "\n";
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
         "The monitor must allow auth none. Fails with one error line and exit status 1 when no\n"
         "answer arrives within --timeout, and status 2 on a malformed argument.\n"
         "  --mon ADDR        the monitor's msgr2 address (v2:IP:PORT)\n"
         "  --timeout DUR     how long to wait for both answers (default 10s)\n";
}

}  // namespace bypass::bench
