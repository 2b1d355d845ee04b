// The fake host roots of tests/data/hosts, for tests of code that reads the host through
// base/host_files.h. meson passes their directory in BYPASS_TEST_HOSTS_DIR (set at run time, so
// the test sources compile the same in every build and stay shared in the compiler cache).
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace bypass {

inline std::string fake_host_root(const std::string& name) {
  const char* dir = std::getenv("BYPASS_TEST_HOSTS_DIR");
  if (dir == nullptr || *dir == '\0')
    throw std::runtime_error("BYPASS_TEST_HOSTS_DIR is not set (meson test sets it to tests/data/hosts)");
  return std::string(dir) + "/" + name;
}

}  // namespace bypass
