#include "tools/bypass-bench/process_snapshot.h"

#include <sys/resource.h>

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "base/json.h"

namespace bypass::bench {

namespace {

void add_counters(NamedCounters& into, const NamedCounters& more) {
  for (const auto& [name, value] : more) {
    bool found = false;
    for (auto& [existing, total] : into) {
      if (existing == name) {
        total += value;
        found = true;
        break;
      }
    }
    if (!found) into.emplace_back(name, value);
  }
}

NamedCounters counters_since(const NamedCounters& now, const NamedCounters& earlier) {
  NamedCounters out;
  for (const auto& [name, value] : now) {
    uint64_t before = 0;
    for (const auto& [earlier_name, earlier_value] : earlier)
      if (earlier_name == name) before = earlier_value;
    out.emplace_back(name, value >= before ? value - before : 0);
  }
  return out;
}

void write_counters(Json& j, const NamedCounters& counters) {
  j.begin_object();
  for (const auto& [name, value] : counters) j.field(name, value);
  j.end_object();
}

std::string seconds_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6f", seconds);
  return buf;
}

}  // namespace

double rusage_seconds(int who) {
  rusage usage{};
  getrusage(who, &usage);
  auto seconds = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::vector<double> worker_cpu_seconds(NetworkStack& stack) {
  std::vector<double> seconds(stack.num_workers());
  for (unsigned i = 0; i < stack.num_workers(); ++i) {
    stack.worker(i)->center().submit_and_wait([&, i] { seconds[i] = rusage_seconds(RUSAGE_THREAD); });
  }
  return seconds;
}

NamedCounters messenger_counters(const msgr::Messenger& messenger) {
  const nlohmann::ordered_json perf = nlohmann::ordered_json::parse(messenger.perf_dump_json());
  NamedCounters out;
  const auto counters = perf.find("counters");
  if (counters == perf.end() || !counters->is_object()) return out;
  for (const auto& [name, value] : counters->items())
    if (value.is_number_unsigned()) out.emplace_back(name, value.get<uint64_t>());
  return out;
}

ProcessSnapshot ProcessSnapshot::take(NetworkStack& stack,
                                      const std::vector<const msgr::Messenger*>& messengers) {
  ProcessSnapshot snapshot;
  snapshot.process_cpu_seconds = rusage_seconds(RUSAGE_SELF);
  snapshot.worker_cpu_seconds = bench::worker_cpu_seconds(stack);
  for (const msgr::Messenger* messenger : messengers) add_counters(snapshot.msgr, messenger_counters(*messenger));
  snapshot.transport = stack.transport_counters();
  return snapshot;
}

std::string ProcessSnapshot::text() const {
  std::string out = "cpu.process " + seconds_text(process_cpu_seconds) + "\n";
  for (double worker : worker_cpu_seconds) out += "cpu.worker " + seconds_text(worker) + "\n";
  for (const auto& [name, value] : msgr) out += "msgr." + name + " " + std::to_string(value) + "\n";
  for (const auto& [name, value] : transport) out += "transport." + name + " " + std::to_string(value) + "\n";
  return out;
}

ProcessSnapshot ProcessSnapshot::parse(const std::string& text) {
  ProcessSnapshot snapshot;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    const size_t space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    auto bad = [&] { return std::runtime_error("server stats line " + std::to_string(number) + ": '" + line + "'"); };
    try {
      size_t used = 0;
      if (key == "cpu.process" || key == "cpu.worker") {
        const double seconds = std::stod(value, &used);
        if (used != value.size()) throw bad();
        if (key == "cpu.process") snapshot.process_cpu_seconds = seconds;
        else snapshot.worker_cpu_seconds.push_back(seconds);
      } else if (key.rfind("msgr.", 0) == 0 || key.rfind("transport.", 0) == 0) {
        const uint64_t count = std::stoull(value, &used);
        if (used != value.size()) throw bad();
        const bool is_msgr = key[0] == 'm';
        (is_msgr ? snapshot.msgr : snapshot.transport).emplace_back(key.substr(key.find('.') + 1), count);
      } else {
        throw bad();
      }
    } catch (const std::logic_error&) {  // std::stod / std::stoull on a non-number
      throw bad();
    }
  }
  return snapshot;
}

ProcessSnapshot ProcessSnapshot::since(const ProcessSnapshot& earlier) const {
  ProcessSnapshot out;
  out.process_cpu_seconds = process_cpu_seconds - earlier.process_cpu_seconds;
  out.worker_cpu_seconds = worker_cpu_seconds;
  for (size_t i = 0; i < out.worker_cpu_seconds.size() && i < earlier.worker_cpu_seconds.size(); ++i)
    out.worker_cpu_seconds[i] -= earlier.worker_cpu_seconds[i];
  out.msgr = counters_since(msgr, earlier.msgr);
  out.transport = counters_since(transport, earlier.transport);
  return out;
}

std::string ProcessSnapshot::counters_json() const {
  Json j;
  j.begin_object().key("msgr");
  write_counters(j, msgr);
  j.key("transport");
  write_counters(j, transport);
  return j.end_object().str();
}

}  // namespace bypass::bench
