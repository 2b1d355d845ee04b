// Typed option registry and the values loaded into it.
//
// Every tunable in Bypass is one entry in a single registry (config/option_table.cc): name
// ("ms.type", "dpdk.host_ip"), type, default, range and help. A Config holds one value per option,
// filled in order of increasing priority: defaults < YAML file < environment BYPASS_<KEY> <
// command line --set key=value. Every error names where the bad value came from (file:line:col,
// "--set", or the environment variable) and what is allowed.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace bypass::config {

// What values an option takes; decides how its text is parsed and which get_*() reads it.
enum class OptionType { Bool, Int, Size, Duration, String, Enum, IPv4, CpuList, StringList };

// "bool", "size", "cpulist", ...: the type's name in help listings and error messages.
const char* option_type_name(OptionType type);

// One option's definition in the registry: everything needed to parse, check and describe it.
struct OptionSpec {
  std::string name;           // dotted path, e.g. "dpdk.host_ip"
  OptionType type;            // how the value is parsed and read
  std::string default_value;  // textual, parsed like any other source
  std::string help;           // one line for --help-options
  int64_t min = INT64_MIN;    // Int, Size and Duration (nanoseconds) ranges, inclusive
  int64_t max = INT64_MAX;    // upper end of the range above, inclusive
  std::vector<std::string> enum_values = {};  // Enum only
  // Int only: the word "auto" is a value too, meaning "let the code choose" (rdma.gid_index);
  // read such an option with Config::get_int_or_auto.
  bool allows_auto = false;
};

// Raised for every bad input: malformed YAML, unknown key, wrong type, value out of range.
// what() is the complete one-line message, e.g.
//   "job.yaml:3:9: ms.type: 'dpkd' is not one of posix, dpdk, rdma"
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The set of known options, looked up by name. One global instance (filled from
// config/option_table.cc) serves every tool, so names, defaults and help agree everywhere.
class Registry {
 public:
  static const Registry& global();  // every option Bypass knows

  // The option called `name` (exact dotted name), or nullptr when there is none.
  const OptionSpec* find(std::string_view name) const;
  // The known option nearest to `name` by edit distance, if reasonably close ("ms.tpye" -> "ms.type").
  std::optional<std::string> suggest(std::string_view name) const;
  // True when `prefix` names a section ("dpdk") that holds at least one option.
  bool is_section(std::string_view prefix) const;
  // Why `name` is not an option, and what is allowed instead: the nearest known key when one is
  // close, otherwise the options of its section (or the sections, when the section is unknown).
  std::string unknown_option_message(std::string_view name) const;
  const std::vector<OptionSpec>& options() const { return options_; }  // in registration order
  // Human-readable listing for --help-options.
  std::string describe() const;

  void add(OptionSpec spec);  // throws ConfigError on a duplicate or an invalid default

 private:
  std::vector<OptionSpec> options_;
  std::map<std::string, size_t, std::less<>> index_;
};

// A parsed value of one option (the variant alternative follows the option type).
struct Ipv4 {
  uint32_t host_order = 0;  // the address, 10.0.0.1 as 0x0a000001
  std::string to_string() const;  // dotted quad, "10.0.0.1"
  bool operator==(const Ipv4&) const = default;  // same address
};

// One value per registry option, with where each came from. Reads are typed: asking for an
// option with the wrong get_*() throws ConfigError rather than misreading the value.
class Config {
 public:
  // All options at their defaults.
  explicit Config(const Registry& registry = Registry::global());

  // Sources, in the order tools apply them.
  void load_yaml_file(const std::string& path);
  // As load_yaml_file(), from text in memory; errors name `origin` in place of a file name.
  void load_yaml_text(std::string_view text, const std::string& origin = "<string>");
  void apply_environment();                        // BYPASS_MS_TYPE=dpdk -> ms.type
  // Sets option `key` from text; throws ConfigError naming `origin` for an unknown key or a
  // bad value.
  void set(std::string_view key, std::string_view value, const std::string& origin = "--set");
  // set() from one "key=value" argument, as --set passes it.
  void set_assignment(std::string_view assignment, const std::string& origin = "--set");  // "k=v"
  // Text values (--set, environment) of a StringList are comma-separated ("a,b"); an item that
  // contains a comma needs YAML flow syntax: ["net_tap0,iface=bp0", net_ring0].
  // A YAML file is applied all or nothing: on error the Config keeps its previous values.

  bool get_bool(std::string_view name) const;
  int64_t get_int(std::string_view name) const;                  // Int (throws when it is "auto")
  std::optional<int64_t> get_int_or_auto(std::string_view name) const;  // Int; nullopt for "auto"
  uint64_t get_size(std::string_view name) const;                 // bytes
  std::chrono::nanoseconds get_duration(std::string_view name) const;  // Duration
  const std::string& get_string(std::string_view name) const;     // String and Enum
  Ipv4 get_ipv4(std::string_view name) const;                    // IPv4
  std::vector<int> get_cpus(std::string_view name) const;         // "0-3,6" -> {0,1,2,3,6}
  // A StringList option's items.
  const std::vector<std::string>& get_list(std::string_view name) const;

  // Where the current value came from ("default", "job.yaml:3:9", "--set", "BYPASS_MS_TYPE").
  const std::string& origin(std::string_view name) const;
  // Canonical text of the current value (for config echo in results).
  std::string to_string(std::string_view name) const;
  // Every option with its value, as a flat JSON object in registration order: bools and ints as
  // JSON literals, sizes as a number of bytes, string lists as arrays of strings, everything
  // else (durations, enums, addresses, CPU lists) as the canonical text of to_string().
  std::string to_json() const;
  const Registry& registry() const { return *registry_; }  // the options this Config holds

 private:
  struct Value;
  const Value& value(std::string_view name, OptionType expected) const;
  void assign(const OptionSpec& spec, std::string_view text, const std::string& origin,
              const std::vector<std::string>* list);

  const Registry* registry_;
  std::map<std::string, std::shared_ptr<Value>, std::less<>> values_;
};

// Text parsers shared by the loader and tools (throw ConfigError with `what` describing the input).
bool parse_bool(std::string_view text);
int64_t parse_int(std::string_view text);  // decimal or 0x hex, optional sign; 64-bit range
uint64_t parse_size(std::string_view text);                 // "4K", "1M", "2GiB", "512"
std::chrono::nanoseconds parse_duration(std::string_view text);  // "200ms", "2s", "1m", "500us"
Ipv4 parse_ipv4(std::string_view text);                     // dotted quad, "192.168.1.10"
std::vector<int> parse_cpu_list(std::string_view text);     // "0-3,6" -> {0,1,2,3,6}, sorted
std::string format_cpu_list(const std::vector<int>& cpus);  // sorted {0,1,2,3,6} -> "0-3,6" ("" when empty)
// Canonical text of a size: the largest binary unit that divides it exactly ("4K", "3M", "1000").
std::string format_size(uint64_t bytes);
// Canonical text of a duration: the largest unit that divides it exactly ("200ms", "2s", "1m").
std::string format_duration(std::chrono::nanoseconds d);

}  // namespace bypass::config
