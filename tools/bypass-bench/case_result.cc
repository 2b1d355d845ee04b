#include "tools/bypass-bench/case_result.h"

#include <algorithm>

#include "tools/bypass-bench/results_table.h"

namespace bypass::bench {

namespace {

constexpr size_t kCdfPoints = 200;

double micros(uint64_t nanoseconds) { return static_cast<double>(nanoseconds) / 1000.0; }

std::string ratio_text(double value, double base) {
  return base > 0 ? format_fixed(value / base, 2) + "x" : "-";
}

}  // namespace

ResultCase CaseResult::to_result_case() const {
  ResultCase c;
  c.name = bench_case.name();
  c.transport = bench_case.transport;
  c.mode = mode_name(mode);
  c.message_size = bench_case.message_size;
  c.connections = static_cast<uint64_t>(connections);
  c.iodepth = static_cast<uint64_t>(bench_case.iodepth);
  c.messengers = messenger_per_thread ? "per-thread" : "shared";
  c.warmup_seconds = warmup_seconds;
  c.seconds = seconds;
  c.messages = messages;
  c.bytes = bytes;
  c.messages_per_second = messages_per_second();
  c.megabytes_per_second = megabytes_per_second();
  c.errors = errors;
  c.latency_us = {micros(latency_ns.percentile(50)), micros(latency_ns.percentile(90)),
                  micros(latency_ns.percentile(99)), micros(latency_ns.percentile(99.9)),
                  micros(latency_ns.max()), latency_ns.mean() / 1000.0, {}};
  for (const auto& [value, fraction] : latency_ns.cdf_points(kCdfPoints)) c.latency_us.cdf.emplace_back(value / 1000.0, fraction);
  c.samples = samples;
  c.client_cpu_seconds = client.process_cpu_seconds;
  c.client_worker_cpu_seconds = client.worker_cpu_seconds;
  c.server_cpu_seconds = server.process_cpu_seconds;
  c.server_worker_cpu_seconds = server.worker_cpu_seconds;
  c.counters_json = JsonObject().raw("client", client.counters_json()).raw("server", server.counters_json()).str();
  return c;
}

ResultFile make_result_file(const std::string& job, const std::string& started, const config::Config& conf,
                            std::vector<ResultCase> cases) {
  ResultFile file;
  file.job = job;
  file.started = started;
  fill_host_fields(file);
  for (const config::OptionSpec& spec : conf.registry().options()) file.config.emplace_back(spec.name, conf.to_string(spec.name));
  file.cases = std::move(cases);
  return file;
}

void print_case_table(const std::vector<ResultCase>& cases, std::ostream& out) {
  ResultsTable table({"case", "link", "msgs/s", "MB/s", "p50 us", "p99 us", "p99.9 us", "max us", "client CPU s",
                      "server CPU s", "errors"});
  for (const ResultCase& c : cases) {
    table.add_row({c.name, c.link_text(), format_fixed(c.messages_per_second, 0), format_fixed(c.megabytes_per_second, 1),
                   format_fixed(c.latency_us.p50, 1), format_fixed(c.latency_us.p99, 1), format_fixed(c.latency_us.p999, 1),
                   format_fixed(c.latency_us.max, 1), format_fixed(c.client_cpu_seconds, 2),
                   c.server_cpu_seconds ? format_fixed(*c.server_cpu_seconds, 2) : "-", std::to_string(c.errors)});
  }
  table.print(out);
}

void print_transport_comparison(const std::vector<ResultCase>& cases, std::ostream& out) {
  std::vector<std::string> transports;
  for (const ResultCase& c : cases)
    if (std::find(transports.begin(), transports.end(), c.transport) == transports.end()) transports.push_back(c.transport);
  if (transports.size() < 2) return;
  const std::string base = std::find(transports.begin(), transports.end(), "posix") != transports.end()
                               ? "posix" : transports.front();
  std::vector<std::string> headers = {"size", "depth"};
  for (const std::string& t : transports) {
    headers.push_back(t + " msgs/s");
    headers.push_back(t + " p50 us");
  }
  for (const std::string& t : transports) {
    if (t == base) continue;
    headers.push_back(t + "/" + base + " msgs/s");
    headers.push_back(t + "/" + base + " p50");
  }
  ResultsTable table(headers);
  std::vector<std::pair<uint64_t, uint64_t>> keys;
  for (const ResultCase& c : cases) {
    const std::pair<uint64_t, uint64_t> key{c.message_size, c.iodepth};
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  auto find = [&](const std::string& transport, const std::pair<uint64_t, uint64_t>& key) -> const ResultCase* {
    for (const ResultCase& c : cases)
      if (c.transport == transport && c.message_size == key.first && c.iodepth == key.second) return &c;
    return nullptr;
  };
  for (const auto& key : keys) {
    std::vector<std::string> row = {config::format_size(key.first), std::to_string(key.second)};
    for (const std::string& t : transports) {
      const ResultCase* c = find(t, key);
      row.push_back(c ? format_fixed(c->messages_per_second, 0) : "-");
      row.push_back(c ? format_fixed(c->latency_us.p50, 1) : "-");
    }
    const ResultCase* b = find(base, key);
    for (const std::string& t : transports) {
      if (t == base) continue;
      const ResultCase* c = find(t, key);
      row.push_back(c && b ? ratio_text(c->messages_per_second, b->messages_per_second) : "-");
      row.push_back(c && b ? ratio_text(c->latency_us.p50, b->latency_us.p50) : "-");
    }
    table.add_row(row);
  }
  out << "\ntransports compared (ratios vs " << base << "), each over its link (payload copies per round trip):\n";
  for (const std::string& t : transports) {
    const auto first = std::find_if(cases.begin(), cases.end(), [&](const ResultCase& c) { return c.transport == t; });
    out << "  " << t << ": " << first->link_text() << "\n";
  }
  table.print(out);
}

}  // namespace bypass::bench
