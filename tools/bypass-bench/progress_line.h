// Live progress of a running case, once a second: on a terminal one line rewritten in place, else
// (or with bench.progress log) one plain log line per second.
#pragma once

#include <ostream>
#include <string>

#include "tools/bypass-bench/bench_job.h"

namespace bypass::bench {

class ProgressLine {
 public:
  ProgressLine(ProgressStyle style, std::ostream& out);

  // "posix 4KiB d1   3.0/10.0s  123456 msgs/s  505.7 MB/s  p50 7.9 us  p99 12.1 us"
  void update(const std::string& case_name, double elapsed_seconds, double total_seconds,
              double messages_per_second, double megabytes_per_second, double p50_us, double p99_us);
  // Ends a rewritten line so the next output starts on a fresh one.
  void finish();

 private:
  bool rewrite_;
  bool enabled_;
  bool line_open_ = false;
  std::ostream& out_;
};

}  // namespace bypass::bench
