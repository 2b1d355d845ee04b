// Minimal leveled logging to stderr. Level from BYPASS_LOG (error|warn|info|debug, default info).
#pragma once

#include <cstdarg>

namespace bypass::log {

enum class Level { Error = 0, Warn = 1, Info = 2, Debug = 3 };

Level threshold();
void set_threshold(Level level);
inline bool enabled(Level level) { return static_cast<int>(level) <= static_cast<int>(threshold()); }
void write(Level level, const char* subsystem, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace bypass::log

#define BYPASS_LOG(level, subsys, ...)                                            \
  do {                                                                            \
    if (::bypass::log::enabled(::bypass::log::Level::level))                      \
      ::bypass::log::write(::bypass::log::Level::level, subsys, __VA_ARGS__);     \
  } while (0)
