// `bypass-bench compare a.json b.json ...`: result files side by side, one column per case, with
// ratios against a baseline column, and optionally an SVG plot of their latency CDFs and rates.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "tools/bypass-bench/bench_result_file.h"

namespace bypass::bench {

struct CompareOptions {
  std::vector<std::string> files;
  size_t baseline = 1;    // 1-based column
  std::string plot_path;  // empty: no plot
};

// Flags after `compare`: FILE... [--baseline N] [--plot OUT.svg]. Throws config::ConfigError
// naming the flag on an unknown flag, a missing or malformed value, or no files.
CompareOptions parse_compare_flags(const std::vector<std::string>& args);

// One column of the comparison: a case and the label it goes by.
struct CompareColumn {
  std::string label;
  const ResultCase* result = nullptr;
};

// Every case of every file in order. A case's label is its name, or "FILE-STEM:name" when another
// case anywhere has the same name (and " #N" on top if that is still not unique).
std::vector<CompareColumn> compare_columns(const std::vector<ResultFile>& files);

// Prints the side-by-side table with ratio columns against column `baseline` (1-based).
void print_comparison(const std::vector<CompareColumn>& columns, size_t baseline, std::ostream& out);

// Loads the files, prints the table, writes the plot. Returns 0, or 2 after one error line on
// `err` for a bad file (missing, not JSON, wrong schema, missing field) or a bad --baseline, or 1
// when the plot cannot be written.
int run_compare(const CompareOptions& options, std::ostream& out, std::ostream& err);

const char* compare_usage();

}  // namespace bypass::bench
