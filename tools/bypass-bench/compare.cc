#include "tools/bypass-bench/compare.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>

#include "config/config.h"
#include "tools/bypass-bench/compare_plot.h"
#include "tools/bypass-bench/results_table.h"
#include "tools/bypass-bench/subcommand_flags.h"

namespace bypass::bench {

CompareOptions parse_compare_flags(const std::vector<std::string>& args) {
  CompareOptions options;
  const auto known = [](const std::string& flag) { return flag == "--baseline" || flag == "--plot"; };
  for (const auto& [flag, value] :
       split_valued_flags(args, "compare", known, "bypass-bench compare --help", &options.files)) {
    if (flag == "--baseline") {
      char* end = nullptr;
      errno = 0;
      const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || value[0] == '-' || *end != '\0' || errno == ERANGE || n == 0) {
        throw config::ConfigError("compare: --baseline: '" + value + "' is not a column number (1 is the first)");
      }
      options.baseline = static_cast<size_t>(n);
    } else {
      if (value.empty()) throw config::ConfigError("compare: --plot needs a file name");
      options.plot_path = value;
    }
  }
  if (options.files.empty()) throw config::ConfigError("compare: no result files given (see bypass-bench compare --help)");
  return options;
}

std::vector<CompareColumn> compare_columns(const std::vector<ResultFile>& files) {
  std::map<std::string, int> name_uses;
  for (const ResultFile& f : files)
    for (const ResultCase& c : f.cases) ++name_uses[c.name];
  std::vector<CompareColumn> columns;
  std::map<std::string, int> label_uses;
  for (const ResultFile& f : files) {
    const std::string stem = std::filesystem::path(f.path).stem().string();
    for (const ResultCase& c : f.cases) {
      std::string label = name_uses[c.name] > 1 ? stem + ":" + c.name : c.name;
      columns.push_back({label, &c});
      ++label_uses[label];
    }
  }
  // The same file given twice, or one name twice in one file: number the repeats.
  std::map<std::string, int> seen;
  for (CompareColumn& column : columns) {
    if (label_uses[column.label] > 1) column.label += " #" + std::to_string(++seen[column.label]);
  }
  return columns;
}

namespace {

// One measured row of the table: how to read it from a case, how to print it, and whether the
// ratio against the baseline means anything for it.
struct MetricRow {
  std::string label;
  std::function<std::optional<double>(const ResultCase&)> value;  // nullopt: not measurable
  int decimals;
  bool is_cpu = false;  // marked when a case has no server CPU to add
};

// Microseconds of client plus server process CPU per message; nullopt without messages.
std::optional<double> cpu_per_message_us(const ResultCase& c) {
  if (c.messages == 0) return std::nullopt;
  const double seconds = c.client_cpu_seconds + c.server_cpu_seconds.value_or(0.0);
  return seconds * 1e6 / static_cast<double>(c.messages);
}

std::string ratio_cell(std::optional<double> value, std::optional<double> baseline) {
  if (!value || !baseline) return "-";
  if (*baseline == 0) return *value == 0 ? "=" : "-";
  return format_fixed(*value / *baseline, 2) + "x";
}

// Labels left-aligned: the table right-aligns every cell, so pad them to one width.
std::vector<std::string> padded(std::vector<std::string> labels) {
  size_t width = 0;
  for (const auto& l : labels) width = std::max(width, l.size());
  for (auto& l : labels) l.resize(width, ' ');
  return labels;
}

}  // namespace

void print_comparison(const std::vector<CompareColumn>& columns, size_t baseline, std::ostream& out) {
  const ResultCase& base = *columns.at(baseline - 1).result;
  const std::vector<MetricRow> metrics = {
      {"messages/s", [](const ResultCase& c) { return c.messages_per_second; }, 1},
      {"MB/s", [](const ResultCase& c) { return c.megabytes_per_second; }, 2},
      {"p50 latency (us)", [](const ResultCase& c) { return c.latency_us.p50; }, 1},
      {"p90 latency (us)", [](const ResultCase& c) { return c.latency_us.p90; }, 1},
      {"p99 latency (us)", [](const ResultCase& c) { return c.latency_us.p99; }, 1},
      {"p99.9 latency (us)", [](const ResultCase& c) { return c.latency_us.p999; }, 1},
      {"max latency (us)", [](const ResultCase& c) { return c.latency_us.max; }, 1},
      {"CPU per message (us)", cpu_per_message_us, 2, true},
      {"errors", [](const ResultCase& c) { return static_cast<double>(c.errors); }, 0},
  };
  // Context rows first (what each case ran), then the measured rows.
  std::vector<std::string> labels = {"metric", "transport", "link (copies per round trip)", "mode",
                                     "message size (B)", "connections x iodepth", "measured seconds"};
  for (const MetricRow& m : metrics) labels.push_back(m.label);
  labels = padded(labels);

  std::vector<std::string> headers = {labels[0]};
  for (size_t i = 0; i < columns.size(); ++i) {
    headers.push_back(columns[i].label + (i + 1 == baseline ? " [baseline]" : ""));
    if (i + 1 != baseline) headers.push_back("x of baseline");
  }
  ResultsTable table(headers);
  auto context_row = [&](size_t label, const std::function<std::string(const ResultCase&)>& text) {
    std::vector<std::string> row = {labels[label]};
    for (size_t i = 0; i < columns.size(); ++i) {
      row.push_back(text(*columns[i].result));
      if (i + 1 != baseline) row.emplace_back();
    }
    table.add_row(std::move(row));
  };
  context_row(1, [](const ResultCase& c) { return c.transport; });
  context_row(2, [](const ResultCase& c) { return c.link_text(); });
  context_row(3, [](const ResultCase& c) { return c.mode; });
  context_row(4, [](const ResultCase& c) { return std::to_string(c.message_size); });
  context_row(5, [](const ResultCase& c) { return std::to_string(c.connections) + " x " + std::to_string(c.iodepth); });
  context_row(6, [](const ResultCase& c) { return format_fixed(c.seconds, 1); });

  bool client_cpu_only = false;
  for (size_t m = 0; m < metrics.size(); ++m) {
    std::vector<std::string> row = {labels[7 + m]};
    const std::optional<double> base_value = metrics[m].value(base);
    for (size_t i = 0; i < columns.size(); ++i) {
      const ResultCase& c = *columns[i].result;
      const std::optional<double> value = metrics[m].value(c);
      std::string cell = value ? format_fixed(*value, metrics[m].decimals) : "-";
      if (value && metrics[m].is_cpu && !c.server_cpu_seconds) {
        cell += "*";
        client_cpu_only = true;
      }
      row.push_back(cell);
      if (i + 1 != baseline) row.push_back(ratio_cell(value, base_value));
    }
    table.add_row(std::move(row));
  }

  out << "baseline: column " << baseline << " (" << columns[baseline - 1].label
      << "); \"x of baseline\" = the column's value / the baseline's:\n"
      << "above 1 is better for messages/s and MB/s, below 1 is better for latency, CPU and errors\n\n";
  table.print(out);
  if (client_cpu_only) out << "\n* client CPU only: the file has no server CPU (the server was not ours to measure)\n";
}

int run_compare(const CompareOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<ResultFile> files;
  try {
    for (const std::string& path : options.files) files.push_back(load_result_file(path));
  } catch (const ResultFileError& e) {
    err << "bypass-bench: compare: " << e.what() << "\n";
    return 2;
  }
  const std::vector<CompareColumn> columns = compare_columns(files);
  if (options.baseline > columns.size()) {
    err << "bypass-bench: compare: --baseline " << options.baseline << " is past the last column (there are "
        << columns.size() << " cases)\n";
    return 2;
  }
  // Where each file came from: the same job on another host or kernel is another experiment.
  for (const ResultFile& f : files) {
    out << f.path << ": " << f.cases.size() << (f.cases.size() == 1 ? " case" : " cases");
    if (!f.job.empty()) out << ", job " << f.job;
    if (!f.started.empty()) out << ", started " << f.started;
    if (!f.hostname.empty()) out << " on " << f.hostname << " (" << f.cpus << " CPUs, kernel " << f.kernel << ")";
    out << "\n";
  }
  out << "\n";
  print_comparison(columns, options.baseline, out);
  if (!options.plot_path.empty()) {
    std::string error;
    if (!write_comparison_plot(columns, options.plot_path, &error)) {
      err << "bypass-bench: compare: --plot: " << error << "\n";
      return 1;
    }
    out << "\nplot written to " << options.plot_path << "\n";
  }
  return 0;
}

const char* compare_usage() {
  return "usage: bypass-bench compare FILE.json... [--baseline N] [--plot OUT.svg]\n"
         "\n"
         "Reads result files (the --output of run, client and ceph-mon-version; schema\n"
         "\"bypass-bench/1\") and prints one column per case across all files: messages/s, MB/s,\n"
         "latency p50/p90/p99/p99.9/max, CPU per message (client + server process CPU) and errors.\n"
         "Next to every column but the baseline, \"x of baseline\" gives its value divided by the\n"
         "baseline's. A case is labelled by its name, or FILE-STEM:name when the name repeats.\n"
         "  --baseline N     the column the ratios compare against (default 1, the first case)\n"
         "  --plot OUT.svg   also write an SVG: latency CDFs (log-scale microseconds) and\n"
         "                   messages/s over time, one curve per case\n"
         "Exits 2 with one error line naming the file and field when a file is missing, not JSON,\n"
         "of another schema or lacks a field.\n";
}

}  // namespace bypass::bench
