#include "tools/bypass-bench/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace bypass::bench {

namespace {

using Clock = std::chrono::steady_clock;

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string self_executable() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) throw std::runtime_error(std::string("cannot find this executable (/proc/self/exe): ") + std::strerror(errno));
  return std::string(path, static_cast<size_t>(n));
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::vector<int>& cpus, Pipe pipe) {
  int pipe_fds[2] = {-1, -1};  // [0] read end, [1] write end
  if (pipe != Pipe::None && pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  // Everything the child needs is prepared before fork: it only calls async-signal-safe functions.
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    const int err = errno;
    if (pipe != Pipe::None) {
      close(pipe_fds[0]);
      close(pipe_fds[1]);
    }
    throw std::runtime_error(std::string("fork: ") + std::strerror(err));
  }
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive `run`
    if (getppid() != parent) _exit(126);
    // dup2 clears O_CLOEXEC on the copy; the original ends close at exec.
    if (pipe == Pipe::Stdout) dup2(pipe_fds[1], STDOUT_FILENO);
    if (pipe == Pipe::Stdin) dup2(pipe_fds[0], STDIN_FILENO);
    if (!cpus.empty() && sched_setaffinity(0, sizeof(set), &set) != 0) _exit(125);
    execv(args[0], args.data());
    _exit(127);
  }
  if (pipe == Pipe::Stdout) {
    close(pipe_fds[1]);
    pipe_fd_ = pipe_fds[0];
  } else if (pipe == Pipe::Stdin) {
    close(pipe_fds[0]);
    pipe_fd_ = pipe_fds[1];
  }
}

ChildProcess::~ChildProcess() {
  if (!status_ && pid_ > 0) terminate(std::chrono::milliseconds(0));
  if (pipe_fd_ >= 0) close(pipe_fd_);
}

std::optional<std::string> ChildProcess::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (const size_t nl = buffered_.find('\n'); nl != std::string::npos) {
      std::string line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || pipe_fd_ < 0) return std::nullopt;
    pollfd pfd{pipe_fd_, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
    if (ready < 0 && errno != EINTR) return std::nullopt;
    if (ready <= 0) {
      if (wait(std::chrono::milliseconds(0))) return std::nullopt;  // exited without the line
      continue;
    }
    char chunk[512];
    const ssize_t n = ::read(pipe_fd_, chunk, sizeof(chunk));
    if (n <= 0) return std::nullopt;
    buffered_.append(chunk, static_cast<size_t>(n));
  }
}

void ChildProcess::close_pipe() {
  if (pipe_fd_ >= 0) close(pipe_fd_);
  pipe_fd_ = -1;
}

bool ChildProcess::write_line(const std::string& line) {
  const std::string text = line + "\n";
  size_t written = 0;
  while (pipe_fd_ >= 0 && written < text.size()) {
    // A child that already exited gives EPIPE (`run` ignores SIGPIPE).
    const ssize_t n = ::write(pipe_fd_, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  return written == text.size();
}

std::optional<int> ChildProcess::wait(std::chrono::milliseconds timeout) {
  if (status_) return status_;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      status_ = decode_status(status);
      return status_;
    }
    if (done < 0 && errno != EINTR) {
      status_ = -1;
      return status_;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int ChildProcess::terminate(std::chrono::milliseconds grace) {
  if (status_) return *status_;
  kill(pid_, SIGTERM);
  if (auto status = wait(grace)) return *status;
  kill(pid_, SIGKILL);
  return wait(std::chrono::seconds(10)).value_or(-1);
}

}  // namespace bypass::bench
