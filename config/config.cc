// Config: one value per registered option, assigned from defaults, files, environment and --set.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "config/config.h"
#include "base/log.h"
#include "config/option_value.h"

extern char** environ;

namespace bypass::config {

struct Config::Value {
  detail::OptionValue parsed;
  std::string origin;
};

namespace {

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20 || u == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", u);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace

std::string Ipv4::to_string() const {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", (host_order >> 24) & 0xff,
                (host_order >> 16) & 0xff, (host_order >> 8) & 0xff, host_order & 0xff);
  return buf;
}

Config::Config(const Registry& registry) : registry_(&registry) {
  for (const OptionSpec& spec : registry.options()) assign(spec, spec.default_value, "default", nullptr);
}

void Config::assign(const OptionSpec& spec, std::string_view text, const std::string& origin,
                    const std::vector<std::string>* list) {
  auto value = std::make_shared<Value>();
  try {
    value->parsed = detail::parse_option_value(spec, text, list);
  } catch (const ConfigError& e) {
    detail::throw_at(origin, spec.name, e.what());
  }
  value->origin = origin;
  // A fresh Value rather than an update in place: copies of this Config share Values and must
  // not see later changes.
  values_[spec.name] = std::move(value);
}

void Config::set(std::string_view key, std::string_view value, const std::string& origin) {
  const OptionSpec* spec = registry_->find(key);
  if (!spec) detail::throw_at(origin, key, registry_->unknown_option_message(key));
  assign(*spec, value, origin, nullptr);
}

void Config::set_assignment(std::string_view assignment, const std::string& origin) {
  const size_t equals = assignment.find('=');
  const std::string_view key =
      detail::trim(assignment.substr(0, equals == std::string_view::npos ? 0 : equals));
  if (equals == std::string_view::npos || key.empty())
    detail::throw_at(origin, "", detail::quote_input(assignment) + " is not key=value");
  set(key, assignment.substr(equals + 1), origin);
}

void Config::apply_environment() {
  for (const OptionSpec& spec : registry_->options()) {
    const std::string variable = detail::environment_name(spec.name);
    if (const char* text = std::getenv(variable.c_str())) assign(spec, text, variable, nullptr);
  }
  // A misspelt variable would otherwise be ignored without a trace.
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string_view assignment = *entry;
    if (assignment.rfind("BYPASS_", 0) != 0) continue;
    const std::string variable(assignment.substr(0, assignment.find('=')));
    if (variable == "BYPASS_LOG") continue;  // the logger's own
    // Scripts' own settings (BYPASS_TEST_ADDR, BYPASS_HUGEPAGES, BYPASS_TEST_BUILD ...) are not options.
    if (variable.rfind("BYPASS_TEST_", 0) == 0 || variable == "BYPASS_HUGEPAGES" ||
        variable == "BYPASS_RELEASE_BUILD")
      continue;
    bool known = false;
    for (const OptionSpec& spec : registry_->options())
      known = known || detail::environment_name(spec.name) == variable;
    if (!known)
      BYPASS_LOG(Warn, "config", "environment variable %s names no option (see --help-options)",
                 variable.c_str());
  }
}

const Config::Value& Config::value(std::string_view name, OptionType expected) const {
  const OptionSpec* spec = registry_->find(name);
  if (!spec) throw ConfigError(std::string(name) + ": " + registry_->unknown_option_message(name));
  const bool string_like = expected == OptionType::String && spec->type == OptionType::Enum;
  if (spec->type != expected && !string_like)
    throw ConfigError(std::string(name) + ": is a " + option_type_name(spec->type) +
                      " option, read as " + option_type_name(expected));
  return *values_.find(name)->second;
}

bool Config::get_bool(std::string_view name) const {
  return value(name, OptionType::Bool).parsed.boolean;
}
int64_t Config::get_int(std::string_view name) const {
  const detail::OptionValue& parsed = value(name, OptionType::Int).parsed;
  if (parsed.is_auto) throw ConfigError(std::string(name) + ": is auto here; read it with get_int_or_auto");
  return parsed.integer;
}
std::optional<int64_t> Config::get_int_or_auto(std::string_view name) const {
  const detail::OptionValue& parsed = value(name, OptionType::Int).parsed;
  if (parsed.is_auto) return std::nullopt;
  return parsed.integer;
}
uint64_t Config::get_size(std::string_view name) const {
  return value(name, OptionType::Size).parsed.size;
}
std::chrono::nanoseconds Config::get_duration(std::string_view name) const {
  return value(name, OptionType::Duration).parsed.duration;
}
const std::string& Config::get_string(std::string_view name) const {
  return value(name, OptionType::String).parsed.text;
}
Ipv4 Config::get_ipv4(std::string_view name) const {
  return value(name, OptionType::IPv4).parsed.ipv4;
}
std::vector<int> Config::get_cpus(std::string_view name) const {
  return value(name, OptionType::CpuList).parsed.cpus;
}
const std::vector<std::string>& Config::get_list(std::string_view name) const {
  return value(name, OptionType::StringList).parsed.list;
}

const std::string& Config::origin(std::string_view name) const {
  const OptionSpec* spec = registry_->find(name);
  if (!spec) throw ConfigError(std::string(name) + ": " + registry_->unknown_option_message(name));
  return values_.find(name)->second->origin;
}

std::string Config::to_string(std::string_view name) const {
  const OptionSpec* spec = registry_->find(name);
  if (!spec) throw ConfigError(std::string(name) + ": " + registry_->unknown_option_message(name));
  return detail::format_option_value(*spec, values_.find(name)->second->parsed);
}

std::string Config::to_json() const {
  std::string out = "{";
  bool first = true;
  for (const OptionSpec& spec : registry_->options()) {
    if (!first) out += ", ";
    first = false;
    append_json_string(out, spec.name);
    out += ": ";
    const detail::OptionValue& parsed = values_.find(spec.name)->second->parsed;
    switch (spec.type) {
      case OptionType::Bool:
        out += detail::format_option_value(spec, parsed);
        break;
      case OptionType::Int:  // a number, or the string "auto"
        if (parsed.is_auto) append_json_string(out, "auto");
        else out += detail::format_option_value(spec, parsed);
        break;
      case OptionType::Size:
        out += std::to_string(parsed.size);  // bytes: a number is what JSON consumers want
        break;
      case OptionType::StringList: {
        out += '[';
        for (size_t i = 0; i < parsed.list.size(); ++i) {
          if (i) out += ", ";
          append_json_string(out, parsed.list[i]);
        }
        out += ']';
        break;
      }
      default:
        append_json_string(out, detail::format_option_value(spec, parsed));
    }
  }
  return out + "}";
}

}  // namespace bypass::config
