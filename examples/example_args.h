// Command-line handling shared by the examples: options come from the environment (BYPASS_MS_TYPE=dpdk)
// and from --set KEY=VALUE arguments, like every Bypass tool; what remains are positional arguments.
#pragma once

#include <bypass/config/config.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace example {

// Applies BYPASS_* variables and every "--set KEY=VALUE" to `conf`; returns the other arguments.
// A bad option is printed with where it came from, and the program exits with status 2.
inline std::vector<std::string> load_options(int argc, char** argv, bypass::config::Config& conf) {
  std::vector<std::string> positional;
  try {
    conf.apply_environment();
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--set" && i + 1 < argc) conf.set_assignment(argv[++i]);
      else if (arg.rfind("--set=", 0) == 0) conf.set_assignment(arg.substr(6));
      else positional.push_back(arg);
    }
  } catch (const bypass::config::ConfigError& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    std::exit(2);
  }
  return positional;
}

}  // namespace example
