#include "tools/bypass-bench/case_result.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tools/bypass-bench/results_table.h"

namespace bypass::bench {

namespace {

constexpr size_t kCdfPoints = 200;

double micros(uint64_t nanoseconds) { return static_cast<double>(nanoseconds) / 1000.0; }

// Enough digits for fractions such as 0.99995 (format_fixed keeps three decimals).
std::string precise(double value) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.7g", value);
  return buf;
}

std::string latency_json(const LatencyHistogram& h) {
  std::string cdf = "[";
  bool first = true;
  for (const auto& [value, fraction] : h.cdf_points(kCdfPoints)) {
    cdf += (first ? "[" : ",[") + format_fixed(value / 1000.0, 3) + "," + precise(fraction) + "]";
    first = false;
  }
  return JsonObject()
      .number("p50", micros(h.percentile(50)))
      .number("p90", micros(h.percentile(90)))
      .number("p99", micros(h.percentile(99)))
      .number("p99.9", micros(h.percentile(99.9)))
      .number("max", micros(h.max()))
      .number("mean", h.mean() / 1000.0)
      .raw("cdf", cdf + "]")
      .str();
}

std::string samples_json(const std::vector<Sample>& samples) {
  std::string out = "[";
  for (size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    out += (i ? "," : "") + JsonObject()
                                .number("t", s.t)
                                .number("messages_per_second", s.messages_per_second)
                                .number("megabytes_per_second", s.megabytes_per_second)
                                .number("p50_us", s.p50_us)
                                .number("p99_us", s.p99_us)
                                .str();
  }
  return out + "]";
}

std::string host_json() {
  char hostname[256] = {};
  gethostname(hostname, sizeof(hostname) - 1);
  utsname uts{};
  uname(&uts);
  return JsonObject()
      .string("hostname", hostname)
      .integer("cpus", static_cast<int64_t>(std::thread::hardware_concurrency()))
      .string("kernel", uts.release)
      .str();
}

std::string ratio_text(double value, double base) {
  return base > 0 ? format_fixed(value / base, 2) + "x" : "-";
}

}  // namespace

std::string CaseResult::to_json() const {
  const std::string totals = JsonObject()
                                 .integer("messages", static_cast<int64_t>(messages))
                                 .integer("bytes", static_cast<int64_t>(bytes))
                                 .number("messages_per_second", messages_per_second())
                                 .number("megabytes_per_second", megabytes_per_second())
                                 .integer("errors", static_cast<int64_t>(errors))
                                 .str();
  const std::string cpu = JsonObject().raw("client", client.cpu_json()).raw("server", server.cpu_json()).str();
  const std::string counters =
      JsonObject().raw("client", client.counters_json()).raw("server", server.counters_json()).str();
  return JsonObject()
      .string("name", bench_case.name())
      .string("transport", bench_case.transport)
      .string("mode", mode_name(mode))
      .integer("message_size", static_cast<int64_t>(bench_case.message_size))
      .integer("connections", connections)
      .integer("iodepth", bench_case.iodepth)
      .string("messengers", messenger_per_thread ? "per-thread" : "shared")
      .number("warmup_seconds", warmup_seconds)
      .number("seconds", seconds)
      .raw("totals", totals)
      .raw("latency_us", latency_json(latency_ns))
      .raw("samples", samples_json(samples))
      .raw("cpu", cpu)
      .raw("counters", counters)
      .str();
}

CaseSummary CaseSummary::of(const CaseResult& r) {
  CaseSummary s;
  s.name = r.bench_case.name();
  s.transport = r.bench_case.transport;
  s.message_size = r.bench_case.message_size;
  s.iodepth = r.bench_case.iodepth;
  s.messages_per_second = r.messages_per_second();
  s.megabytes_per_second = r.megabytes_per_second();
  s.p50_us = micros(r.latency_ns.percentile(50));
  s.p99_us = micros(r.latency_ns.percentile(99));
  s.p999_us = micros(r.latency_ns.percentile(99.9));
  s.max_us = micros(r.latency_ns.max());
  s.client_cpu_seconds = r.client.process_cpu_seconds;
  s.server_cpu_seconds = r.server.process_cpu_seconds;
  s.errors = r.errors;
  return s;
}

std::string CaseSummary::line() const {
  std::ostringstream out;
  out << name << '\t' << transport << '\t' << message_size << '\t' << iodepth << '\t'
      << precise(messages_per_second) << '\t' << precise(megabytes_per_second) << '\t' << precise(p50_us)
      << '\t' << precise(p99_us) << '\t' << precise(p999_us) << '\t' << precise(max_us) << '\t'
      << precise(client_cpu_seconds) << '\t' << precise(server_cpu_seconds) << '\t' << errors;
  return out.str();
}

CaseSummary CaseSummary::parse(const std::string& line) {
  std::vector<std::string> fields;
  std::istringstream in(line);
  for (std::string field; std::getline(in, field, '\t');) fields.push_back(field);
  if (fields.size() != 13) throw std::runtime_error("case summary '" + line + "': expected 13 fields");
  CaseSummary s;
  try {
    s.name = fields[0];
    s.transport = fields[1];
    s.message_size = std::stoull(fields[2]);
    s.iodepth = std::stoi(fields[3]);
    double* numbers[] = {&s.messages_per_second, &s.megabytes_per_second, &s.p50_us, &s.p99_us,
                         &s.p999_us, &s.max_us, &s.client_cpu_seconds, &s.server_cpu_seconds};
    for (size_t i = 0; i < 8; ++i) *numbers[i] = std::stod(fields[4 + i]);
    s.errors = std::stoull(fields[12]);
  } catch (const std::logic_error&) {
    throw std::runtime_error("case summary '" + line + "': a field is not a number");
  }
  return s;
}

std::string result_document(const std::string& job, const config::Config& conf,
                            const std::string& started, const std::vector<std::string>& cases_json) {
  JsonObject config_echo;
  for (const config::OptionSpec& spec : conf.registry().options())
    config_echo.string(spec.name, conf.to_string(spec.name));
  std::string cases = "[";
  for (size_t i = 0; i < cases_json.size(); ++i) cases += (i ? ",\n" : "\n") + cases_json[i];
  return JsonObject()
             .string("schema", "bypass-bench/1")
             .string("job", job)
             .string("started", started)
             .raw("host", host_json())
             .raw("config", config_echo.str())
             .raw("cases", cases + "\n]")
             .str() +
         "\n";
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

void print_case_table(const std::vector<CaseSummary>& cases, std::ostream& out) {
  ResultsTable table({"case", "msgs/s", "MB/s", "p50 us", "p99 us", "p99.9 us", "max us", "client CPU s",
                      "server CPU s", "errors"});
  for (const CaseSummary& c : cases) {
    table.add_row({c.name, format_fixed(c.messages_per_second, 0), format_fixed(c.megabytes_per_second, 1),
                   format_fixed(c.p50_us, 1), format_fixed(c.p99_us, 1), format_fixed(c.p999_us, 1),
                   format_fixed(c.max_us, 1), format_fixed(c.client_cpu_seconds, 2),
                   format_fixed(c.server_cpu_seconds, 2), std::to_string(c.errors)});
  }
  table.print(out);
}

void print_transport_comparison(const std::vector<CaseSummary>& cases, std::ostream& out) {
  std::vector<std::string> transports;
  for (const CaseSummary& c : cases)
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
  std::vector<std::pair<uint64_t, int>> keys;
  for (const CaseSummary& c : cases) {
    const std::pair<uint64_t, int> key{c.message_size, c.iodepth};
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  auto find = [&](const std::string& transport, const std::pair<uint64_t, int>& key) -> const CaseSummary* {
    for (const CaseSummary& c : cases)
      if (c.transport == transport && c.message_size == key.first && c.iodepth == key.second) return &c;
    return nullptr;
  };
  for (const auto& key : keys) {
    std::vector<std::string> row = {config::format_size(key.first), std::to_string(key.second)};
    for (const std::string& t : transports) {
      const CaseSummary* c = find(t, key);
      row.push_back(c ? format_fixed(c->messages_per_second, 0) : "-");
      row.push_back(c ? format_fixed(c->p50_us, 1) : "-");
    }
    const CaseSummary* b = find(base, key);
    for (const std::string& t : transports) {
      if (t == base) continue;
      const CaseSummary* c = find(t, key);
      row.push_back(c && b ? ratio_text(c->messages_per_second, b->messages_per_second) : "-");
      row.push_back(c && b ? ratio_text(c->p50_us, b->p50_us) : "-");
    }
    table.add_row(row);
  }
  out << "\ntransports compared (ratios vs " << base << "):\n";
  table.print(out);
}

}  // namespace bypass::bench
