// `bypass-bench server`: the answering side of a messenger benchmark. It listens on
// bench.server_address (or a free port), prints one ready line (bench_protocol.h) on stdout, then
// answers until SIGINT or SIGTERM (SIGUSR1 prints its mbuf pools' use): each reqrep request with a reply of the same size, stream
// messages by consuming them, and stats requests with this process's ProcessSnapshot.
#pragma once

#include <ostream>

#include "config/config.h"

namespace bypass::bench {

// Returns the process exit code. Throws config::ConfigError on a bad job before starting anything.
int run_bench_server(const config::Config& conf, std::ostream& out);

const char* bench_server_usage();

}  // namespace bypass::bench
