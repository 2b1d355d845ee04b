// `bypass-bench ceph-mon-version`: asks a Ceph monitor for its monmap and osdmap versions over the
// configured transport (ms.type), the command-line twin of the ceph-interop test's probe.
#pragma once

#include <chrono>
#include <optional>
#include <iosfwd>
#include <string>
#include <vector>

#include "config/config.h"
#include "msgr/entity.h"
#include "tools/bypass-bench/ceph_mon_rate.h"

namespace bypass::bench {

struct CephMonVersionOptions {
  msgr::EntityAddr mon;
  std::optional<msgr::EntityAddr> osd;  // --osd: then open a session to this OSD too
  std::chrono::milliseconds timeout = std::chrono::seconds(10);
  // Rate mode (--duration or --count given): keep asking and report the request rate.
  bool rate_mode = false;
  MonRateOptions rate;
  std::string output_path;  // --output: the result file (rate mode only)
};

// Flags after `ceph-mon-version`: --mon ADDR (required), --timeout DURATION; for the rate mode
// --duration DURATION or --count N, and --depth N, --warmup DURATION, --output FILE. Throws
// config::ConfigError naming the flag on an unknown flag, a missing value, a malformed value or a
// combination that makes no sense.
CephMonVersionOptions parse_ceph_mon_version_flags(const std::vector<std::string>& args);

// Runs the probe; prints "monmap N" and "osdmap N" to `out` and returns 0, or prints one error
// line to `err` and returns 1. In rate mode prints per-second progress and the summary table,
// writes --output, and returns 1 also when a reply carried an unknown handle.
int run_ceph_mon_version(const config::Config& conf, const CephMonVersionOptions& options, std::ostream& out,
                         std::ostream& err);

const char* ceph_mon_version_usage();

}  // namespace bypass::bench
