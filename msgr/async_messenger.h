// The Messenger implementation (internal): stack, listeners, session table, dispatch thread.
#pragma once

#include <array>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "msgr/admin/admin_server.h"
#include "msgr/cephx_keeper.h"
#include "msgr/handshake.h"
#include "msgr/messenger.h"
#include "msgr/perf_counters.h"
#include "msgr/session_table.h"
#include "stack/network_stack.h"

namespace bypass::msgr {

class AsyncConnection;
using AsyncConnectionRef = std::shared_ptr<AsyncConnection>;

struct MessengerTimings {
  std::chrono::nanoseconds keepalive_interval;
  std::chrono::nanoseconds keepalive_timeout;
  std::chrono::nanoseconds backoff_min;
  std::chrono::nanoseconds backoff_max;
  std::chrono::nanoseconds standby_timeout;  // ms.connection_idle_timeout; 0 = none
};

class AsyncMessenger final : public Messenger, public admin::AdminSource {
 public:
  // `stack`: null to create (and own) one from `conf`, or a stack shared with other messengers.
  AsyncMessenger(const config::Config& conf, const EntityName& name, std::shared_ptr<NetworkStack> stack);
  ~AsyncMessenger() override;

  const EntityName& name() const override { return name_; }
  void set_default_policy(const Policy& policy) override;
  void set_policy(EntityType peer_type, const Policy& policy) override;
  void add_dispatcher(Dispatcher* dispatcher) override;
  MessageRegistry& registry() override { return registry_; }
  int bind(const EntityAddr& addr) override;
  EntityAddrVec my_addrs() const override;
  int start() override;
  ConnectionRef connect_to(EntityType peer_type, const EntityAddrVec& addrs) override;
  void mark_down(const EntityAddrVec& addrs) override;
  void mark_down_all() override;
  void shutdown() override;
  void wait() override;
  std::string perf_dump_json() const override;
  BufferList allocate_payload(size_t bytes) override;
  std::shared_ptr<auth::CephxTicketStore> cephx_tickets() const override { return auth_.tickets; }

  // The admin socket and /metrics (async_messenger_admin.cc).
  std::string admin_name() const override { return name_.to_string(); }
  void write_sessions(Json& out) const override;
  void write_metrics(admin::MetricsWriter& out, const admin::MetricsWriter::Labels& labels) const override;

  // --- used by connections (any worker thread) ---
  Policy policy_for(EntityType peer_type) const;
  HandshakeSettings handshake_settings(bool lossy) const;
  const MessengerTimings& timings() const { return timings_; }
  uint64_t next_global_seq(uint64_t at_least = 0);
  uint64_t new_cookie();
  PerfCounters& perf() { return perf_; }
  Throttle& dispatch_throttle() { return dispatch_throttle_; }
  NetworkStack& stack() { return *stack_; }
  SocketOptions socket_options() const { return socket_options_; }
  // Set when shutdown() begins: no new sessions (reconnects of existing ones are still taken
  // while shutdown lingers, so that what they hold for replay reaches the peer).
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  // Set once the linger is over and the sessions are being closed: no more accepts or reconnects.
  bool closing() const { return closing_.load(std::memory_order_acquire); }

  // Delivers `m` (fast dispatch inline, no lock; otherwise queued to the dispatch thread), then
  // gives back what it took of the throttles: `size` bytes of the dispatch throttle and of
  // policy.throttle_bytes, one of policy.throttle_messages.
  void deliver(const MessageRef& m, const Policy& policy, uint64_t size);
  enum class Event { Connect, Accept, Reset, RemoteReset, Refused };
  void notify(Event event, const ConnectionRef& con);

  // Server side session table (keyed by our server cookie).
  std::optional<uint64_t> accept_session(const AsyncConnectionRef& con, const wire::ClientIdentFrame& ident,
                                         std::string* why);
  AsyncConnectionRef find_session(uint64_t server_cookie);
  void forget(AsyncConnection* con);  // closed for good
  void track(const AsyncConnectionRef& con);

 private:
  void dispatch_loop();
  void on_accept(Worker* worker, ServerSocket* listener);
  void close_all_connections();
  void drain_workers();
  // Waits until every session's messages were sent and acknowledged by its peer, or `deadline`.
  void linger_until_acknowledged(std::chrono::steady_clock::time_point deadline);

  // What every message reads or writes comes first, together: in per-thread mode (one client
  // messenger per connection) a messenger is as cold as its one connection at each message, and
  // these were spread over five lines of its 1.6 KiB. The objects' hot parts meet: the throttle's
  // count at its end, the dispatcher count, the registry's table pointer at its start.
  Throttle dispatch_throttle_;
  // Dispatchers only ever get added: readers take the published count (acquire) and read the
  // slots below it without a lock.
  std::atomic<size_t> dispatcher_count_{0};
  MessageRegistry registry_;
  static constexpr size_t kMaxDispatchers = 16;
  std::array<Dispatcher*, kMaxDispatchers> dispatchers_{};
  PerfCounters perf_;  // the per-message counters first

  config::Config conf_;
  EntityName name_;
  uint32_t nonce_;
  std::shared_ptr<NetworkStack> stack_;
  bool owns_stack_;  // false: shared with other messengers, which may still run on it
  SocketOptions socket_options_;
  MessengerTimings timings_;
  std::chrono::nanoseconds shutdown_linger_;  // ms.shutdown_linger
  // ms.auth and what it needs (keys, keyring); throws config::ConfigError.
  void configure_auth(const config::Config& conf);
  AuthSettings auth_;
  wire::FrameLimits limits_;
  uint64_t policy_throttle_bytes_;

  mutable std::mutex lock_;
  Policy default_policy_ = Policy::lossless_peer();
  std::map<EntityType, Policy> policies_;
  EntityAddrVec my_addrs_;
  std::vector<EntityAddr> bind_requests_;
  std::vector<std::pair<Worker*, std::unique_ptr<ServerSocket>>> listeners_;
  std::set<AsyncConnectionRef> connections_;
  std::map<std::string, AsyncConnectionRef> outgoing_;  // by peer msgr2 addr string
  SessionTable sessions_;  // server side, by server cookie
  std::atomic<uint64_t> global_seq_{0};
  bool started_ = false;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> closing_{false};
  bool stopped_ = false;
  std::condition_variable stopped_cv_;

  std::shared_ptr<admin::AdminServer> admin_;  // ms.admin_socket / ms.metrics_address, or null
  std::unique_ptr<CephxKeeper> cephx_keeper_;  // ms.auth=cephx: ticket renewal, MAuth answers
  // A connected monitor session, the one whose cephx global id is `cephx_global_id` when there is
  // one (the session our auth ticket came from); null when none is connected.
  ConnectionRef connected_monitor(uint64_t cephx_global_id) const;

  std::thread dispatch_thread_;
  std::mutex dispatch_lock_;
  std::condition_variable dispatch_cv_;
  std::deque<std::function<void()>> dispatch_queue_;
  bool dispatch_stop_ = false;
};

}  // namespace bypass::msgr
