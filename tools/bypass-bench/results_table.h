// Plain-text result tables (aligned columns) and a tiny JSON writer for machine-readable results.
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

// Builds one JSON object; values are numbers, strings or pre-rendered JSON.
class JsonObject {
 public:
  JsonObject& number(const std::string& key, double value);
  JsonObject& integer(const std::string& key, int64_t value);
  JsonObject& string(const std::string& key, const std::string& value);
  JsonObject& raw(const std::string& key, const std::string& json);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const std::string& k);
  std::string body_;
};

std::string json_quote(const std::string& text);

}  // namespace bypass::bench
