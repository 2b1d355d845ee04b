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

double round_to(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  const double scaled = value * scale;
  // Beyond 2^53 a double has no fractional digits left to round.
  if (!std::isfinite(scaled) || std::fabs(scaled) >= 0x1p53) return value;
  return std::round(scaled) / scale;
}

}  // namespace bypass::bench
