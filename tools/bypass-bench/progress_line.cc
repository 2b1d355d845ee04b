#include "tools/bypass-bench/progress_line.h"

#include <unistd.h>

#include <cstdio>

namespace bypass::bench {

ProgressLine::ProgressLine(ProgressStyle style, std::ostream& out)
    : rewrite_(style == ProgressStyle::Line || (style == ProgressStyle::Auto && isatty(STDOUT_FILENO))),
      enabled_(style != ProgressStyle::Off),
      out_(out) {}

void ProgressLine::update(const std::string& case_name, double elapsed_seconds, double total_seconds,
                          double messages_per_second, double megabytes_per_second, double p50_us,
                          double p99_us) {
  if (!enabled_) return;
  char text[256];
  // total_seconds 0: a count-limited case, whose end is not known in advance.
  if (total_seconds > 0) {
    std::snprintf(text, sizeof(text), "%-18s %5.1f/%.1fs  %10.0f msgs/s  %8.1f MB/s  p50 %7.1f us  p99 %7.1f us",
                  case_name.c_str(), elapsed_seconds, total_seconds, messages_per_second, megabytes_per_second,
                  p50_us, p99_us);
  } else {
    std::snprintf(text, sizeof(text), "%-18s %5.1fs  %10.0f msgs/s  %8.1f MB/s  p50 %7.1f us  p99 %7.1f us",
                  case_name.c_str(), elapsed_seconds, messages_per_second, megabytes_per_second, p50_us, p99_us);
  }
  if (rewrite_) {
    out_ << "\r" << text << "\033[K" << std::flush;
    line_open_ = true;
  } else {
    out_ << text << std::endl;
  }
}

void ProgressLine::finish() {
  if (line_open_) out_ << "\n" << std::flush;
  line_open_ = false;
}

}  // namespace bypass::bench
