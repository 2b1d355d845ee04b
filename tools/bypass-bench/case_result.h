// The result of one benchmark case as the client measures it, turned into the result file's form
// (schema "bypass-bench/1", bench_result_file.h), and the tables `client` and `run` print.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "config/config.h"
#include "tools/bypass-bench/bench_job.h"
#include "tools/bypass-bench/bench_result_file.h"
#include "tools/bypass-bench/latency_histogram.h"
#include "tools/bypass-bench/process_snapshot.h"

namespace bypass::bench {

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
  std::vector<ResultSample> samples;
  ProcessSnapshot client;  // over the measured interval
  ProcessSnapshot server;

  double messages_per_second() const { return seconds > 0 ? static_cast<double>(messages) / seconds : 0; }
  double megabytes_per_second() const { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e6 : 0; }
  // The case as the result file holds it (bench_result_file.h writes and reads it).
  ResultCase to_result_case() const;
};

// A result file of `cases` with the header fields: `job`, start time, this host, every option.
ResultFile make_result_file(const std::string& job, const std::string& started, const config::Config& conf,
                            std::vector<ResultCase> cases);

// Final table: one row per case.
void print_case_table(const std::vector<ResultCase>& cases, std::ostream& out);
// Transports side by side for each (message size, queue depth), with ratios against posix (or
// the first transport when posix was not run). Prints nothing for a single transport.
void print_transport_comparison(const std::vector<ResultCase>& cases, std::ostream& out);

}  // namespace bypass::bench
