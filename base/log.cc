#include "base/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace bypass::log {

namespace {
Level level_from_env() {
  const char* env = std::getenv("BYPASS_LOG");
  if (!env) return Level::Info;
  if (!std::strcmp(env, "error")) return Level::Error;
  if (!std::strcmp(env, "warn")) return Level::Warn;
  if (!std::strcmp(env, "debug")) return Level::Debug;
  return Level::Info;
}

std::atomic<int>& threshold_storage() {
  static std::atomic<int> value{static_cast<int>(level_from_env())};
  return value;
}

const char* level_tag(Level level) {
  switch (level) {
    case Level::Error: return "E";
    case Level::Warn: return "W";
    case Level::Info: return "I";
    case Level::Debug: return "D";
  }
  return "?";
}
}  // namespace

Level threshold() { return static_cast<Level>(threshold_storage().load(std::memory_order_relaxed)); }

void set_threshold(Level level) { threshold_storage().store(static_cast<int>(level)); }

void write(Level level, const char* subsystem, const char* fmt, ...) {
  char message[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  tm local{};
  localtime_r(&now.tv_sec, &local);
  // One fprintf per line so concurrent workers do not interleave within a line.
  std::fprintf(stderr, "%02d:%02d:%02d.%06ld %s %s: %s\n", local.tm_hour, local.tm_min, local.tm_sec,
               now.tv_nsec / 1000, level_tag(level), subsystem, message);
}

}  // namespace bypass::log
