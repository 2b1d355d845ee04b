// What one benchmark process has used and counted so far: CPU time of the process and of each
// worker thread, messenger perf counters and transport counters. A case reports the difference of
// two snapshots (its own measured interval). The server sends its snapshots to the client as text
// in a control message, so `text()` and `parse()` are exact inverses.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "msgr/messenger.h"
#include "stack/network_stack.h"

namespace bypass::bench {

using NamedCounters = std::vector<std::pair<std::string, uint64_t>>;

struct ProcessSnapshot {
  double process_cpu_seconds = 0;       // user + system, every thread
  std::vector<double> worker_cpu_seconds;
  NamedCounters msgr;                   // summed over the process's messengers
  NamedCounters transport;              // NetworkStack::transport_counters()

  // Takes a snapshot now; `stack` must be running (worker CPU is read on each worker's thread).
  static ProcessSnapshot take(NetworkStack& stack, const std::vector<const msgr::Messenger*>& messengers);

  // "cpu.process 1.25\ncpu.worker 0.9\nmsgr.msgs_sent 10\n..." and back; parse() throws
  // std::runtime_error naming the bad line.
  std::string text() const;
  static ProcessSnapshot parse(const std::string& text);

  // this - earlier, field by field (counters matched by name; missing earlier ones count as 0).
  ProcessSnapshot since(const ProcessSnapshot& earlier) const;

  // {"msgr": {...}, "transport": {...}}: one side of a result case's "counters".
  std::string counters_json() const;
};

// User + system CPU seconds of RUSAGE_SELF or RUSAGE_THREAD.
double rusage_seconds(int who);
// CPU seconds of each worker thread of a running stack, read on that thread.
std::vector<double> worker_cpu_seconds(NetworkStack& stack);
// The integer fields of the "counters" object of Messenger::perf_dump_json().
NamedCounters messenger_counters(const msgr::Messenger& messenger);

}  // namespace bypass::bench
