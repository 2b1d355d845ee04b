// Prometheus text exposition format 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/):
// one HELP and one TYPE line per metric family, then its samples, families never interleaved. Samples
// are collected first and rendered at the end, so callers may add them in any order (per worker,
// per messenger) and a family still comes out in one block.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bypass::admin {

class MetricsWriter {
 public:
  enum class Type { Counter, Gauge };
  using Labels = std::vector<std::pair<std::string, std::string>>;

  // `name` is the full sample name (a counter's ends in _total); characters outside
  // [a-zA-Z0-9_:] become '_'. The first help text and type given for a family are kept.
  void add(std::string_view name, Type type, std::string_view help, const Labels& labels, uint64_t value);

  // The exposition, in the order families were first added.
  std::string render() const;

  // Metric and label names may only hold [a-zA-Z_:][a-zA-Z0-9_:]* (label names no ':').
  static std::string sanitize_name(std::string_view name);
  // Label values escape backslash, double quote and newline; HELP text backslash and newline.
  static std::string escape_label_value(std::string_view value);
  static std::string escape_help(std::string_view help);

 private:
  struct Family {
    std::string name, help;
    Type type;
    std::vector<std::string> samples;  // rendered "name{labels} value" lines
  };
  std::vector<Family> families_;
  std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace bypass::admin
