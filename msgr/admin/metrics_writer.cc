#include "msgr/admin/metrics_writer.h"

namespace bypass::admin {

std::string MetricsWriter::sanitize_name(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 1);
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':';
    out += ok ? c : '_';
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out.insert(out.begin(), '_');
  return out;
}

std::string MetricsWriter::escape_label_value(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string MetricsWriter::escape_help(std::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void MetricsWriter::add(std::string_view name, Type type, std::string_view help, const Labels& labels,
                        uint64_t value) {
  const std::string metric = sanitize_name(name);
  auto it = index_.find(metric);
  if (it == index_.end()) {
    it = index_.emplace(metric, families_.size()).first;
    families_.push_back({metric, std::string(help), type, {}});
  }
  std::string sample = metric;
  if (!labels.empty()) {
    sample += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) sample += ',';
      std::string label = sanitize_name(labels[i].first);
      for (char& c : label) if (c == ':') c = '_';
      sample += label + "=\"" + escape_label_value(labels[i].second) + '"';
    }
    sample += '}';
  }
  sample += ' ' + std::to_string(value);
  families_[it->second].samples.push_back(std::move(sample));
}

std::string MetricsWriter::render() const {
  std::string out;
  for (const Family& f : families_) {
    out += "# HELP " + f.name + ' ' + escape_help(f.help) + '\n';
    out += "# TYPE " + f.name + (f.type == Type::Counter ? " counter\n" : " gauge\n");
    for (const std::string& sample : f.samples) out += sample + '\n';
  }
  return out;
}

}  // namespace bypass::admin
