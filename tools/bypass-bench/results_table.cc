#include "tools/bypass-bench/results_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace bypass::bench {

void ResultsTable::add_row(std::vector<std::string> cells) {
  if (cells.size() > headers_.size()) {
    throw std::invalid_argument("results table: row has " + std::to_string(cells.size()) +
                                " cells for " + std::to_string(headers_.size()) + " columns");
  }
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

void ResultsTable::print(std::ostream& out) const {
  std::vector<size_t> widths;
  for (const auto& h : headers_) widths.push_back(h.size());
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      // Right-aligned: the columns are numbers.
      out << (i ? "  " : "") << std::string(widths[i] - cells[i].size(), ' ') << cells[i];
    }
    out << '\n';
  };
  line(headers_);
  std::vector<std::string> rule;
  for (size_t w : widths) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto& row : rows_) line(row);
}

std::string format_fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  return buf;
}

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

void JsonObject::key(const std::string& k) {
  if (!body_.empty()) body_ += ",";
  body_ += json_quote(k) + ":";
}

JsonObject& JsonObject::number(const std::string& k, double value) {
  key(k);
  body_ += std::isfinite(value) ? format_fixed(value, 3) : "null";
  return *this;
}

JsonObject& JsonObject::integer(const std::string& k, int64_t value) {
  key(k);
  body_ += std::to_string(value);
  return *this;
}

JsonObject& JsonObject::string(const std::string& k, const std::string& value) {
  key(k);
  body_ += json_quote(value);
  return *this;
}

JsonObject& JsonObject::raw(const std::string& k, const std::string& json) {
  key(k);
  body_ += json;
  return *this;
}

}  // namespace bypass::bench
