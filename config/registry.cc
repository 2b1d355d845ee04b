// The option registry: registration checks, lookup, typo suggestions and --help-options text.
#include <algorithm>

#include "config/config.h"
#include "config/option_value.h"

namespace bypass::config {

namespace detail {

// Adjacent transpositions cost one edit so that the commonest typo ("tpye") is close.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace detail

namespace {

std::string_view last_component(std::string_view name) {
  const size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.front() == '.' || name.back() == '.') return false;
  if (name.find("..") != std::string_view::npos) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  });
}

}  // namespace

const char* option_type_name(OptionType type) {
  switch (type) {
    case OptionType::Bool: return "bool";
    case OptionType::Int: return "int";
    case OptionType::Size: return "size";
    case OptionType::Duration: return "duration";
    case OptionType::String: return "string";
    case OptionType::Enum: return "enum";
    case OptionType::IPv4: return "ipv4";
    case OptionType::CpuList: return "cpulist";
    case OptionType::StringList: return "stringlist";
  }
  return "?";
}

const OptionSpec* Registry::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &options_[it->second];
}

bool Registry::is_section(std::string_view prefix) const {
  if (prefix.empty()) return false;
  const std::string dotted = std::string(prefix) + ".";
  auto it = index_.lower_bound(dotted);
  return it != index_.end() && it->first.compare(0, dotted.size(), dotted) == 0;
}

std::optional<std::string> Registry::suggest(std::string_view name) const {
  const OptionSpec* best = nullptr;
  size_t best_distance = SIZE_MAX;
  for (const OptionSpec& spec : options_) {
    const size_t distance = detail::edit_distance(name, spec.name);
    if (distance < best_distance) {
      best_distance = distance;
      best = &spec;
    }
  }
  const size_t allowed = std::max<size_t>(2, name.size() / 4);
  if (best && best_distance <= allowed) return best->name;
  // Right key, wrong section ("tcp.host_ip"): offer the option of that name elsewhere.
  for (const OptionSpec& spec : options_)
    if (last_component(spec.name) == last_component(name)) return spec.name;
  return std::nullopt;
}

std::string Registry::unknown_option_message(std::string_view name) const {
  if (is_section(name)) return "is a section, not an option";
  if (auto near = suggest(name)) return "unknown option; did you mean '" + *near + "'?";
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || !is_section(name.substr(0, dot)))
    return "unknown option (see --help-options for every option)";
  const std::string section(name.substr(0, dot));
  const std::string dotted = section + ".";
  std::string listed;
  for (const OptionSpec& spec : options_)  // registration order: related options stay together
    if (spec.name.rfind(dotted, 0) == 0) listed += (listed.empty() ? "" : ", ") + spec.name;
  return "unknown option (options in '" + section + "': " + listed + ")";
}

void Registry::add(OptionSpec spec) {
  const std::string& name = spec.name;
  if (!valid_name(name))
    throw ConfigError("option '" + name + "': names are lower-case words joined by dots");
  if (index_.count(name)) throw ConfigError("option '" + name + "' is registered twice");
  if (is_section(name))
    throw ConfigError("option '" + name + "' has the name of a section that holds options");
  for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1))
    if (find(std::string_view(name).substr(0, dot)))
      throw ConfigError("option '" + name + "' sits under option '" + name.substr(0, dot) + "'");
  const std::string env = detail::environment_name(name);
  for (const OptionSpec& other : options_)
    if (detail::environment_name(other.name) == env)
      throw ConfigError("options '" + other.name + "' and '" + name + "' share variable " + env);
  if (spec.help.empty()) throw ConfigError("option '" + name + "' has no help text");
  if (spec.min > spec.max) throw ConfigError("option '" + name + "' has min > max");
  if (spec.type == OptionType::Enum && spec.enum_values.empty())
    throw ConfigError("option '" + name + "' is an enum without values");
  if (spec.type != OptionType::Enum && !spec.enum_values.empty())
    throw ConfigError("option '" + name + "' has enum values but is not an enum");
  if (spec.allows_auto && spec.type != OptionType::Int)
    throw ConfigError("option '" + name + "' allows auto but is not an int");
  try {
    detail::parse_option_value(spec, spec.default_value, nullptr);
  } catch (const ConfigError& e) {
    throw ConfigError("option '" + name + "': default " + e.what());
  }
  index_.emplace(name, options_.size());
  options_.push_back(std::move(spec));
}

std::string Registry::describe() const {
  std::string out;
  for (const OptionSpec& spec : options_) {
    std::string type = option_type_name(spec.type);
    if (spec.type == OptionType::Enum) type += ": " + detail::enum_text(spec);
    if (spec.allows_auto) type += " or auto";
    const std::string range = detail::range_text(spec);
    if (!range.empty()) type += ", " + range;
    out += spec.name + "\n";
    out += "    type:    " + type + "\n";
    out += "    default: " + (spec.default_value.empty() ? std::string("(empty)") : spec.default_value) + "\n";
    out += "    env:     " + detail::environment_name(spec.name) + "\n";
    out += "    " + spec.help + "\n\n";
  }
  return out;
}

}  // namespace bypass::config
