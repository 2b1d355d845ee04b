// bypass-admin SOCKET COMMAND...: asks a running Bypass process (ms.admin_socket=SOCKET) one
// question and prints the answer: JSON on stdout and exit 0, or the server's error on stderr and
// exit 1. Exit 2 when the process cannot be reached or the answer is cut short.
//
//   bypass-admin /run/osd.0.asok perf dump
//   bypass-admin /run/osd.0.asok config diff
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

constexpr const char* kUsage =
    "usage: bypass-admin SOCKET COMMAND...\n"
    "  Asks the process serving SOCKET (its ms.admin_socket) and prints the JSON answer.\n"
    "  Commands: help, version, perf dump, conns, config show, config diff\n"
    "  (`bypass-admin SOCKET help` lists what the process answers).\n"
    "  Exit status: 0 answered, 1 the process refused the command, 2 no answer.\n";

int fail(const std::string& message) {
  std::fprintf(stderr, "bypass-admin: %s\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (argc < 3) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string path = argv[1];
  std::string command;
  for (int i = 2; i < argc; ++i) command += std::string(i > 2 ? " " : "") + argv[i];
  if (command.find('\n') != std::string::npos) return fail("a command cannot contain a newline");

  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) return fail(path + ": longer than a unix socket path may be");
  std::memcpy(sa.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(std::string("socket(): ") + std::strerror(errno));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
    return fail("cannot connect to " + path + ": " + std::strerror(errno) + " (is the process running with ms.admin_socket=" + path + "?)");
  // A command waits up to 2 s per worker on the server; 30 s covers many workers.
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const std::string request = command + "\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
    return fail("cannot send the command to " + path + ": " + std::strerror(errno));

  std::string reply;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("no answer from " + path + ": " + std::strerror(errno));
    if (n == 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  const size_t eol = reply.find('\n');
  const std::string status = reply.substr(0, eol);
  const std::string body = eol == std::string::npos ? "" : reply.substr(eol + 1);
  if (status == "ok") {
    std::fwrite(body.data(), 1, body.size(), stdout);
    return 0;
  }
  if (status == "error") {
    std::fprintf(stderr, "bypass-admin: %s", body.c_str());
    return 1;
  }
  return fail("malformed answer from " + path + " (not a Bypass admin socket?)");
}
