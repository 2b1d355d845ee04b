// Command-line handling shared by every tool: -c/--config FILE, --set key=value (repeatable),
// --help-options. Tools pass their remaining arguments on to their own parsers.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace bypass::config {

struct CommonArgs {
  std::vector<std::string> config_files;  // -c/--config, applied in order
  std::vector<std::string> assignments;   // --set k=v, applied last (highest priority)
  bool help_options = false;              // --help-options was given
  std::vector<std::string> rest;          // arguments the common parser did not consume, in
                                          // order; argv[0] excluded; everything after "--" verbatim
};

// Pulls the common flags out of argv (long flags also as --flag=VALUE); throws ConfigError for
// "--set" without "k=v" or a missing file argument.
CommonArgs parse_common_args(int argc, char** argv);

// Builds the Config from CommonArgs: defaults, then each YAML file, then BYPASS_* environment,
// then --set. Throws ConfigError naming the bad source.
Config load_config(const CommonArgs& args);

}  // namespace bypass::config
