// The admin socket (ms.admin_socket) and the Prometheus endpoint (ms.metrics_address) of a process.
//
// One thread serves both, one client at a time, with 2 s socket timeouts, so neither a slow nor a
// vanishing client reaches the workers. What a command needs from a worker (its transport counters,
// its TCP connections) is read on that worker's thread through its external queue, between two
// loop iterations: traffic keeps flowing and the admin thread waits at most 2 s per worker.
//
// Admin protocol: the client sends one line, the command words separated by spaces ("perf dump\n");
// the server answers "ok\n" followed by JSON, or "error\n" followed by one line, and closes.
// Commands: help, version, perf dump, conns, config show, config diff.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/json.h"
#include "config/config.h"
#include "msgr/admin/metrics_writer.h"
#include "stack/network_stack.h"

namespace bypass::admin {

// What a messenger shows on the admin socket and /metrics. Called on the admin thread.
class AdminSource {
 public:
  virtual ~AdminSource() = default;
  virtual std::string admin_name() const = 0;         // "osd.0"
  virtual std::string perf_dump_json() const = 0;     // its counters, one JSON object
  virtual void write_sessions(Json& out) const = 0;   // appends one object per session to an array
  virtual void write_metrics(MetricsWriter& out, const MetricsWriter::Labels& labels) const = 0;
};

class AdminServer {
 public:
  // The process's server for conf's ms.admin_socket and ms.metrics_address, started on first use and
  // shared by everything that names the same pair (messengers of one process); nullptr when both are
  // empty. Throws config::ConfigError for a malformed address or a socket path in use, naming the option.
  static std::shared_ptr<AdminServer> acquire(const config::Config& conf);
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // What the commands report: a running stack, optionally a messenger on it, and the configuration
  // to show. Several may be attached; a stack shared by several is reported once. `source` may be
  // null (a stack-only server such as bypass-pmd stack). detach() waits for a command in progress.
  void attach(NetworkStack* stack, const AdminSource* source, const config::Config* conf);
  void detach(NetworkStack* stack, const AdminSource* source);

  struct Reply {
    bool ok;
    std::string body;  // JSON when ok, otherwise the error message
  };
  // Runs one command line (what the socket does for each client).
  Reply execute(std::string_view command_line);
  // The /metrics page.
  std::string metrics_text();

  const std::string& socket_path() const { return socket_path_; }
  // The bound metrics address ("127.0.0.1:9101"; the real port when 0 was asked for).
  const std::string& metrics_address() const { return metrics_bound_; }

  // How long a command waits for one worker's answer before reporting it as unresponsive.
  static constexpr std::chrono::seconds kWorkerTimeout{2};

 private:
  AdminServer(std::string socket_path, std::string metrics_address);
  struct Attachment {
    NetworkStack* stack;
    const AdminSource* source;
    const config::Config* conf;
  };
  void serve();
  void serve_admin_client(int fd);
  void serve_http_client(int fd);
  std::vector<NetworkStack*> stacks() const;  // distinct, in attach order; under lock_
  std::string perf_dump();
  std::string conns();
  std::string config_show();
  std::string config_diff();

  std::string socket_path_, metrics_address_, metrics_bound_;
  int admin_fd_ = -1, http_fd_ = -1, wake_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::mutex lock_;  // attachments_; held for the whole of a command
  std::vector<Attachment> attachments_;
  std::thread thread_;
};

// A stack (and its configuration) shown by the process's admin server for as long as this object
// lives; nothing when conf names neither ms.admin_socket nor ms.metrics_address. For tools that
// serve a NetworkStack without a messenger (bypass-pmd stack echo-server). Throws like acquire().
class ScopedAdminAttachment {
 public:
  ScopedAdminAttachment(const config::Config& conf, NetworkStack* stack)
      : server_(AdminServer::acquire(conf)), stack_(stack) {
    if (server_) server_->attach(stack, nullptr, &conf);
  }
  ~ScopedAdminAttachment() {
    if (server_) server_->detach(stack_, nullptr);
  }
  ScopedAdminAttachment(const ScopedAdminAttachment&) = delete;
  ScopedAdminAttachment& operator=(const ScopedAdminAttachment&) = delete;

 private:
  std::shared_ptr<AdminServer> server_;
  NetworkStack* stack_;
};

// The JSON reply of `version`.
std::string version_json();

}  // namespace bypass::admin
