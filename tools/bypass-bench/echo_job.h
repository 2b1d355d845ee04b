// The `echo` job: an echo server and a ping-pong client in one process, each on its own
// NetworkStack (so each has its own workers), measuring message rate, bandwidth, round-trip
// latency and CPU time.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "config/config.h"
#include "stack/network_stack.h"
#include "tools/bypass-bench/echo_connections.h"
#include "tools/bypass-bench/job_options.h"
#include "tools/bypass-bench/latency_histogram.h"

namespace bypass::bench {

struct EchoResults {
  EchoJobOptions options;
  std::string transport;
  unsigned workers_per_side = 0;
  std::string server_address;
  uint64_t messages = 0;  // round trips completed while measuring
  uint64_t errors = 0;    // client connections that failed while measuring
  double seconds = 0;
  LatencyHistogram latency;                 // nanoseconds
  double process_cpu_seconds = 0;           // user + system, whole process, while measuring
  std::vector<double> client_worker_cpu;    // per worker thread, while measuring
  std::vector<double> server_worker_cpu;

  double messages_per_second() const { return seconds > 0 ? messages / seconds : 0; }
  // Message bytes carried per second in one direction (the echo doubles the wire traffic).
  double megabytes_per_second() const {
    return messages_per_second() * static_cast<double>(options.message_size) / 1e6;
  }
};

class EchoJob {
 public:
  EchoJob(const config::Config& conf, EchoJobOptions options);
  ~EchoJob();
  EchoJob(const EchoJob&) = delete;
  EchoJob& operator=(const EchoJob&) = delete;

  // Runs the job, printing one progress line per second to `progress`. Throws std::runtime_error
  // when the transport cannot start or the client cannot connect.
  EchoResults run(std::ostream& progress);

 private:
  void start_server();
  void accept_ready(Worker& worker);
  void connect_clients();
  uint64_t messages_so_far() const;
  void teardown();

  config::Config conf_;
  EchoJobOptions options_;
  SocketOptions socket_options_;
  std::shared_ptr<NetworkStack> server_stack_;
  std::shared_ptr<NetworkStack> client_stack_;
  std::unique_ptr<ConnectionSet> server_connections_;
  std::unique_ptr<ConnectionSet> client_connections_;
  std::vector<ServerSocket> listeners_;                       // by server worker id
  std::vector<std::vector<PingPongConnection*>> clients_;     // by client worker id
  PingPongShared shared_;
  SocketAddress server_address_;
  bool running_ = false;  // both stacks started
};

void print_echo_results(const EchoResults& results, std::ostream& out);
std::string echo_results_json(const EchoResults& results, const config::Config& conf);

}  // namespace bypass::bench
