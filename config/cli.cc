// Common command-line flags: -c/--config FILE, --set key=value, --help-options.
#include "config/cli.h"

#include "config/option_value.h"

namespace bypass::config {

CommonArgs parse_common_args(int argc, char** argv) {
  CommonArgs args;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    // The flag's value: the rest of "--flag=VALUE", else the next argument.
    auto value_of = [&](std::string_view flag) -> std::string {
      if (arg.size() > flag.size() && arg[flag.size()] == '=')
        return std::string(arg.substr(flag.size() + 1));
      if (i + 1 >= argc) detail::throw_at(std::string(flag), "", "needs an argument");
      return argv[++i];
    };
    auto is_flag = [&](std::string_view flag) {
      return arg == flag || (arg.size() > flag.size() && arg.substr(0, flag.size()) == flag &&
                             arg[flag.size()] == '=');
    };
    if (arg == "--") {  // everything after belongs to the tool
      for (++i; i < argc; ++i) args.rest.emplace_back(argv[i]);
      break;
    }
    if (arg == "-c" || is_flag("--config")) {
      const std::string flag = arg == "-c" ? "-c" : "--config";
      std::string file = value_of(flag);
      if (file.empty()) detail::throw_at(flag, "", "needs a file name");
      args.config_files.push_back(std::move(file));
    } else if (is_flag("--set")) {
      std::string assignment = value_of("--set");
      const size_t equals = assignment.find('=');
      if (equals == std::string::npos || equals == 0)
        detail::throw_at("--set", "", detail::quote_input(assignment) + " is not key=value");
      args.assignments.push_back(std::move(assignment));
    } else if (arg == "--help-options") {
      args.help_options = true;
    } else {
      args.rest.emplace_back(arg);
    }
  }
  return args;
}

Config load_config(const CommonArgs& args) {
  Config config;
  for (const std::string& file : args.config_files) config.load_yaml_file(file);
  config.apply_environment();
  for (const std::string& assignment : args.assignments) config.set_assignment(assignment, "--set");
  return config;
}

}  // namespace bypass::config
