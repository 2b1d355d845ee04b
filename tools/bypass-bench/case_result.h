// The result of one benchmark case and the result document (schema "bypass-bench/1", read by
// `bypass-bench compare` and `--plot`), plus the one-line summary a client process hands to
// `run` so that `run` can print tables across transports without reading JSON back.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "config/config.h"
#include "tools/bypass-bench/bench_job.h"
#include "tools/bypass-bench/latency_histogram.h"
#include "tools/bypass-bench/process_snapshot.h"

namespace bypass::bench {

struct Sample {
  double t = 0;  // seconds since the measurement began, at the end of this sample
  double messages_per_second = 0;
  double megabytes_per_second = 0;
  double p50_us = 0;
  double p99_us = 0;
};

struct CaseResult {
  BenchCase bench_case;
  BenchMode mode = BenchMode::RequestReply;
  int connections = 1;
  bool messenger_per_thread = false;
  double warmup_seconds = 0;
  double seconds = 0;  // measured
  uint64_t messages = 0;
  uint64_t bytes = 0;  // payload, one way
  uint64_t errors = 0;
  LatencyHistogram latency_ns;
  std::vector<Sample> samples;
  ProcessSnapshot client;  // over the measured interval
  ProcessSnapshot server;

  double messages_per_second() const { return seconds > 0 ? static_cast<double>(messages) / seconds : 0; }
  double megabytes_per_second() const { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e6 : 0; }
  std::string to_json() const;  // one element of "cases"
};

// What the tables show of one case.
struct CaseSummary {
  std::string name, transport;
  uint64_t message_size = 0;
  int iodepth = 0;
  double messages_per_second = 0, megabytes_per_second = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
  double client_cpu_seconds = 0, server_cpu_seconds = 0;
  uint64_t errors = 0;

  static CaseSummary of(const CaseResult& result);
  std::string line() const;  // tab-separated, no newline
  // Throws std::runtime_error naming the line when it is not a line() of this version.
  static CaseSummary parse(const std::string& line);
};

// The whole document; `cases_json` are CaseResult::to_json() texts.
std::string result_document(const std::string& job, const config::Config& conf,
                            const std::string& started, const std::vector<std::string>& cases_json);
// "2026-11-23T22:15:03Z".
std::string utc_now_iso8601();

// Final table: one row per case.
void print_case_table(const std::vector<CaseSummary>& cases, std::ostream& out);
// Transports side by side for each (message size, queue depth), with ratios against posix (or
// the first transport when posix was not run). Prints nothing for a single transport.
void print_transport_comparison(const std::vector<CaseSummary>& cases, std::ostream& out);

}  // namespace bypass::bench
