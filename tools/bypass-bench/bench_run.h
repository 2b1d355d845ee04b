// `bypass-bench run`: the whole job on this machine. For each transport it starts
// `bypass-bench server` and then `bypass-bench client` as two processes of this binary (a DPDK
// process owns one port and one EAL, so a dpdk run always needs two), each on its own CPUs
// (bench.server.cpus, bench.client.cpus), hands the server's address to the client, and merges
// the clients' cases into one table, a transport comparison and one JSON result.
#pragma once

#include <ostream>
#include <string>

#include "config/cli.h"
#include "config/config.h"

namespace bypass::bench {

// `common` are this process's -c/--set arguments, passed on to both children. Returns the exit
// code: 0 when every case ran without errors.
int run_bench_job(const config::CommonArgs& common, const config::Config& conf, std::ostream& out,
                  std::ostream& err);

const char* bench_run_usage();

}  // namespace bypass::bench
