#include "msgr/admin/admin_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include "base/log.h"

#ifndef BYPASS_VERSION
#error "BYPASS_VERSION must be defined by the build (meson's project version)"
#endif

namespace bypass::admin {
namespace {

constexpr size_t kMaxCommandBytes = 4096;
constexpr size_t kMaxHttpRequestBytes = 16384;
constexpr int kClientTimeoutMs = 2000;

const char* const kCommands[][2] = {
    {"help", "this list"},
    {"version", "library version and build"},
    {"perf dump", "messenger, transport (per worker) and port counters"},
    {"conns", "messenger sessions and the transport's TCP connections with their state"},
    {"config show", "every option with its value"},
    {"config diff", "options that differ from their defaults, with their value, default and origin"},
};

std::string errno_text(int err) { return std::strerror(err); }

void set_timeouts(int fd) {
  timeval tv{kClientTimeoutMs / 1000, (kClientTimeoutMs % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// Writes all of `data` or gives up quietly: a client that went away (EPIPE, ECONNRESET) or stopped
// reading (the send timeout) only loses its own answer. MSG_NOSIGNAL: no SIGPIPE for the process.
void send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Reads until `terminator` appears, `limit` bytes arrived, EOF or the receive timeout. Returns
// false when the terminator never came.
bool read_until(int fd, std::string& out, std::string_view terminator, size_t limit) {
  char buf[1024];
  while (out.size() < limit) {
    if (out.find(terminator) != std::string::npos) return true;
    const ssize_t n = ::recv(fd, buf, std::min(sizeof buf, limit - out.size()), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out.find(terminator) != std::string::npos;
}

// Worker i's report, read on its own thread; nullopt when it did not answer in time (a stopped or
// wedged loop). The closure owns what it writes, so a late answer lands in memory nobody waits on.
std::optional<NetworkStack::WorkerReport> report_of(NetworkStack& stack, unsigned i) {
  struct Pending {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    NetworkStack::WorkerReport report;
  };
  auto pending = std::make_shared<Pending>();
  NetworkStack* s = &stack;
  stack.worker(i)->center().dispatch_external([pending, s, i] {
    NetworkStack::WorkerReport report = s->worker_report(i);
    std::lock_guard guard(pending->m);
    pending->report = std::move(report);
    pending->done = true;
    pending->cv.notify_all();
  });
  std::unique_lock guard(pending->m);
  if (!pending->cv.wait_for(guard, AdminServer::kWorkerTimeout, [&] { return pending->done; })) return std::nullopt;
  return std::move(pending->report);
}

void write_counters(Json& j, const NetworkStack::Counters& counters) {
  j.begin_object();
  for (const auto& [name, value] : counters) j.field(name, value);
  j.end_object();
}

// A transport counter's name in /metrics. promtool's lint reads the word "us" as microseconds,
// and in the TCP/IP counters "not_for_us" means "not addressed to this host".
std::string metric_word(std::string name) {
  for (size_t at; (at = name.find("_for_us")) != std::string::npos;) name.replace(at, 7, "_for_local_host");
  return name;
}

std::map<std::string, std::weak_ptr<AdminServer>>& live_servers() {
  static std::map<std::string, std::weak_ptr<AdminServer>> servers;
  return servers;
}
std::mutex live_servers_lock;

// Binds the unix socket at `path`; a stale socket file (nobody accepts on it) is replaced.
int listen_unix(const std::string& path) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path)
    throw config::ConfigError("ms.admin_socket: '" + path + "' is longer than " + std::to_string(sizeof sa.sun_path - 1) +
                              " bytes (the limit of a unix socket path)");
  std::memcpy(sa.sun_path, path.data(), path.size());
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw config::ConfigError("ms.admin_socket: '" + path + "' exists and is not a socket");
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool in_use = probe >= 0 && ::connect(probe, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
    if (probe >= 0) ::close(probe);
    if (in_use) throw config::ConfigError("ms.admin_socket: '" + path + "' is in use by another process");
    ::unlink(path.c_str());
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw std::runtime_error("ms.admin_socket: socket(): " + errno_text(errno));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, 16) != 0) {
    const int err = errno;
    ::close(fd);
    throw config::ConfigError("ms.admin_socket: cannot listen on '" + path + "': " + errno_text(err));
  }
  return fd;
}

int listen_tcp(const std::string& text, std::string* bound) {
  SocketAddress addr;
  if (!SocketAddress::parse(text, &addr))
    throw config::ConfigError("ms.metrics_address: '" + text + "' is not IP:PORT (e.g. 127.0.0.1:9100 or [::1]:9100)");
  const int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw std::runtime_error("ms.metrics_address: socket(): " + errno_text(errno));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, addr.sockaddr_ptr(), addr.sockaddr_len()) != 0 || ::listen(fd, 16) != 0) {
    const int err = errno;
    ::close(fd);
    throw config::ConfigError("ms.metrics_address: cannot listen on " + text + ": " + errno_text(err));
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  *bound = SocketAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len).to_string();
  return fd;
}

}  // namespace

std::string version_json() {
  Json j;
  j.begin_object().field("version", BYPASS_VERSION).field("compiler", __VERSION__).end_object();
  return j.str();
}

std::shared_ptr<AdminServer> AdminServer::acquire(const config::Config& conf) {
  const std::string& path = conf.get_string("ms.admin_socket");
  const std::string& metrics = conf.get_string("ms.metrics_address");
  if (path.empty() && metrics.empty()) return nullptr;
  std::lock_guard guard(live_servers_lock);
  std::weak_ptr<AdminServer>& slot = live_servers()[path + '\n' + metrics];
  if (auto server = slot.lock()) return server;
  std::shared_ptr<AdminServer> server(new AdminServer(path, metrics));
  slot = server;
  return server;
}

AdminServer::AdminServer(std::string socket_path, std::string metrics_address)
    : socket_path_(std::move(socket_path)), metrics_address_(std::move(metrics_address)) {
  if (!socket_path_.empty()) admin_fd_ = listen_unix(socket_path_);
  try {
    if (!metrics_address_.empty()) http_fd_ = listen_tcp(metrics_address_, &metrics_bound_);
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) throw std::runtime_error("admin: eventfd(): " + errno_text(errno));
  } catch (...) {
    if (admin_fd_ >= 0) {
      ::close(admin_fd_);
      ::unlink(socket_path_.c_str());
    }
    if (http_fd_ >= 0) ::close(http_fd_);
    throw;
  }
  if (admin_fd_ >= 0) BYPASS_LOG(Info, "admin", "admin socket at %s", socket_path_.c_str());
  if (http_fd_ >= 0) BYPASS_LOG(Info, "admin", "metrics at http://%s/metrics", metrics_bound_.c_str());
  thread_ = std::thread([this] { serve(); });
}

AdminServer::~AdminServer() {
  stop_.store(true, std::memory_order_release);
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  thread_.join();
  if (admin_fd_ >= 0) {
    ::close(admin_fd_);
    ::unlink(socket_path_.c_str());
  }
  if (http_fd_ >= 0) ::close(http_fd_);
  ::close(wake_fd_);
  std::lock_guard guard(live_servers_lock);
  auto it = live_servers().find(socket_path_ + '\n' + metrics_address_);
  if (it != live_servers().end() && it->second.expired()) live_servers().erase(it);
}

void AdminServer::attach(NetworkStack* stack, const AdminSource* source, const config::Config* conf) {
  std::lock_guard guard(lock_);
  attachments_.push_back({stack, source, conf});
}

void AdminServer::detach(NetworkStack* stack, const AdminSource* source) {
  std::lock_guard guard(lock_);
  std::erase_if(attachments_, [&](const Attachment& a) { return a.stack == stack && a.source == source; });
}

void AdminServer::serve() {
  while (!stop_.load(std::memory_order_acquire)) {
    pollfd fds[3] = {{wake_fd_, POLLIN, 0}, {admin_fd_, POLLIN, 0}, {http_fd_, POLLIN, 0}};
    const int n = ::poll(fds, 3, 1000);
    if (n <= 0) continue;
    if (fds[0].revents) break;
    for (int k = 1; k < 3; ++k) {
      if (!(fds[k].revents & POLLIN)) continue;
      const int client = ::accept4(fds[k].fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      set_timeouts(client);
      if (k == 1) serve_admin_client(client);
      else serve_http_client(client);
      ::close(client);
    }
  }
}

void AdminServer::serve_admin_client(int fd) {
  std::string request;
  if (!read_until(fd, request, "\n", kMaxCommandBytes)) {
    if (request.size() >= kMaxCommandBytes) send_all(fd, "error\ncommand longer than 4096 bytes\n");
    else if (!request.empty()) send_all(fd, "error\ncommand not terminated by a newline\n");
    return;
  }
  const Reply reply = execute(request.substr(0, request.find('\n')));
  send_all(fd, (reply.ok ? "ok\n" : "error\n") + reply.body + "\n");
}

void AdminServer::serve_http_client(int fd) {
  std::string request;
  if (!read_until(fd, request, "\r\n\r\n", kMaxHttpRequestBytes)) {
    if (!request.empty()) send_all(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    return;
  }
  std::istringstream line(request.substr(0, request.find("\r\n")));
  std::string method, target, version;
  line >> method >> target >> version;
  auto respond = [fd](const char* status, const char* type, const std::string& body) {
    send_all(fd, std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + type +
                     "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
  };
  if (version.rfind("HTTP/1.", 0) != 0) return respond("400 Bad Request", "text/plain", "not an HTTP/1.x request\n");
  if (method != "GET" && method != "HEAD")
    return respond("405 Method Not Allowed", "text/plain", "only GET /metrics is served\n");
  if (target != "/metrics" && target.rfind("/metrics?", 0) != 0)
    return respond("404 Not Found", "text/plain", "only /metrics is served\n");
  const std::string body = metrics_text();
  respond("200 OK", "text/plain; version=0.0.4; charset=utf-8", method == "HEAD" ? std::string() : body);
}

std::vector<NetworkStack*> AdminServer::stacks() const {
  std::vector<NetworkStack*> out;
  for (const Attachment& a : attachments_) {
    if (std::find(out.begin(), out.end(), a.stack) == out.end()) out.push_back(a.stack);
  }
  return out;
}

AdminServer::Reply AdminServer::execute(std::string_view command_line) {
  std::istringstream words{std::string(command_line)};
  std::string command, word;
  while (words >> word) command += (command.empty() ? "" : " ") + word;
  std::lock_guard guard(lock_);
  if (command == "help") {
    Json j;
    j.begin_object();
    for (const auto& [name, what] : kCommands) j.field(name, what);
    j.end_object();
    return {true, j.str()};
  }
  if (command == "version") return {true, version_json()};
  if (command == "perf dump") return {true, perf_dump()};
  if (command == "conns") return {true, conns()};
  if (command == "config show") return {true, config_show()};
  if (command == "config diff") return {true, config_diff()};
  std::string known;
  for (const auto& entry : kCommands) known += std::string(known.empty() ? "" : ", ") + entry[0];
  if (command.empty()) return {false, "empty command; commands: " + known};
  return {false, "unknown command '" + command + "'; commands: " + known};
}

std::string AdminServer::perf_dump() {
  Json j;
  j.begin_object().key("messengers").begin_array();
  for (const Attachment& a : attachments_) {
    if (a.source) j.raw(a.source->perf_dump_json());
  }
  j.end_array().key("transports").begin_array();
  for (NetworkStack* stack : stacks()) {
    j.begin_object().field("transport", stack->type()).key("port");
    write_counters(j, stack->port_counters());
    j.key("workers").begin_array();
    for (unsigned i = 0; i < stack->num_workers(); ++i) {
      j.begin_object().field("worker", i).field("open_sockets", stack->worker(i)->open_sockets.load());
      if (auto report = report_of(*stack, i)) {
        j.key("counters");
        write_counters(j, report->counters);
        if (!report->gauges.empty()) {
          j.key("gauges");
          write_counters(j, report->gauges);
        }
      } else {
        j.field("error", "the worker did not answer within 2 s");
      }
      j.end_object();
    }
    j.end_array().end_object();
  }
  j.end_array().end_object();
  return j.str();
}

std::string AdminServer::conns() {
  Json j;
  j.begin_object().key("messengers").begin_array();
  for (const Attachment& a : attachments_) {
    if (!a.source) continue;
    j.begin_object().field("name", a.source->admin_name()).key("sessions").begin_array();
    a.source->write_sessions(j);
    j.end_array().end_object();
  }
  j.end_array().key("transports").begin_array();
  for (NetworkStack* stack : stacks()) {
    j.begin_object().field("transport", stack->type()).key("workers").begin_array();
    for (unsigned i = 0; i < stack->num_workers(); ++i) {
      j.begin_object().field("worker", i);
      if (auto report = report_of(*stack, i)) {
        j.key("connections").begin_array();
        for (const NetworkStack::SocketReport& s : report->sockets) {
          j.begin_object().field("local", s.local).field("remote", s.remote).field("state", s.state);
          for (const auto& [name, value] : s.details) j.field(name, value);
          j.end_object();
        }
        j.end_array();
      } else {
        j.field("error", "the worker did not answer within 2 s");
      }
      j.end_object();
    }
    j.end_array().end_object();
  }
  j.end_array().end_object();
  return j.str();
}

std::string AdminServer::config_show() {
  if (attachments_.empty()) return "{}";
  return attachments_.front().conf->to_json();
}

std::string AdminServer::config_diff() {
  Json j;
  j.begin_object();
  if (!attachments_.empty()) {
    const config::Config& conf = *attachments_.front().conf;
    const config::Config defaults(conf.registry());
    for (const config::OptionSpec& spec : conf.registry().options()) {
      const std::string value = conf.to_string(spec.name), initial = defaults.to_string(spec.name);
      if (value == initial) continue;
      j.key(spec.name).begin_object().field("value", value).field("default", initial)
          .field("origin", conf.origin(spec.name)).end_object();
    }
  }
  j.end_object();
  return j.str();
}

std::string AdminServer::metrics_text() {
  std::lock_guard guard(lock_);
  MetricsWriter out;
  using Type = MetricsWriter::Type;
  for (const Attachment& a : attachments_) {
    if (a.source) a.source->write_metrics(out, {{"transport", a.stack->type()}});
  }
  for (NetworkStack* stack : stacks()) {
    const std::string transport = stack->type();
    for (const auto& [name, value] : stack->port_counters())
      out.add("bypass_port_" + name + "_total", Type::Counter, "Port (NIC) counter " + name + " as the driver reports it",
              {{"transport", transport}, {"port", "0"}}, value);
    for (unsigned i = 0; i < stack->num_workers(); ++i) {
      const MetricsWriter::Labels labels = {{"transport", transport}, {"worker", std::to_string(i)}};
      out.add("bypass_worker_open_sockets", Type::Gauge, "Sockets open on the worker", labels,
              static_cast<uint64_t>(std::max(0, stack->worker(i)->open_sockets.load())));
      const auto report = report_of(*stack, i);
      out.add("bypass_worker_up", Type::Gauge, "1 when the worker answered this scrape within 2 s", labels, report ? 1 : 0);
      if (!report) continue;
      for (const auto& [name, value] : report->counters)
        out.add("bypass_transport_" + metric_word(name) + "_total", Type::Counter, "Transport counter " + name + " of the worker",
                labels, value);
      for (const auto& [name, value] : report->gauges)
        out.add("bypass_transport_" + metric_word(name), Type::Gauge, "Transport gauge " + name + " of the worker", labels,
                value);
      std::map<std::string, uint64_t> states;
      for (const NetworkStack::SocketReport& s : report->sockets) ++states[s.state];
      for (const auto& [state, count] : states) {
        MetricsWriter::Labels with_state = labels;
        with_state.emplace_back("state", state);
        out.add("bypass_tcp_connections", Type::Gauge, "TCP connections of the worker by state", with_state, count);
      }
    }
  }
  return out.render();
}

}  // namespace bypass::admin
