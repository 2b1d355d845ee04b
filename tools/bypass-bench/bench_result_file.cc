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

#include <nlohmann/json.hpp>

#include "base/json.h"
#include "tools/bypass-bench/results_table.h"

namespace bypass::bench {

namespace {

using JsonValue = nlohmann::ordered_json;  // members in document order, as the file lists them

// Nesting deeper than this is refused, so a hostile file cannot exhaust the stack of whatever
// walks the document afterwards (nlohmann-json parses without recursion, but dumps with it).
constexpr int kMaxDepth = 64;

// "an object", "an array", "a string", "a number", "a boolean" or "null", for "is X, expected Y".
std::string type_name(const JsonValue& value) {
  switch (value.type()) {
    case JsonValue::value_t::null: return "null";
    case JsonValue::value_t::object: return "an object";
    case JsonValue::value_t::array: return "an array";
    case JsonValue::value_t::string: return "a string";
    case JsonValue::value_t::boolean: return "a boolean";
    default: return "a number";
  }
}

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
    if (!value_.is_object()) return false;
    const auto it = value_.find(key);
    return it != value_.end() && !it->is_null();
  }
  Field member(const std::string& key) const {
    if (!value_.is_object()) fail("is " + type_name(value_) + ", expected an object");
    const auto it = value_.find(key);
    const std::string child = path_.empty() ? key : path_ + "." + key;
    if (it == value_.end()) Field(value_, child, file_).fail("missing");
    return Field(*it, child, file_);
  }
  std::vector<Field> items() const {
    if (!value_.is_array()) fail("is " + type_name(value_) + ", expected an array");
    std::vector<Field> out;
    for (size_t i = 0; i < value_.size(); ++i)
      out.emplace_back(value_[i], path_ + "[" + std::to_string(i) + "]", file_);
    return out;
  }
  std::string text() const {
    if (!value_.is_string()) fail("is " + type_name(value_) + ", expected a string");
    return value_.get<std::string>();
  }
  std::string nonempty_text() const {
    std::string t = text();
    if (t.empty()) fail("is empty");
    return t;
  }
  // A finite number >= 0 (every measured quantity in the file is one).
  double amount() const {
    if (!value_.is_number()) fail("is " + type_name(value_) + ", expected a number");
    const double v = value_.get<double>();
    if (!std::isfinite(v) || v < 0) fail("'" + value_.dump() + "' is not a finite number >= 0");
    return v;
  }
  uint64_t count() const {
    if (!value_.is_number()) fail("is " + type_name(value_) + ", expected a non-negative integer");
    // The parser keeps an integer that fits in 64 bits as one; anything else is a float.
    if (!value_.is_number_unsigned()) fail("'" + value_.dump() + "' is not a non-negative integer");
    return value_.get<uint64_t>();
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

// `text` as one JSON document (RFC 8259, strictly: no trailing commas, comments, nan); throws
// ResultFileError "PATH: not valid JSON: parse error at line L, column C: what".
JsonValue parse_document(const std::string& text, const std::string& path) {
  const auto refuse_deep = [&](int depth, JsonValue::parse_event_t, JsonValue&) {
    if (depth > kMaxDepth)
      throw ResultFileError(path + ": not valid JSON: nested more than " + std::to_string(kMaxDepth) + " levels deep");
    return true;
  };
  try {
    return JsonValue::parse(text, refuse_deep);
  } catch (const JsonValue::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ...": the id is noise here.
    std::string what = e.what();
    const size_t id_end = what.find("] ");
    if (what.rfind("[json.exception.", 0) == 0 && id_end != std::string::npos) what.erase(0, id_end + 2);
    throw ResultFileError(path + ": not valid JSON: " + what);
  }
}

std::vector<std::pair<double, double>> read_cdf(const Field& cdf) {
  std::vector<std::pair<double, double>> points;
  for (const Field& point : cdf.items()) {
    const std::vector<Field> pair = point.items();
    if (pair.size() != 2) point.fail("has " + std::to_string(pair.size()) + " items, expected [latency_us, fraction]");
    const double value = pair[0].amount();
    const double fraction = pair[1].amount();
    if (fraction > 1.0) pair[1].fail("fraction " + pair[1].json().dump() + " is above 1");
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

ResultCase read_case(const Field& c) {
  ResultCase out;
  out.name = c.member("name").nonempty_text();
  out.transport = c.member("transport").one_of({"posix", "dpdk", "rdma", "rsocket"});
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
  // Kept as compact JSON text: compare does not interpret it, and `run` merges its clients'
  // files by writing it back.
  if (c.has("counters")) out.counters_json = c.member("counters").json().dump();
  return out;
}

void write_numbers(Json& j, const std::vector<double>& values, int decimals) {
  j.begin_array();
  for (double v : values) j.value(round_to(v, decimals));
  j.end_array();
}

void write_cpu_side(Json& j, double process_seconds, const std::vector<double>& workers) {
  // Microsecond precision: divided by the message count, milliseconds would skew CPU per message.
  j.begin_object().field("process_seconds", round_to(process_seconds, 6)).key("workers");
  write_numbers(j, workers, 6);
  j.end_object();
}

void write_case(Json& j, const ResultCase& c) {
  j.begin_object()
      .field("name", c.name)
      .field("transport", c.transport)
      .field("mode", c.mode)
      .field("message_size", c.message_size)
      .field("connections", c.connections)
      .field("iodepth", c.iodepth);
  if (!c.messengers.empty()) j.field("messengers", c.messengers);
  if (!c.link.empty()) {
    j.key("link").begin_object().field("name", c.link).key("copies_per_round_trip");
    if (c.link_copies_per_round_trip) j.value(*c.link_copies_per_round_trip);
    else j.null();
    j.end_object();
  }
  j.field("warmup_seconds", round_to(c.warmup_seconds, 3)).field("seconds", round_to(c.seconds, 3));
  j.key("totals")
      .begin_object()
      .field("messages", c.messages)
      .field("bytes", c.bytes)
      .field("messages_per_second", round_to(c.messages_per_second, 3))
      .field("megabytes_per_second", round_to(c.megabytes_per_second, 3))
      .field("errors", c.errors)
      .end_object();
  j.key("latency_us")
      .begin_object()
      .field("p50", round_to(c.latency_us.p50, 3))
      .field("p90", round_to(c.latency_us.p90, 3))
      .field("p99", round_to(c.latency_us.p99, 3))
      .field("p99.9", round_to(c.latency_us.p999, 3))
      .field("max", round_to(c.latency_us.max, 3))
      .field("mean", round_to(c.latency_us.mean, 3))
      .key("cdf")
      .begin_array();
  // Six decimals for the fraction: a point near 1 must keep its tail (0.999999 vs 1).
  for (const auto& [value, fraction] : c.latency_us.cdf)
    j.begin_array().value(round_to(value, 3)).value(round_to(fraction, 6)).end_array();
  j.end_array().end_object();
  j.key("samples").begin_array();
  for (const ResultSample& s : c.samples) {
    j.begin_object()
        .field("t", round_to(s.t, 3))
        .field("messages_per_second", round_to(s.messages_per_second, 3))
        .field("megabytes_per_second", round_to(s.megabytes_per_second, 3))
        .field("p50_us", round_to(s.p50_us, 3))
        .field("p99_us", round_to(s.p99_us, 3))
        .end_object();
  }
  j.end_array();
  j.key("cpu").begin_object().key("client");
  write_cpu_side(j, c.client_cpu_seconds, c.client_worker_cpu_seconds);
  if (c.server_cpu_seconds) {
    j.key("server");
    write_cpu_side(j, *c.server_cpu_seconds, c.server_worker_cpu_seconds);
  }
  j.end_object();
  if (!c.counters_json.empty()) j.key("counters").raw(c.counters_json);
  j.end_object();
}

}  // namespace

std::string ResultCase::link_text() const {
  if (link.empty()) return "-";
  return link_copies_per_round_trip ? link + ", " + std::to_string(*link_copies_per_round_trip) + " copies" : link;
}

ResultFile parse_result_file(const std::string& text, const std::string& path) {
  const JsonValue doc = parse_document(text, path);
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
    if (!conf.json().is_object()) conf.fail("is " + type_name(conf.json()) + ", expected an object");
    for (const auto& [key, value] : conf.json().items()) {
      if (!value.is_string()) conf.member(key).fail("is " + type_name(value) + ", expected a string");
      file.config.emplace_back(key, value.get<std::string>());
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
  Json j;
  j.begin_object().field("schema", kResultSchema).field("job", file.job).field("started", file.started);
  j.key("host")
      .begin_object()
      .field("hostname", file.hostname)
      .field("cpus", file.cpus)
      .field("kernel", file.kernel)
      .end_object();
  j.key("config").begin_object();
  for (const auto& [key, value] : file.config) j.field(key, value);
  j.end_object();
  j.key("cases").begin_array();
  for (const ResultCase& c : file.cases) write_case(j, c);
  j.end_array().end_object();
  return j.str() + "\n";
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
