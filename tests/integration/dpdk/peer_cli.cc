#include "tests/integration/dpdk/peer_cli.h"

#include <algorithm>
#include <iostream>
#include <stdexcept>

#include "config/cli.h"
#include "tools/bypass-bench/subcommand_flags.h"

namespace bypass::testing {

using namespace std::chrono_literals;

void for_each_flag(const std::vector<std::string>& args, const std::string& command,
                   const std::vector<std::string>& known, const std::string& help,
                   const std::function<void(const std::string& flag, const std::string& value)>& apply) {
  const auto flags = bench::split_valued_flags(
      args, command,
      [&known](const std::string& f) { return std::find(known.begin(), known.end(), f) != known.end(); },
      help);
  for (const auto& [flag, value] : flags) {
    try {
      apply(flag, value);
    } catch (const config::ConfigError& e) {
      throw config::ConfigError(command + ": " + flag + ": " + e.what());
    }
  }
}

std::chrono::milliseconds parse_positive_duration(const std::string& text) {
  const auto d = std::chrono::duration_cast<std::chrono::milliseconds>(config::parse_duration(text));
  if (d <= 0ms) throw config::ConfigError("'" + text + "' must be a positive duration");
  return d;
}

uint64_t parse_count(const std::string& text, int64_t min, int64_t max) {
  const int64_t v = config::parse_int(text);
  if (v < min || v > max) {
    throw config::ConfigError(text + " is out of range [" + std::to_string(min) + ", " +
                              std::to_string(max) + "]");
  }
  return static_cast<uint64_t>(v);
}

int run_peer_main(int argc, char** argv, const std::string& program, const std::string& usage,
                  const std::map<std::string, PeerCommand>& commands) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);  // before any thread starts: all inherit it
  try {
    const config::CommonArgs common = config::parse_common_args(argc, argv);
    if (common.rest.empty()) {
      std::cerr << usage;
      return 2;
    }
    const std::string& command = common.rest.front();
    const std::vector<std::string> args(common.rest.begin() + 1, common.rest.end());
    const bool help = command == "--help" || command == "-h" ||
                      std::find_if(args.begin(), args.end(), [](const std::string& a) {
                        return a == "--help" || a == "-h";
                      }) != args.end();
    if (help) {
      std::cout << usage;
      return 0;
    }
    const auto it = commands.find(command);
    if (it == commands.end()) {
      std::cerr << program << ": unknown command '" << command << "'\n" << usage;
      return 2;
    }
    const config::Config conf = config::load_config(common);
    return it->second(conf, args, stop_signals);
  } catch (const config::ConfigError& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << program << ": error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace bypass::testing
