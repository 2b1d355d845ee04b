// Parsing one option value against its spec (type, range, enum values) and printing it back.
#include "config/option_value.h"

#include <cctype>
#include <yaml-cpp/yaml.h>

namespace bypass::config {

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace bypass::config

namespace bypass::config::detail {

namespace {

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += separator;
    out += items[i];
  }
  return out;
}

std::string bound_text(OptionType type, int64_t bound) {
  if (type == OptionType::Size) return format_size(static_cast<uint64_t>(bound));
  if (type == OptionType::Duration) return format_duration(std::chrono::nanoseconds{bound});
  return std::to_string(bound);
}

bool has_min(const OptionSpec& spec) {
  // Sizes and durations cannot be negative anyway, so a lower bound of 0 says nothing.
  if (spec.type == OptionType::Size || spec.type == OptionType::Duration) return spec.min > 0;
  return spec.min != INT64_MIN;
}
bool has_max(const OptionSpec& spec) { return spec.max != INT64_MAX; }

void check_range(const OptionSpec& spec, std::string_view text, bool below, bool above) {
  if (!below && !above) return;
  throw ConfigError(quote_input(text) + " is out of range (allowed " + range_text(spec) + ")");
}

// "[a, 'b,c']" on --set or in the environment: a YAML flow sequence, for items containing commas.
std::vector<std::string> parse_flow_list(std::string_view text) {
  const std::string message = quote_input(text) + " is not a list (use a,b,c or [\"a,x=1\", b])";
  YAML::Node node;
  try {
    node = YAML::Load(std::string(text));
  } catch (const YAML::Exception&) {
    throw ConfigError(message);
  }
  if (!node.IsSequence()) throw ConfigError(message);
  std::vector<std::string> items;
  for (const YAML::Node& item : node) {
    if (!item.IsScalar()) throw ConfigError(message);
    items.push_back(item.Scalar());
  }
  return items;
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> items;
  std::string_view rest = trim(text);
  if (rest.empty()) return items;
  if (rest.front() == '[') return parse_flow_list(rest);
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    if (item.empty()) throw ConfigError(quote_input(text) + " has an empty list item");
    items.emplace_back(item);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return items;
}

std::string format_list(const std::vector<std::string>& items) {
  bool plain = true;
  for (const std::string& item : items)
    if (item.empty() || item.find_first_of(",[]\"'") != std::string::npos || trim(item) != item)
      plain = false;
  if (plain) return join(items, ",");
  // Items that a comma split would break are written as a YAML flow sequence of quoted strings.
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += '"';
    for (char c : items[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "]";
}

}  // namespace

std::string range_text(const OptionSpec& spec) {
  const bool low = has_min(spec), high = has_max(spec);
  if (low && high) return bound_text(spec.type, spec.min) + ".." + bound_text(spec.type, spec.max);
  if (low) return ">= " + bound_text(spec.type, spec.min);
  if (high) return "<= " + bound_text(spec.type, spec.max);
  return "";
}

std::string shape_mismatch(OptionType type, const char* got) {
  const std::string name = option_type_name(type);
  const bool vowel = name.find_first_of("aeiou") == 0;
  return std::string("expected ") + (vowel ? "an " : "a ") + name + " value, got " + got;
}

std::string enum_text(const OptionSpec& spec) { return join(spec.enum_values, ", "); }

OptionValue parse_option_value(const OptionSpec& spec, std::string_view text,
                               const std::vector<std::string>* list) {
  OptionValue value;
  if (list && spec.type != OptionType::StringList)
    throw ConfigError(shape_mismatch(spec.type, "a list"));
  switch (spec.type) {
    case OptionType::Bool:
      value.boolean = parse_bool(text);
      break;
    case OptionType::Int:
      if (spec.allows_auto && trim(text) == "auto") {
        value.is_auto = true;
        break;
      }
      try {
        value.integer = parse_int(text);
      } catch (const ConfigError& e) {
        if (!spec.allows_auto) throw;
        throw ConfigError(std::string(e.what()) + " or auto");
      }
      check_range(spec, text, value.integer < spec.min, value.integer > spec.max);
      break;
    case OptionType::Size: {
      value.size = parse_size(text);
      const bool below = spec.min > 0 && value.size < static_cast<uint64_t>(spec.min);
      const bool above = has_max(spec) && value.size > static_cast<uint64_t>(spec.max);
      check_range(spec, text, below, above);
      break;
    }
    case OptionType::Duration:
      value.duration = parse_duration(text);
      check_range(spec, text, value.duration.count() < spec.min, value.duration.count() > spec.max);
      break;
    case OptionType::String:
      value.text = std::string(text);
      break;
    case OptionType::Enum: {
      const std::string_view word = trim(text);
      bool known = false;
      for (const std::string& allowed : spec.enum_values) known = known || allowed == word;
      if (!known) throw ConfigError(quote_input(text) + " is not one of " + enum_text(spec));
      value.text = std::string(word);
      break;
    }
    case OptionType::IPv4:
      value.ipv4 = parse_ipv4(text);
      break;
    case OptionType::CpuList:
      value.cpus = parse_cpu_list(text);
      break;
    case OptionType::StringList:
      value.list = list ? *list : split_list(text);
      break;
  }
  return value;
}

std::string format_option_value(const OptionSpec& spec, const OptionValue& value) {
  switch (spec.type) {
    case OptionType::Bool: return value.boolean ? "true" : "false";
    case OptionType::Int: return value.is_auto ? "auto" : std::to_string(value.integer);
    case OptionType::Size: return format_size(value.size);
    case OptionType::Duration: return format_duration(value.duration);
    case OptionType::String:
    case OptionType::Enum: return value.text;
    case OptionType::IPv4: return value.ipv4.to_string();
    case OptionType::CpuList: return format_cpu_list(value.cpus);
    case OptionType::StringList: return format_list(value.list);
  }
  return {};
}

std::string environment_name(std::string_view option_name) {
  std::string out = "BYPASS_";
  for (char c : option_name)
    out += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

void throw_at(const std::string& where, std::string_view key, const std::string& message) {
  std::string text = where;
  if (!key.empty()) (text += ": ") += key;
  throw ConfigError(text + ": " + message);
}

}  // namespace bypass::config::detail
