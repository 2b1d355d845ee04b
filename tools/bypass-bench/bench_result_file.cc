#include "tools/bypass-bench/bench_result_file.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "config/json_reader.h"
#include "tools/bypass-bench/results_table.h"

namespace bypass::bench {

namespace {

using config::JsonValue;

// A value in the document together with its path ("cases[1].latency_us.p99"), so every check can
// say which field of which file is wrong.
class Field {
 public:
  Field(const JsonValue& value, std::string path, const std::string& file)
      : value_(value), path_(std::move(path)), file_(file) {}

  [[noreturn]] void fail(const std::string& problem) const {
    throw ResultFileError(file_ + ": " + (path_.empty() ? "top level" : path_) + ": " + problem);
  }
  const std::string& path() const { return path_; }
  const JsonValue& json() const { return value_; }

  bool has(const std::string& key) const {
    const JsonValue* v = value_.is_object() ? value_.find(key) : nullptr;
    return v != nullptr && !v->is_null();
  }
  Field member(const std::string& key) const {
    if (!value_.is_object()) fail("is " + value_.type_name() + ", expected an object");
    const JsonValue* v = value_.find(key);
    const std::string child = path_.empty() ? key : path_ + "." + key;
    if (v == nullptr) Field(value_, child, file_).fail("missing");
    return Field(*v, child, file_);
  }
  std::vector<Field> items() const {
    if (!value_.is_array()) fail("is " + value_.type_name() + ", expected an array");
    std::vector<Field> out;
    for (size_t i = 0; i < value_.items.size(); ++i)
      out.emplace_back(value_.items[i], path_ + "[" + std::to_string(i) + "]", file_);
    return out;
  }
  std::string text() const {
    if (!value_.is_string()) fail("is " + value_.type_name() + ", expected a string");
    return value_.text;
  }
  std::string nonempty_text() const {
    std::string t = text();
    if (t.empty()) fail("is empty");
    return t;
  }
  // A finite number >= 0 (every measured quantity in the file is one).
  double amount() const {
    if (!value_.is_number()) fail("is " + value_.type_name() + ", expected a number");
    const double v = value_.number();
    if (!std::isfinite(v) || v < 0) fail("'" + value_.text + "' is not a finite number >= 0");
    return v;
  }
  uint64_t count() const {
    if (!value_.is_number()) fail("is " + value_.type_name() + ", expected a non-negative integer");
    try {
      return value_.count();
    } catch (const config::JsonError& e) {
      fail(e.what());
    }
  }
  std::string one_of(std::initializer_list<const char*> allowed) const {
    const std::string t = text();
    std::string list;
    for (const char* a : allowed) {
      if (t == a) return t;
      list += std::string(list.empty() ? "" : ", ") + a;
    }
    fail("'" + t + "' is not one of " + list);
  }

 private:
  const JsonValue& value_;
  std::string path_;
  const std::string& file_;
};

std::vector<std::pair<double, double>> read_cdf(const Field& cdf) {
  std::vector<std::pair<double, double>> points;
  for (const Field& point : cdf.items()) {
    const std::vector<Field> pair = point.items();
    if (pair.size() != 2) point.fail("has " + std::to_string(pair.size()) + " items, expected [latency_us, fraction]");
    const double value = pair[0].amount();
    const double fraction = pair[1].amount();
    if (fraction > 1.0) pair[1].fail("fraction " + pair[1].json().text + " is above 1");
    if (!points.empty() && (value < points.back().first || fraction < points.back().second))
      point.fail("is below the point before it (a CDF never decreases)");
    points.emplace_back(value, fraction);
  }
  // Rounding in the writer may leave the last fraction a hair under 1.
  if (!points.empty() && points.back().second < 1.0 - 1e-6)
    cdf.fail("ends at fraction " + std::to_string(points.back().second) + ", expected 1");
  return points;
}

std::vector<double> read_workers(const Field& side) {
  std::vector<double> workers;
  if (!side.has("workers")) return workers;
  for (const Field& w : side.member("workers").items()) workers.push_back(w.amount());
  return workers;
}

// `value` as JSON again (numbers as written), so a file read and written back keeps the parts
// compare does not interpret, such as "counters" (`run` merges its clients' files this way).
std::string json_text(const JsonValue& value) {
  switch (value.type) {
    case JsonValue::Type::Null: return "null";
    case JsonValue::Type::Bool: return value.boolean ? "true" : "false";
    case JsonValue::Type::Number: return value.text;
    case JsonValue::Type::String: return json_quote(value.text);
    case JsonValue::Type::Array: {
      std::string out = "[";
      for (size_t i = 0; i < value.items.size(); ++i) out += (i ? "," : "") + json_text(value.items[i]);
      return out + "]";
    }
    case JsonValue::Type::Object: {
      std::string out = "{";
      for (size_t i = 0; i < value.members.size(); ++i)
        out += (i ? "," : "") + json_quote(value.members[i].first) + ":" + json_text(value.members[i].second);
      return out + "}";
    }
  }
  return "null";
}

ResultCase read_case(const Field& c) {
  ResultCase out;
  out.name = c.member("name").nonempty_text();
  out.transport = c.member("transport").one_of({"posix", "dpdk", "rdma"});
  out.mode = c.member("mode").one_of({"reqrep", "stream"});
  out.message_size = c.member("message_size").count();
  out.connections = c.member("connections").count();
  out.iodepth = c.member("iodepth").count();
  if (c.has("messengers")) out.messengers = c.member("messengers").one_of({"shared", "per-thread"});
  if (c.has("link")) {
    const Field link = c.member("link");
    out.link = link.member("name").nonempty_text();
    if (link.has("copies_per_round_trip")) out.link_copies_per_round_trip = link.member("copies_per_round_trip").count();
  }
  if (c.has("warmup_seconds")) out.warmup_seconds = c.member("warmup_seconds").amount();
  out.seconds = c.member("seconds").amount();

  const Field totals = c.member("totals");
  out.messages = totals.member("messages").count();
  out.bytes = totals.member("bytes").count();
  out.messages_per_second = totals.member("messages_per_second").amount();
  out.megabytes_per_second = totals.member("megabytes_per_second").amount();
  out.errors = totals.member("errors").count();

  const Field latency = c.member("latency_us");
  out.latency_us.p50 = latency.member("p50").amount();
  out.latency_us.p90 = latency.member("p90").amount();
  out.latency_us.p99 = latency.member("p99").amount();
  out.latency_us.p999 = latency.member("p99.9").amount();
  out.latency_us.max = latency.member("max").amount();
  if (latency.has("mean")) out.latency_us.mean = latency.member("mean").amount();
  out.latency_us.cdf = read_cdf(latency.member("cdf"));

  for (const Field& s : c.member("samples").items()) {
    ResultSample sample;
    sample.t = s.member("t").amount();
    sample.messages_per_second = s.member("messages_per_second").amount();
    if (s.has("megabytes_per_second")) sample.megabytes_per_second = s.member("megabytes_per_second").amount();
    if (s.has("p50_us")) sample.p50_us = s.member("p50_us").amount();
    if (s.has("p99_us")) sample.p99_us = s.member("p99_us").amount();
    out.samples.push_back(sample);
  }

  const Field cpu = c.member("cpu");
  const Field client = cpu.member("client");
  out.client_cpu_seconds = client.member("process_seconds").amount();
  out.client_worker_cpu_seconds = read_workers(client);
  if (cpu.has("server")) {
    const Field server = cpu.member("server");
    out.server_cpu_seconds = server.member("process_seconds").amount();
    out.server_worker_cpu_seconds = read_workers(server);
  }
  if (c.has("counters")) out.counters_json = json_text(c.member("counters").json());
  return out;
}

std::string json_numbers(const std::vector<double>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + format_fixed(values[i], 6);
  return out + "]";
}

std::string cpu_side_json(double process_seconds, const std::vector<double>& workers) {
  // Microsecond precision: divided by the message count, milliseconds would skew CPU per message.
  return JsonObject().raw("process_seconds", format_fixed(process_seconds, 6)).raw("workers", json_numbers(workers)).str();
}

std::string case_json(const ResultCase& c) {
  std::string cdf = "[";
  for (size_t i = 0; i < c.latency_us.cdf.size(); ++i) {
    // Six decimals: a fraction near 1 must keep its tail (0.999999 vs 1).
    cdf += (i ? ",[" : "[") + format_fixed(c.latency_us.cdf[i].first, 3) + "," +
           format_fixed(c.latency_us.cdf[i].second, 6) + "]";
  }
  cdf += "]";
  std::string samples = "[";
  for (size_t i = 0; i < c.samples.size(); ++i) {
    const ResultSample& s = c.samples[i];
    samples += (i ? "," : "") + JsonObject()
                                    .number("t", s.t)
                                    .number("messages_per_second", s.messages_per_second)
                                    .number("megabytes_per_second", s.megabytes_per_second)
                                    .number("p50_us", s.p50_us)
                                    .number("p99_us", s.p99_us)
                                    .str();
  }
  samples += "]";
  JsonObject cpu;
  cpu.raw("client", cpu_side_json(c.client_cpu_seconds, c.client_worker_cpu_seconds));
  if (c.server_cpu_seconds) cpu.raw("server", cpu_side_json(*c.server_cpu_seconds, c.server_worker_cpu_seconds));
  JsonObject out;
  out.string("name", c.name)
      .string("transport", c.transport)
      .string("mode", c.mode)
      .integer("message_size", static_cast<int64_t>(c.message_size))
      .integer("connections", static_cast<int64_t>(c.connections))
      .integer("iodepth", static_cast<int64_t>(c.iodepth));
  if (!c.messengers.empty()) out.string("messengers", c.messengers);
  if (!c.link.empty()) {
    JsonObject link;
    link.string("name", c.link);
    link.raw("copies_per_round_trip", c.link_copies_per_round_trip
                                          ? std::to_string(*c.link_copies_per_round_trip) : std::string("null"));
    out.raw("link", link.str());
  }
  out.number("warmup_seconds", c.warmup_seconds)
      .number("seconds", c.seconds)
      .raw("totals", JsonObject()
                         .integer("messages", static_cast<int64_t>(c.messages))
                         .integer("bytes", static_cast<int64_t>(c.bytes))
                         .number("messages_per_second", c.messages_per_second)
                         .number("megabytes_per_second", c.megabytes_per_second)
                         .integer("errors", static_cast<int64_t>(c.errors))
                         .str())
      .raw("latency_us", JsonObject()
                             .number("p50", c.latency_us.p50)
                             .number("p90", c.latency_us.p90)
                             .number("p99", c.latency_us.p99)
                             .number("p99.9", c.latency_us.p999)
                             .number("max", c.latency_us.max)
                             .number("mean", c.latency_us.mean)
                             .raw("cdf", cdf)
                             .str())
      .raw("samples", samples)
      .raw("cpu", cpu.str());
  if (!c.counters_json.empty()) out.raw("counters", c.counters_json);
  return out.str();
}

}  // namespace

std::string ResultCase::link_text() const {
  if (link.empty()) return "-";
  return link_copies_per_round_trip ? link + ", " + std::to_string(*link_copies_per_round_trip) + " copies" : link;
}

ResultFile parse_result_file(const std::string& text, const std::string& path) {
  JsonValue doc;
  try {
    doc = config::parse_json(text);
  } catch (const config::JsonError& e) {
    throw ResultFileError(path + ": not valid JSON: " + e.what());
  }
  const Field top(doc, "", path);
  const std::string schema = top.member("schema").text();
  if (schema != kResultSchema)
    top.member("schema").fail("'" + schema + "' is not '" + kResultSchema + "', the format this bypass-bench reads");
  ResultFile file;
  file.path = path;
  if (top.has("job")) file.job = top.member("job").text();
  if (top.has("started")) file.started = top.member("started").text();
  if (top.has("host")) {
    const Field host = top.member("host");
    if (host.has("hostname")) file.hostname = host.member("hostname").text();
    if (host.has("cpus")) file.cpus = host.member("cpus").count();
    if (host.has("kernel")) file.kernel = host.member("kernel").text();
  }
  if (top.has("config")) {
    const Field conf = top.member("config");
    if (!conf.json().is_object()) conf.fail("is " + conf.json().type_name() + ", expected an object");
    for (const auto& [key, value] : conf.json().members) {
      if (!value.is_string()) conf.member(key).fail("is " + value.type_name() + ", expected a string");
      file.config.emplace_back(key, value.text);
    }
  }
  const std::vector<Field> cases = top.member("cases").items();
  if (cases.empty()) top.member("cases").fail("is empty: the file has no results");
  for (const Field& c : cases) file.cases.push_back(read_case(c));
  return file;
}

ResultFile load_result_file(const std::string& path) {
  std::error_code ec;
  // An ifstream opens a directory and then reads nothing, which would pass for empty JSON.
  if (std::filesystem::is_directory(path, ec)) throw ResultFileError(path + ": cannot read: it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ResultFileError(path + ": cannot read: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ResultFileError(path + ": cannot read: " + std::strerror(errno));
  return parse_result_file(text.str(), path);
}

std::string result_file_json(const ResultFile& file) {
  std::string config = "{";
  for (size_t i = 0; i < file.config.size(); ++i)
    config += (i ? "," : "") + json_quote(file.config[i].first) + ":" + json_quote(file.config[i].second);
  config += "}";
  std::string cases = "[";
  for (size_t i = 0; i < file.cases.size(); ++i) cases += (i ? ",\n" : "\n") + case_json(file.cases[i]);
  cases += "\n]";
  return JsonObject()
             .string("schema", kResultSchema)
             .string("job", file.job)
             .string("started", file.started)
             .raw("host", JsonObject()
                              .string("hostname", file.hostname)
                              .integer("cpus", static_cast<int64_t>(file.cpus))
                              .string("kernel", file.kernel)
                              .str())
             .raw("config", config)
             .raw("cases", cases)
             .str() +
         "\n";
}

std::string iso8601_utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

void fill_host_fields(ResultFile& file) {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) file.hostname = name;
  file.cpus = std::thread::hardware_concurrency();
  struct utsname uts {};
  if (::uname(&uts) == 0) file.kernel = uts.release;
}

}  // namespace bypass::bench
