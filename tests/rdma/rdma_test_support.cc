#include "tests/rdma/rdma_test_support.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>

namespace bypass::testing {

pid_t spawn_self(const std::vector<std::string>& args) {
  // The argument vector is built before fork(): the child of a threaded process allocates nothing.
  std::vector<char*> argv{const_cast<char*>("rdma_transport_test")};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t child = fork();
  if (child != 0) return child;
  execv("/proc/self/exe", argv.data());
  _exit(127);
}

bool matches_pattern(const char* data, size_t offset, size_t len) {
  // Grown on demand (workers of one test may call it at once) and never shrunk.
  static std::mutex lock;
  static std::string pattern;
  std::lock_guard guard(lock);
  if (pattern.size() < offset + len) {
    size_t i = pattern.size();
    pattern.resize(std::max(offset + len, 2 * pattern.size()));
    for (; i < pattern.size(); ++i) pattern[i] = pattern_byte(i);
  }
  return std::memcmp(data, pattern.data() + offset, len) == 0;
}

int kernel_resources(const char* kind) {
  std::set<std::string> ours;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task"))
    ours.insert(task.path().filename().string());
  const std::string cmd = std::string("rdma resource show ") + kind + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  int count = 0;
  char line[1024];
  while (fgets(line, sizeof(line), p)) {
    std::istringstream words(line);
    std::string word, pid;
    while (words >> word && word != "pid") {}
    if (words >> pid && ours.count(pid)) ++count;
  }
  pclose(p);
  return count;
}

}  // namespace bypass::testing
