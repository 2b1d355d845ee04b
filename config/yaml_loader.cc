// YAML sources: nested maps name options by path (`dpdk: {host_ip: ...}` sets dpdk.host_ip).
// Every error points at the offending node as FILE:LINE:COL (1-based).
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <yaml-cpp/yaml.h>

#include "config/config.h"
#include "config/option_value.h"

namespace bypass::config {

namespace {

std::string location(const std::string& origin, const YAML::Mark& mark) {
  if (mark.is_null()) return origin;
  return origin + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

const char* node_kind(const YAML::Node& node) {
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  return "a scalar";
}

// Walks one document and hands each value to Config; knows nothing about types beyond
// "list or not", which is the only thing the document structure decides.
class YamlWalker {
 public:
  using Assign = std::function<void(const OptionSpec&, std::string_view, const std::string&,
                                    const std::vector<std::string>*)>;

  YamlWalker(const Registry& registry, const std::string& origin, Assign assign)
      : registry_(registry), origin_(origin), assign_(std::move(assign)) {}

  void walk_document(const YAML::Node& root) {
    if (root.IsNull()) return;  // an empty file sets nothing
    if (!root.IsMap())
      detail::throw_at(location(origin_, root.Mark()), "",
                       std::string("expected a map of sections (e.g. ms: {type: posix}), got ") +
                           node_kind(root));
    walk_map(root, "");
  }

 private:
  void walk_map(const YAML::Node& map, const std::string& prefix) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node key = it->first;  // copies: it-> yields a temporary proxy
      const YAML::Node value = it->second;
      if (!key.IsScalar())
        detail::throw_at(location(origin_, key.Mark()), prefix,
                         std::string("keys must be option names, got ") + node_kind(key));
      const std::string name = prefix.empty() ? key.Scalar() : prefix + "." + key.Scalar();
      const YAML::Mark value_mark = value.Mark().is_null() ? key.Mark() : value.Mark();
      if (const OptionSpec* spec = registry_.find(name)) {
        set_option(*spec, key, value, location(origin_, value_mark));
      } else if (registry_.is_section(name)) {
        if (value.IsMap()) {
          walk_map(value, name);
        } else if (!value.IsNull()) {  // "dpdk:" with nothing under it sets nothing
          detail::throw_at(location(origin_, value_mark), name,
                           std::string("is a section: expected a map of its options, got ") +
                               node_kind(value));
        }
      } else if (prefix.empty() && name.find('.') == std::string::npos) {
        detail::throw_at(location(origin_, key.Mark()), name, unknown_section_message(name));
      } else {
        detail::throw_at(location(origin_, key.Mark()), name, registry_.unknown_option_message(name));
      }
    }
  }

  void set_option(const OptionSpec& spec, const YAML::Node& key, const YAML::Node& value,
                  const std::string& where) {
    auto [first, inserted] = first_set_.emplace(spec.name, location(origin_, key.Mark()));
    if (!inserted)
      detail::throw_at(location(origin_, key.Mark()), spec.name,
                       "set twice in this file (first at " + first->second + ")");
    if (value.IsMap())
      detail::throw_at(where, spec.name, detail::shape_mismatch(spec.type, "a map"));
    if (value.IsSequence()) {
      if (spec.type != OptionType::StringList)
        detail::throw_at(where, spec.name, detail::shape_mismatch(spec.type, "a list"));
      std::vector<std::string> items;
      for (const YAML::Node& item : value) {
        if (!item.IsScalar())
          detail::throw_at(location(origin_, item.Mark()), spec.name,
                           std::string("list items must be scalars, got ") + node_kind(item));
        items.push_back(item.Scalar());
      }
      assign_(spec, "", where, &items);
      return;
    }
    assign_(spec, value.IsNull() ? std::string_view() : std::string_view(value.Scalar()), where,
            nullptr);
  }

  std::string unknown_section_message(const std::string& name) const {
    std::vector<std::string> sections;
    for (const OptionSpec& spec : registry_.options()) {
      const std::string section = spec.name.substr(0, spec.name.find('.'));
      if (std::find(sections.begin(), sections.end(), section) == sections.end())
        sections.push_back(section);
    }
    std::string message = "unknown section";
    const std::string* nearest = nullptr;
    size_t nearest_distance = 3;  // sections are short words: allow at most two edits
    for (const std::string& section : sections) {
      const size_t distance = detail::edit_distance(name, section);
      if (distance < nearest_distance) {
        nearest_distance = distance;
        nearest = &section;
      }
    }
    if (nearest) message += "; did you mean '" + *nearest + "'?";
    message += " (sections:";
    for (size_t i = 0; i < sections.size(); ++i) message += (i ? ", " : " ") + sections[i];
    return message + ")";
  }

  const Registry& registry_;
  const std::string& origin_;
  Assign assign_;
  std::map<std::string, std::string> first_set_;
};

}  // namespace

void Config::load_yaml_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) detail::throw_at(path, "", std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) detail::throw_at(path, "", std::string("cannot read: ") + std::strerror(errno));
  load_yaml_text(text.str(), path);
}

void Config::load_yaml_text(std::string_view text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    detail::throw_at(location(origin, e.mark), "", "malformed YAML: " + e.msg);
  }
  // Values are staged and committed only when the whole document is valid, so a bad file
  // leaves this Config as it was.
  Config staged = *this;
  YamlWalker walker(*registry_, origin,
                    [&staged](const OptionSpec& spec, std::string_view value,
                              const std::string& where, const std::vector<std::string>* list) {
                      staged.assign(spec, value, where, list);
                    });
  walker.walk_document(root);
  values_ = std::move(staged.values_);
}

}  // namespace bypass::config
