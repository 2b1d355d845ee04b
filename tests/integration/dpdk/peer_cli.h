// Command line of the test peer programs (inet_peer, msgr_peer): a subcommand with valued flags
// after the common -c/--set, bad input reported as "PROGRAM: COMMAND: --flag: what is wrong".
#pragma once

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "config/config.h"

namespace bypass::testing {

// Splits `args` into the flags `known` lists (each takes a value) and hands each to `apply`; an
// unknown flag, a missing value or a ConfigError thrown by `apply` becomes a ConfigError naming
// `command` and the flag.
void for_each_flag(const std::vector<std::string>& args, const std::string& command,
                   const std::vector<std::string>& known, const std::string& help,
                   const std::function<void(const std::string& flag, const std::string& value)>& apply);

// Value parsers for apply(): throw ConfigError describing the value.
std::chrono::milliseconds parse_positive_duration(const std::string& text);
uint64_t parse_count(const std::string& text, int64_t min, int64_t max);

// One subcommand: gets the loaded Config, its own arguments and the stop signals (SIGTERM,
// SIGINT), which are blocked in every thread so the command can wait for them with sigtimedwait.
using PeerCommand = std::function<int(const config::Config& conf, const std::vector<std::string>& args,
                                     const sigset_t& stop_signals)>;

// main(): blocks the stop signals, parses the common flags, prints `usage` for --help, runs the
// named command. Exit codes: the command's, 2 for bad input, 1 for any other exception.
int run_peer_main(int argc, char** argv, const std::string& program, const std::string& usage,
                  const std::map<std::string, PeerCommand>& commands);

}  // namespace bypass::testing
