// bypass-bench: the benchmark tool. Subcommands are jobs; each reads its parameters from the
// Config (defaults < -c YAML files < BYPASS_* environment < --set) plus a few flags of its own.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "config/cli.h"
#include "config/config.h"
#include "base/log.h"
#include "tools/bypass-bench/bench_client.h"
#include "tools/bypass-bench/bench_run.h"
#include "tools/bypass-bench/bench_server.h"
#include "tools/bypass-bench/ceph_mon_version.h"
#include "tools/bypass-bench/compare.h"
#include "tools/bypass-bench/echo_job.h"
#include "tools/bypass-bench/job_options.h"

namespace {

const char* kUsage =
    "usage: bypass-bench [-c FILE]... [--set key=value]... <command> [command options]\n"
    "       bypass-bench --help | --help-options\n"
    "\n"
    "commands:\n"
    "  run               the whole job: server and client processes per transport, tables, JSON\n"
    "                    (bypass-bench run --help)\n"
    "  server            the answering side of the job's messenger benchmark (one transport)\n"
    "  client            the measuring side, against a running server (one transport)\n"
    "  echo              echo server + ping-pong client in one process (bypass-bench echo --help)\n"
    "  ceph-mon-version  ask a Ceph monitor for its monmap and osdmap versions\n"
    "                    (bypass-bench ceph-mon-version --help)\n"
    "  compare           result files side by side, ratios, --plot SVG (bypass-bench compare --help)\n"
    "\n"
    "common options:\n"
    "  -c, --config FILE   load a YAML configuration (repeatable, later files win)\n"
    "  --set key=value     set one option (highest priority; see --help-options)\n"
    "  --help-options      list every option with its type, default and help\n";

bool wants_help(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

int run_echo(const bypass::config::CommonArgs& common, const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::cout << bypass::bench::echo_usage();
    return 0;
  }
  bypass::config::Config conf = bypass::config::load_config(common);
  const bypass::bench::EchoJobOptions options = bypass::bench::parse_echo_flags(args, conf);
  std::ofstream json;
  if (!options.json_path.empty()) {
    // Open before the run so a bad path fails in a second, not after the whole benchmark.
    json.open(options.json_path);
    if (!json) {
      std::cerr << "bypass-bench: --json: cannot write '" << options.json_path
                << "': " << std::strerror(errno) << "\n";
      return 1;
    }
  }
  bypass::bench::EchoJob job(conf, options);
  const bypass::bench::EchoResults results = job.run(std::cout);
  bypass::bench::print_echo_results(results, std::cout);
  if (json.is_open()) {
    json << bypass::bench::echo_results_json(results, conf);
    json.close();
    if (!json) {
      std::cerr << "bypass-bench: --json: writing '" << options.json_path << "' failed\n";
      return 1;
    }
  }
  return results.errors == 0 ? 0 : 1;
}

// Job subcommands take no flags of their own beyond --help (client: --case-file, used by run).
int run_job_command(const std::string& command, const bypass::config::CommonArgs& common,
                    const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::cout << (command == "run"      ? bypass::bench::bench_run_usage()
                  : command == "server" ? bypass::bench::bench_server_usage()
                                        : bypass::bench::bench_client_usage());
    return 0;
  }
  const bypass::config::Config conf = bypass::config::load_config(common);
  // Session set-up and teardown are logged at Info; during a benchmark only problems matter.
  bypass::log::set_threshold(bypass::log::Level::Warn);
  if (command == "client") {
    std::string job;
    for (const auto& file : common.config_files) job += (job.empty() ? "" : ",") + file;
    return bypass::bench::run_bench_client(conf, job.empty() ? "(defaults)" : job,
                                           bypass::bench::parse_client_flags(args), std::cout);
  }
  if (!args.empty())
    throw bypass::config::ConfigError(command + ": unknown argument '" + args.front() + "' (see bypass-bench " +
                                      command + " --help)");
  if (command == "server") return bypass::bench::run_bench_server(conf, std::cout);
  return bypass::bench::run_bench_job(common, conf, std::cout, std::cerr);
}

int run_ceph_mon_version(const bypass::config::CommonArgs& common, const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::cout << bypass::bench::ceph_mon_version_usage();
    return 0;
  }
  const bypass::config::Config conf = bypass::config::load_config(common);
  const bypass::bench::CephMonVersionOptions options = bypass::bench::parse_ceph_mon_version_flags(args);
  return bypass::bench::run_ceph_mon_version(conf, options, std::cout, std::cerr);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const bypass::config::CommonArgs common = bypass::config::parse_common_args(argc, argv);
    if (common.help_options) {
      std::cout << bypass::config::Registry::global().describe();
      return 0;
    }
    if (common.rest.empty()) {
      std::cerr << kUsage;
      return 2;
    }
    const std::string& command = common.rest.front();
    const std::vector<std::string> args(common.rest.begin() + 1, common.rest.end());
    if (command == "--help" || command == "-h" || command == "help") {
      std::cout << kUsage;
      return 0;
    }
    if (command == "echo") return run_echo(common, args);
    if (command == "run" || command == "server" || command == "client") return run_job_command(command, common, args);
    if (command == "ceph-mon-version") return run_ceph_mon_version(common, args);
    if (command == "compare") {
      if (wants_help(args)) {
        std::cout << bypass::bench::compare_usage();
        return 0;
      }
      return bypass::bench::run_compare(bypass::bench::parse_compare_flags(args), std::cout, std::cerr);
    }
    std::cerr << "bypass-bench: unknown command '" << command << "'\n\n" << kUsage;
    return 2;
  } catch (const bypass::config::ConfigError& e) {
    std::cerr << "bypass-bench: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "bypass-bench: error: " << e.what() << "\n";
    return 1;
  }
}
