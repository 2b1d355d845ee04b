// Flags of one bypass-bench subcommand, every one of which takes a value.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace bypass::bench {

// Splits `args` into (flag, value) pairs; "--flag value" and "--flag=value" both work. An unknown
// flag or a missing value is a config::ConfigError naming `command` ("echo: --size needs a
// value"); `help` is the command that documents the flags. Arguments not starting with "--" go to
// `positionals` when it is given, and are unknown arguments otherwise.
std::vector<std::pair<std::string, std::string>> split_valued_flags(
    const std::vector<std::string>& args, const std::string& command,
    const std::function<bool(const std::string&)>& is_known, const std::string& help,
    std::vector<std::string>* positionals = nullptr);

}  // namespace bypass::bench
