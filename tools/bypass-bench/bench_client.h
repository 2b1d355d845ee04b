// `bypass-bench client`: the measuring side of a messenger benchmark. Connects to
// bench.server_address, runs every case of its transport (message sizes x queue depths: warm-up,
// then a measured duration or count with progress each second), collects its own and the
// server's CPU time and counters per case, prints the table and writes the JSON result.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "config/config.h"

namespace bypass::bench {

struct ClientFlags {
  // --result-file: the result file again, for `run`; written whole (a rename) before the client
  // waits for its release, so its appearance says the client is done.
  std::string result_file;
  // --server-address-from stdin: the server's IP:PORT arrives as one line on stdin once this
  // client's stack is up (`run` starts both sides at once; a memif link needs both processes).
  bool address_from_stdin = false;
};

// Returns the process exit code (1 when a case had errors). Throws config::ConfigError on a bad
// job before connecting, std::runtime_error when the benchmark cannot run (no server, stall).
int run_bench_client(const config::Config& conf, const std::string& job_name, const ClientFlags& flags,
                     std::ostream& out);

ClientFlags parse_client_flags(const std::vector<std::string>& args);

const char* bench_client_usage();

}  // namespace bypass::bench
