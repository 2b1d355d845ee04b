// bypass-pmd's subcommands, shared by the one-shot command line and the interactive shell.
#pragma once

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "pmd/pmd.h"
#include "tools/bypass-pmd/flow_commands.h"
#include "tools/bypass-pmd/forward.h"
#include "tools/bypass-pmd/stack_commands.h"

namespace bypass::tools {

// A mistake in a command's arguments: one line, the command goes on to the next (shell) or the
// tool exits with status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One command line with every flag and value already checked, so a mistake is reported before
// the EAL starts (no DPDK start-up for a typo) and a running command never meets a bad value.
struct ParsedCommand {
  std::string name;  // one of Commands::names(), never "quit"
  bool json = false;
  std::chrono::nanoseconds watch{0};     // stats --watch (0: print once)
  std::chrono::nanoseconds duration{0};  // stats --duration (0: until stopped)
  std::string filter;                    // xstats --filter, a valid POSIX extended regex ("" = all)
  FwdOptions fwd;                        // fwd mode, --size, --burst, --flows, --duration
  StackCommand stack;                    // stack SUBCOMMAND ... (runs without the port commands' PortSet)
  FlowCommand flow;                      // flow list|isolate|validate|create|destroy|flush ...
  std::string doctor_root = "/";         // doctor --root: where the host's sys/ and proc/ are
};

class Commands {
 public:
  Commands(pmd::PortSet& ports, const config::Config& config, std::atomic<bool>& stop)
      : ports_(ports), config_(config), stop_(stop) {}

  // Checks one command line ("stats --watch 1s --json") without touching DPDK; `config` supplies
  // limits that depend on it (the largest frame an mbuf holds). Throws UsageError naming the bad
  // flag and what it accepts.
  static ParsedCommand parse(const std::vector<std::string>& words, const config::Config& config);

  // Runs one command. Returns the exit status; throws UsageError or pmd::PmdError.
  int run(const ParsedCommand& command);
  int run(const std::vector<std::string>& words) { return run(parse(words, config_)); }

  static const std::vector<std::string>& names();  // for tab completion
  static std::string help();

 private:
  int ports(bool json);
  int stats(const ParsedCommand& command);
  int xstats(const ParsedCommand& command);
  int reset_stats(bool json);
  int fwd(const ParsedCommand& command);
  void linger(const FwdOptions& options);  // see FwdOptions::linger
  int mempool(bool json);

  pmd::PortSet& ports_;
  const config::Config& config_;
  std::atomic<bool>& stop_;
};

std::vector<std::string> split_words(const std::string& line);

// Flag values, checked strictly; a bad one throws UsageError naming `flag` and what it accepts.
std::chrono::nanoseconds duration_arg(const std::string& flag, const std::string& text);
uint64_t number_arg(const std::string& flag, const std::string& text, uint64_t min, uint64_t max,
                    const std::string& hint = "");

}  // namespace bypass::tools
