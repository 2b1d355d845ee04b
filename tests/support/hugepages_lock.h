// Hugepages are the one DPDK resource a network namespace does not separate: 2 MiB pages shared by
// the whole machine (tools/setup.sh reserves 512). A test that needs them holds this machine-wide
// lock (flock) while its DPDK processes run, so two tests never ask for the same free pages at
// once; every other DPDK test runs with dpdk.no_huge=yes. The same lock file as
// tests/support/test_lib.sh's hold_hugepages_lock. Header-only, like subprocess.h.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace bypass::test {

class HugepagesLock {
 public:
  static constexpr const char* kPath = "/run/lock/bypass-test-hugepages.lock";

  // Waits up to `bound` for the lock; held() says whether it was taken.
  explicit HugepagesLock(std::chrono::seconds bound) {
    fd_ = ::open(kPath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return;
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::close(fd_);
        fd_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ~HugepagesLock() {
    if (fd_ >= 0) ::close(fd_);  // closing the only descriptor releases the lock
  }
  HugepagesLock(const HugepagesLock&) = delete;
  HugepagesLock& operator=(const HugepagesLock&) = delete;

  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace bypass::test
