// A child process of `bypass-bench run`: this same binary started with other arguments, pinned to
// its CPUs, killed when the parent dies, optionally with its stdout on a pipe the parent reads.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace bypass::bench {

class ChildProcess {
 public:
  enum class Pipe { None, Stdout, Stdin };
  // Starts `argv` (argv[0] is the program path) with its stdout or stdin on a pipe to this
  // process. `cpus` empty: inherit the affinity. Throws std::runtime_error when fork or the pipe
  // fails; an exec failure shows as exit status 127.
  ChildProcess(const std::vector<std::string>& argv, const std::vector<int>& cpus, Pipe pipe);
  ~ChildProcess();  // SIGKILL and reap if still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // One line of the captured stdout (without the newline); nullopt at EOF, on timeout or when the
  // child exits first.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Writes `line` and a newline to the child's stdin (Pipe::Stdin); false when the child is gone.
  bool write_line(const std::string& line);
  // The child reads EOF on its stdin.
  void close_pipe();
  // The exit status (WEXITSTATUS, or 128 + signal) once it exits within `timeout`, else nullopt.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  // SIGTERM, then SIGKILL if it has not exited within `grace`; returns the exit status.
  int terminate(std::chrono::milliseconds grace);

 private:
  pid_t pid_ = -1;
  int pipe_fd_ = -1;  // our end of the pipe, if any
  std::string buffered_;
  std::optional<int> status_;
};

// The path of the running executable (/proc/self/exe).
std::string self_executable();

}  // namespace bypass::bench
