#include "tools/bypass-bench/bench_run.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tools/bypass-bench/bench_job.h"
#include "tools/bypass-bench/bench_protocol.h"
#include "tools/bypass-bench/case_result.h"
#include "tools/bypass-bench/child_process.h"
#include "tools/bypass-bench/dpdk_link.h"

namespace bypass::bench {

namespace {

// The origin of settings `run` makes itself.
constexpr const char* kRunOrigin = "bypass-bench run";
// DPDK start-up (EAL, memory, memif connect) takes a few seconds; a server not ready in this
// long has failed (its own messages are on stderr).
constexpr auto kServerReadyTimeout = std::chrono::seconds(60);
constexpr auto kServerStopGrace = std::chrono::seconds(15);
// Per case beyond warm-up and duration: connecting, stats exchanges, draining.
constexpr auto kCaseSlack = std::chrono::seconds(40);
// A count-limited case has no known length: bound it generously.
constexpr auto kCountCaseBound = std::chrono::minutes(10);

struct TransportOutcome {
  std::vector<ResultCase> cases;
  std::string failure;  // empty when the client finished
  int client_status = 0;
};

// The memif socket the server side listens on when its port is a net_memif role=server vdev:
// ("/run/x.sock", abstract?). A memif client started before that socket exists fails at once.
std::optional<std::pair<std::string, bool>> memif_server_socket(const config::Config& server_side) {
  if (server_side.get_string("ms.type") != "dpdk") return std::nullopt;
  for (const std::string& vdev : server_side.get_list("dpdk.vdev")) {
    if (vdev.rfind("net_memif", 0) != 0 || vdev.find("role=server") == std::string::npos) continue;
    std::string socket = "/run/memif.sock";  // the PMD's default
    bool abstract = true;
    std::istringstream args(vdev);
    for (std::string arg; std::getline(args, arg, ',');) {
      if (arg.rfind("socket=", 0) == 0) socket = arg.substr(7);
      if (arg == "socket-abstract=no") abstract = false;
    }
    return std::make_pair(socket, abstract);
  }
  return std::nullopt;
}

bool memif_socket_listening(const std::pair<std::string, bool>& socket) {
  if (!socket.second) return std::filesystem::exists(socket.first);
  std::ifstream unix_sockets("/proc/net/unix");
  const std::string wanted = "@" + socket.first;
  for (std::string line; std::getline(unix_sockets, line);)
    if (line.size() >= wanted.size() && line.compare(line.size() - wanted.size(), wanted.size(), wanted) == 0) return true;
  return false;
}

std::vector<std::string> child_argv(const std::string& self, const config::CommonArgs& common,
                                    const std::vector<std::string>& extra_sets, const std::string& command) {
  std::vector<std::string> argv = {self};
  for (const std::string& file : common.config_files) argv.insert(argv.end(), {"-c", file});
  for (const std::string& assignment : common.assignments) argv.insert(argv.end(), {"--set", assignment});
  for (const std::string& assignment : extra_sets) argv.insert(argv.end(), {"--set", assignment});
  argv.push_back(command);
  return argv;
}

std::chrono::milliseconds client_bound(const BenchJob& job, size_t cases) {
  const auto per_case = job.count > 0 ? std::chrono::duration_cast<std::chrono::nanoseconds>(kCountCaseBound)
                                      : job.warmup + job.duration + kCaseSlack;
  return std::chrono::duration_cast<std::chrono::milliseconds>(per_case * static_cast<int64_t>(cases) +
                                                               std::chrono::seconds(30));
}

// `sets` are settings `run` decided for both children (the dpdk link it chose).
TransportOutcome run_transport(const std::string& transport, const config::CommonArgs& common,
                               const config::Config& conf, const BenchJob& job, const std::vector<std::string>& sets,
                               const std::string& work_dir, std::ostream& out) {
  TransportOutcome outcome;
  const std::string self = self_executable();
  std::vector<std::string> common_sets = {"bench.transports=" + transport, "bench.output="};
  common_sets.insert(common_sets.end(), sets.begin(), sets.end());
  const std::string result_file = work_dir + "/" + transport + ".json";
  std::vector<std::string> client_args = child_argv(self, common, common_sets, "client");
  client_args.insert(client_args.end(), {"--server-address-from", "stdin", "--result-file", result_file});
  // Both start at once: a dpdk port (memif) comes up only when its peer process is there too, so
  // the client brings its stack up and then waits for the address the server prints.
  out << "== " << transport << ": starting server and client\n" << std::flush;
  ChildProcess server(child_argv(self, common, common_sets, "server"), conf.get_cpus("bench.server.cpus"),
                      ChildProcess::Pipe::Stdout);
  if (const auto memif = memif_server_socket(side_config(conf, Side::Server, transport))) {
    const auto deadline = std::chrono::steady_clock::now() + kServerReadyTimeout;
    while (!memif_socket_listening(*memif)) {
      const auto status = server.wait(std::chrono::milliseconds(20));
      if (status || std::chrono::steady_clock::now() > deadline) {
        outcome.failure = "the " + transport + " server " +
                          (status ? "exited with status " + std::to_string(*status) + " before it was ready"
                                  : "never listened on its memif socket " + memif->first) +
                          " (its messages are above)";
        server.terminate(kServerStopGrace);
        return outcome;
      }
    }
  }
  ChildProcess client(client_args, conf.get_cpus("bench.client.cpus"), ChildProcess::Pipe::Stdin);
  std::string address;
  const auto ready_deadline = std::chrono::steady_clock::now() + kServerReadyTimeout;
  while (address.empty()) {
    const auto line = server.read_line(std::chrono::milliseconds(500));
    if (line && line->rfind(kReadyPrefix, 0) == 0) {
      std::istringstream fields(line->substr(std::strlen(kReadyPrefix)));
      fields >> address;
      break;
    }
    if (line) {
      out << *line << "\n";  // anything else the server prints goes through
      continue;
    }
    std::string why;
    if (const auto status = server.wait(std::chrono::milliseconds(100)))
      why = "the " + transport + " server exited with status " + std::to_string(*status) + " before it was ready";
    else if (const auto client_status = client.wait(std::chrono::milliseconds(0)))
      why = "the " + transport + " client exited with status " + std::to_string(*client_status) +
            " before the server was ready";
    else if (std::chrono::steady_clock::now() > ready_deadline)
      why = "the " + transport + " server printed no ready line within " + config::format_duration(kServerReadyTimeout);
    if (!why.empty()) {
      outcome.failure = why + " (their messages are above)";
      client.terminate(std::chrono::seconds(2));
      server.terminate(kServerStopGrace);
      return outcome;
    }
  }
  out << "== " << transport << ": server ready at " << address << "\n" << std::flush;
  client.write_line(address);
  // The client's result file appears once it is done; it then waits, port open but idle, until
  // the server has gone and its stdin closes (memif peers must not disconnect under a polling
  // process).
  const auto client_deadline = std::chrono::steady_clock::now() + client_bound(job, job.cases_for(transport).size());
  std::optional<int> status;
  while (!(status = client.wait(std::chrono::milliseconds(200))) && !std::filesystem::exists(result_file)) {
    if (std::chrono::steady_clock::now() > client_deadline) break;
  }
  const int server_status = server.terminate(kServerStopGrace);
  client.close_pipe();
  if (!status) status = client.wait(kServerStopGrace);
  if (!status) {
    outcome.failure = "the " + transport + " client did not finish in time; killed";
    outcome.client_status = client.terminate(std::chrono::seconds(2));
  } else {
    outcome.client_status = *status;
  }
  if (std::filesystem::exists(result_file)) {
    try {
      outcome.cases = load_result_file(result_file).cases;
    } catch (const ResultFileError& e) {
      if (outcome.failure.empty()) outcome.failure = std::string("the ") + transport + " client's results: " + e.what();
    }
  }
  if (outcome.failure.empty() && outcome.cases.size() != job.cases_for(transport).size()) {
    outcome.failure = "the " + transport + " client exited with status " + std::to_string(outcome.client_status) +
                      " after " + std::to_string(outcome.cases.size()) + " of " +
                      std::to_string(job.cases_for(transport).size()) + " cases (its messages are above)";
  }
  if (outcome.failure.empty() && server_status != 0)
    outcome.failure = "the " + transport + " server exited with status " + std::to_string(server_status);
  return outcome;
}

bool job_runs_dpdk(const config::Config& conf) {
  const std::vector<std::string>& transports = conf.get_list("bench.transports");
  return transports.empty() ? conf.get_string("ms.type") == "dpdk"
                            : std::find(transports.begin(), transports.end(), "dpdk") != transports.end();
}

// The dpdk link of the job, chosen once here (both children must run the same one, and the free
// hugepages `auto` looks at change as soon as the server has started): sets `conf` to it, prints
// it, and returns the settings that pass it on to the children, with a socket of this run's own
// unless the job names one.
std::vector<std::string> choose_link_for_run(config::Config& conf, std::ostream& out) {
  if (!job_runs_dpdk(conf) || dpdk_link_from_config(conf) == DpdkLink::Configured) return {};
  const LinkChoice choice = choose_dpdk_link(conf, pmd::HostFacts::probe());
  std::vector<std::string> sets = settle_dpdk_link(choice, conf);
  if (conf.origin("bench.link_socket") == "default") {
    sets.push_back("bench.link_socket=/run/bypass-bench-" + std::to_string(getpid()) + ".sock");
    conf.set_assignment(sets.back(), kRunOrigin);
  }
  const LinkDescription link = describe_link(side_config(conf, Side::Client, "dpdk"));
  out << "== dpdk link: " << link.name << ", " << link.copies_per_round_trip.value_or(0)
      << " payload copies per round trip (" << choice.reason << ")\n";
  return sets;
}

std::string job_name(const config::CommonArgs& common) {
  std::string name;
  for (const std::string& file : common.config_files) name += (name.empty() ? "" : ",") + file;
  return name.empty() ? "(defaults)" : name;
}

}  // namespace

int run_bench_job(const config::CommonArgs& common, const config::Config& job_conf, std::ostream& out,
                  std::ostream& err) {
  const std::string started = iso8601_utc_now();
  config::Config conf = job_conf;
  std::ostringstream link_line;  // printed once the whole job has passed its checks
  const std::vector<std::string> link_sets = choose_link_for_run(conf, link_line);
  const BenchJob job = BenchJob::from_config(conf);
  check_two_process_job(conf, job);
  signal(SIGPIPE, SIG_IGN);  // a child that died shows as EPIPE on its stdin pipe, not our death
  std::ofstream json;
  if (!job.output_path.empty()) {
    json.open(job.output_path);
    if (!json) throw config::ConfigError("bench.output: cannot write '" + job.output_path + "': " + std::strerror(errno));
  }
  char work_template[] = "/tmp/bypass-bench-run-XXXXXX";
  if (mkdtemp(work_template) == nullptr)
    throw std::runtime_error(std::string("mkdtemp /tmp/bypass-bench-run-*: ") + std::strerror(errno));
  const std::string work_dir = work_template;

  std::vector<ResultCase> cases;
  std::vector<std::string> failures;
  out << link_line.str() << std::flush;
  for (const std::string& transport : job.transports) {
    TransportOutcome outcome = run_transport(transport, common, conf, job, link_sets, work_dir, out);
    cases.insert(cases.end(), outcome.cases.begin(), outcome.cases.end());
    if (!outcome.failure.empty()) {
      err << "bypass-bench run: " << outcome.failure << "\n";
      failures.push_back(outcome.failure);
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(work_dir, ignored);
  // A vhost-user socket file a killed server left behind (memif's sockets are abstract: no file).
  if (conf.origin("bench.link_socket") == kRunOrigin)
    std::filesystem::remove(conf.get_string("bench.link_socket"), ignored);

  out << "\n";
  print_case_table(cases, out);
  print_transport_comparison(cases, out);
  uint64_t errors = 0;
  for (const ResultCase& c : cases) errors += c.errors;
  if (json.is_open()) {
    json << result_file_json(make_result_file(job_name(common), started, conf, std::move(cases)));
    json.close();
    if (!json) throw std::runtime_error("bench.output: writing '" + job.output_path + "' failed");
    out << "\nresults: " << job.output_path << "\n";
  }
  if (errors > 0) err << "bypass-bench run: " << errors << " message errors (see the errors column)\n";
  return failures.empty() && errors == 0 ? 0 : 1;
}

const char* bench_run_usage() {
  return "usage: bypass-bench [-c JOB.yaml] [--set key=value]... run\n"
         "\n"
         "Runs the whole job on this machine: for each transport in bench.transports, a server and a\n"
         "client process of this binary (each on bench.server.cpus / bench.client.cpus, with its\n"
         "bench.server.<transport> / bench.client.<transport> settings); the client runs every\n"
         "message size x queue depth case. Prints progress, one table of all cases, transports side\n"
         "by side with ratios vs posix, and writes JSON (schema bypass-bench/1) to bench.output.\n"
         "bench.dpdk_link names the dpdk processes' port pair (vhost-user, memif-zero-copy, memif) or\n"
         "lets run pick the best one the host's free hugepages allow (auto); the link and its payload\n"
         "copies per round trip are printed first and named in the table and the JSON.\n";
}

}  // namespace bypass::bench
