// Plain-text result tables (aligned columns) and the rounding of the numbers they and the JSON
// results show.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace bypass::bench {

class ResultsTable {
 public:
  explicit ResultsTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  // Cells beyond the header count are an error (std::invalid_argument); missing ones print empty.
  void add_row(std::vector<std::string> cells);
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// Fixed-point formatting for table cells ("12345.6").
std::string format_fixed(double value, int decimals);

// `value` rounded to `decimals` places, for a JSON result: the writer prints a double in its
// shortest exact form, so 12.5 stays "12.5" and a rate keeps three decimals, not seventeen digits.
// Values too large to scale and non-finite ones (written as null) pass through.
double round_to(double value, int decimals);

}  // namespace bypass::bench
