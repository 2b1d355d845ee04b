// bypass-pmd's subcommands, shared by the one-shot command line and the interactive shell.
#pragma once

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "pmd/pmd.h"

namespace bypass::tools {

// A mistake in a command's arguments: one line, the command goes on to the next (shell) or the
// tool exits with status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Commands {
 public:
  Commands(pmd::PortSet& ports, const config::Config& config, std::atomic<bool>& stop)
      : ports_(ports), config_(config), stop_(stop) {}

  // Runs one command line ("stats --watch 1s --json"). Returns the exit status; throws
  // UsageError or pmd::PmdError.
  int run(const std::vector<std::string>& words);

  static const std::vector<std::string>& names();  // for tab completion
  static std::string help();

 private:
  int ports(bool json);
  int stats(const std::vector<std::string>& args, bool json);
  int xstats(const std::vector<std::string>& args, bool json);
  int reset_stats(bool json);
  int fwd(const std::vector<std::string>& args, bool json);
  int mempool(bool json);

  pmd::PortSet& ports_;
  const config::Config& config_;
  std::atomic<bool>& stop_;
};

std::vector<std::string> split_words(const std::string& line);

}  // namespace bypass::tools
