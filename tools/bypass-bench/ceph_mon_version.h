// `bypass-bench ceph-mon-version`: asks a Ceph monitor for its monmap and osdmap versions over the
// configured transport (ms.type), the command-line twin of the ceph-interop test's probe.
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

#include "config/config.h"
#include "msgr/entity.h"

namespace bypass::bench {

struct CephMonVersionOptions {
  msgr::EntityAddr mon;
  std::chrono::milliseconds timeout = std::chrono::seconds(10);
};

// Flags after `ceph-mon-version`: --mon ADDR (required), --timeout DURATION. Throws
// config::ConfigError naming the flag on an unknown flag, a missing value or a malformed value.
CephMonVersionOptions parse_ceph_mon_version_flags(const std::vector<std::string>& args);

// Runs the probe; prints "monmap N" and "osdmap N" to `out` and returns 0, or prints one error
// line to `err` and returns 1.
int run_ceph_mon_version(const config::Config& conf, const CephMonVersionOptions& options, std::ostream& out,
                         std::ostream& err);

const char* ceph_mon_version_usage();

}  // namespace bypass::bench
