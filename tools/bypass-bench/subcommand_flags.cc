#include "tools/bypass-bench/subcommand_flags.h"

#include "config/config.h"

namespace bypass::bench {

std::vector<std::pair<std::string, std::string>> split_valued_flags(
    const std::vector<std::string>& args, const std::string& command,
    const std::function<bool(const std::string&)>& is_known, const std::string& help,
    std::vector<std::string>* positionals) {
  std::vector<std::pair<std::string, std::string>> flags;
  for (size_t i = 0; i < args.size(); ++i) {
    if (positionals != nullptr && args[i].rfind("--", 0) != 0) {
      positionals->push_back(args[i]);
      continue;
    }
    std::string flag = args[i];
    std::string value;
    bool has_value = false;
    if (const size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
      has_value = true;
    }
    if (!is_known(flag)) {
      throw config::ConfigError(command + ": unknown argument '" + args[i] + "' (see " + help + ")");
    }
    if (!has_value) {
      if (i + 1 >= args.size()) throw config::ConfigError(command + ": " + flag + " needs a value");
      value = args[++i];
    }
    flags.emplace_back(std::move(flag), std::move(value));
  }
  return flags;
}

}  // namespace bypass::bench
