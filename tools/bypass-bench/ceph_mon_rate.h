// `bypass-bench ceph-mon-version --duration D | --count N`: the request/reply rate of a Ceph
// monitor. One session keeps `depth` MMonGetVersion("osdmap") requests in flight, timing each
// from send_message() to the reply's dispatch, and reports requests/s and latency percentiles
// per second and in total, as a result case compare can read.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

#include "config/config.h"
#include "msgr/entity.h"
#include "tools/bypass-bench/bench_result_file.h"

namespace bypass::bench {

struct MonRateOptions {
  std::chrono::nanoseconds duration{0};  // measure this long, or
  uint64_t count = 0;                    // this many replies (exactly one of the two is set)
  uint32_t depth = 1;                    // requests in flight
  std::chrono::nanoseconds warmup{0};    // unmeasured time once the session is up
};

struct MonRateRun {
  bool ok = false;
  std::string error;  // one line, when !ok
  ResultCase result;  // valid when ok
};

// Runs the benchmark against the monitor at `mon` over the transport `conf` names, printing a
// progress line per second to `progress`. Fails (never throws) when the messenger cannot start,
// the session drops or no reply arrives for `timeout`.
MonRateRun run_mon_rate(const config::Config& conf, const msgr::EntityAddr& mon, const MonRateOptions& options,
                        std::chrono::milliseconds timeout, std::ostream& progress);

// The summary table of one run (requests, requests/s, latency percentiles, errors).
void print_mon_rate(const ResultCase& result, std::ostream& out);

}  // namespace bypass::bench
