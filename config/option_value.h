// Internal to config/: one parsed option value and the parser that checks it against its spec.
// Shared by Registry::add (to validate defaults) and Config (every source goes through it).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace bypass::config::detail {

// Exactly the field that matches the option type is meaningful.
struct OptionValue {
  bool boolean = false;
  int64_t integer = 0;  // Int
  bool is_auto = false;  // Int with allows_auto: the word "auto" (integer unused)
  uint64_t size = 0;    // Size, bytes
  std::chrono::nanoseconds duration{0};
  std::string text;     // String and Enum
  Ipv4 ipv4;
  std::vector<int> cpus;
  std::vector<std::string> list;
};

// Parses `text` (or, for StringList from a YAML sequence, `list`) as a value of `spec`, checking
// range and enum membership. Throws ConfigError whose message describes the value only (callers
// prefix where it came from and the option name).
OptionValue parse_option_value(const OptionSpec& spec, std::string_view text,
                               const std::vector<std::string>* list);

// Canonical text of a value; parses back to the same value.
std::string format_option_value(const OptionSpec& spec, const OptionValue& value);

// "1..64", ">= 0", "4K..1G" or "" when unbounded; "posix, dpdk, rdma".
std::string range_text(const OptionSpec& spec);
std::string enum_text(const OptionSpec& spec);

// "expected an int value, got a list": for a value whose shape (map, list) does not fit the type.
std::string shape_mismatch(OptionType type, const char* got);

// "BYPASS_DPDK_HOST_IP" for "dpdk.host_ip".
std::string environment_name(std::string_view option_name);

// Throws ConfigError "WHERE: KEY: MESSAGE" (KEY omitted when empty): every message has this shape.
[[noreturn]] void throw_at(const std::string& where, std::string_view key, const std::string& message);

}  // namespace bypass::config::detail

namespace bypass::config::detail {

// The input quoted for an error message: control characters escaped, long input shortened, so a
// message stays on one line whatever was typed.
std::string quote_input(std::string_view text);

std::string_view trim(std::string_view text);

// Optimal string alignment distance (Levenshtein plus adjacent transpositions), for suggestions.
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace bypass::config::detail
