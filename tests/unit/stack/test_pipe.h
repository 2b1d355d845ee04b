// A non-blocking pipe for the event-loop tests: ordinary fds to watch, closed at scope exit.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <stdexcept>

namespace bypass {

struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() {
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  }
  ~Pipe() {
    for (int fd : fds)
      if (fd >= 0) close(fd);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  int reader() const { return fds[0]; }
  int writer() const { return fds[1]; }
};

}  // namespace bypass
