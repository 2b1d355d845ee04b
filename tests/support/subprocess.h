// Child processes for tests: a command run through the shell with its output captured, and a
// Process (own process group, stdin/stdout/stderr in files, killed at its deadline) for tools
// that run alongside the test. Header-only so every test directory can include it.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace bypass::test {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `cmd` through the shell; its stdout, and its exit status (-1 when it could not run or was
// killed by a signal).
struct CommandResult {
  std::string out;
  int status = -1;
};
inline CommandResult run_with_status(const std::string& cmd) {
  CommandResult result;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return result;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) result.out.append(buf, n);
  const int wait_status = ::pclose(p);
  if (wait_status != -1 && WIFEXITED(wait_status)) result.status = WEXITSTATUS(wait_status);
  return result;
}

struct Result {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  std::string out, err;
};

// A child process in its own process group, output captured in files, killed at its deadline.
class Process {
 public:
  // `input` becomes the child's stdin (empty: /dev/null), e.g. commands for an interactive shell.
  Process(const std::vector<std::string>& argv, std::chrono::seconds deadline, const std::string& input = "")
      : deadline_(deadline) {
    static int counter = 0;
    const std::string base = "/tmp/bypass-test-process-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    out_path_ = base + ".out";
    err_path_ = base + ".err";
    in_path_ = base + ".in";
    std::ofstream(in_path_) << input;
    start_ = std::chrono::steady_clock::now();
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      const int in = open(in_path_.c_str(), O_RDONLY);
      const int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(in, 0);
      dup2(out, 1);
      dup2(err, 2);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    setpgid(pid_, pid_);
  }
  ~Process() {
    if (!reaped_) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::remove(in_path_.c_str());
    std::remove(out_path_.c_str());
    std::remove(err_path_.c_str());
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  bool running() {
    if (reaped_) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      record(status);
      return false;
    }
    return true;
  }
  // What the child has written to stdout and to stderr so far.
  std::string out_so_far() const { return slurp(out_path_); }
  std::string err_so_far() const { return slurp(err_path_); }
  // SIGINT to the child's group: tools such as dumpcap finish their output and exit.
  void interrupt() {
    if (!reaped_) kill(-pid_, SIGINT);
  }
  Result wait() {
    while (!reaped_) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        record(status);
        break;
      }
      if (std::chrono::steady_clock::now() - start_ > deadline_) {
        result_.timed_out = true;
        kill(-pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        record(status);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    result_.out = slurp(out_path_);
    result_.err = slurp(err_path_);
    return result_;
  }

 private:
  void record(int status) {
    reaped_ = true;
    if (WIFEXITED(status)) result_.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result_.signal = WTERMSIG(status);
  }
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::chrono::seconds deadline_;
  std::chrono::steady_clock::time_point start_;
  std::string in_path_, out_path_, err_path_;
  Result result_;
};

}  // namespace bypass::test
