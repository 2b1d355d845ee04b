// The "bypass-bench/1" result file: what `run`, `client` and `ceph-mon-version --output` write and
// `compare` reads. One file holds one or more cases (a transport x message size x depth sweep
// point); the loader checks every field compare and --plot use and names the first bad one.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace bypass::bench {

inline constexpr const char* kResultSchema = "bypass-bench/1";

// One second of a run, as the progress line printed it.
struct ResultSample {
  double t = 0;  // seconds since the measurement started
  double messages_per_second = 0;
  double megabytes_per_second = 0;
  double p50_us = 0;
  double p99_us = 0;
};

struct ResultLatency {
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0, mean = 0;  // microseconds
  std::vector<std::pair<double, double>> cdf;                     // (microseconds, cumulative fraction)
};

struct ResultCase {
  std::string name;
  std::string transport;  // posix, dpdk, rdma
  std::string mode;       // reqrep, stream
  uint64_t message_size = 0;
  uint64_t connections = 0;
  uint64_t iodepth = 0;
  std::string messengers;  // shared, per-thread
  // The link between the two processes (dpdk_link.h): "vhost-user", "memif", "kernel" (posix), or a
  // job's own device ("net_tap"); empty in files written before links were named.
  std::string link;
  std::optional<uint64_t> link_copies_per_round_trip;  // payload copies the link makes; absent: not known
  // "vhost-user, 2 copies", "net_tap" (copies not known), or "-" (no link named).
  std::string link_text() const;
  double warmup_seconds = 0;
  double seconds = 0;
  uint64_t messages = 0;
  uint64_t bytes = 0;
  double messages_per_second = 0;
  double megabytes_per_second = 0;
  uint64_t errors = 0;
  ResultLatency latency_us;
  std::vector<ResultSample> samples;
  double client_cpu_seconds = 0;
  std::vector<double> client_worker_cpu_seconds;
  // Absent when the server is not ours to measure (a Ceph monitor).
  std::optional<double> server_cpu_seconds;
  std::vector<double> server_worker_cpu_seconds;
  // The "counters" object as written (not interpreted by compare); empty for none.
  std::string counters_json;
};

struct ResultFile {
  std::string path;  // where it was read from (empty for one built in memory)
  std::string job;
  std::string started;
  std::string hostname;
  uint64_t cpus = 0;
  std::string kernel;
  std::vector<std::pair<std::string, std::string>> config;  // option key -> effective value
  std::vector<ResultCase> cases;
};

// A result file that cannot be used; what() is one line "FILE: FIELD: problem".
class ResultFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads and checks `path`. Throws ResultFileError for a missing or unreadable file, malformed
// JSON, another schema, or a missing or mistyped field.
ResultFile load_result_file(const std::string& path);
// The same for text already in memory; `path` only names it in errors.
ResultFile parse_result_file(const std::string& text, const std::string& path);

// The file as JSON in the schema above (what load_result_file reads back).
std::string result_file_json(const ResultFile& file);

// The current time as ISO-8601 UTC ("2026-11-23T22:07:47Z") and this host's name, CPU count and
// kernel release, for the header fields.
std::string iso8601_utc_now();
void fill_host_fields(ResultFile& file);

}  // namespace bypass::bench
