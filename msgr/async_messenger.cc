#include "msgr/async_messenger.h"

#include <openssl/rand.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "base/json.h"
#include "base/log.h"
#include "msgr/async_connection.h"
#include "msgr/mon_auth.h"

namespace bypass::msgr {

namespace {
uint64_t random_u64() {
  uint64_t v = 0;
  while (v == 0) {
    if (RAND_bytes(reinterpret_cast<unsigned char*>(&v), sizeof(v)) != 1) throw std::runtime_error("RAND_bytes failed");
  }
  return v;
}
}  // namespace

std::unique_ptr<Messenger> Messenger::create(const config::Config& conf, const EntityName& name) {
  return std::make_unique<AsyncMessenger>(conf, name, nullptr);
}

std::unique_ptr<Messenger> Messenger::create(const config::Config& conf, const EntityName& name,
                                             std::shared_ptr<NetworkStack> stack) {
  if (!stack) throw std::invalid_argument("Messenger::create: the shared network stack is null");
  return std::make_unique<AsyncMessenger>(conf, name, std::move(stack));
}

AsyncMessenger::AsyncMessenger(const config::Config& conf, const EntityName& name, std::shared_ptr<NetworkStack> stack)
    : dispatch_throttle_("dispatch_throttle_bytes", conf.get_size("ms.dispatch_throttle_bytes")),
      conf_(conf),
      name_(name),
      // Monitors use nonce 0 (clients address them as v2:IP:PORT/0), everyone else a random one.
      nonce_(name.type == EntityType::Mon ? 0 : static_cast<uint32_t>(random_u64())),
      owns_stack_(stack == nullptr) {
  timings_.keepalive_interval = conf.get_duration("ms.keepalive_interval");
  timings_.keepalive_timeout = conf.get_duration("ms.keepalive_timeout");
  timings_.backoff_min = conf.get_duration("ms.reconnect_backoff_min");
  timings_.backoff_max = conf.get_duration("ms.reconnect_backoff_max");
  timings_.standby_timeout = conf.get_duration("ms.connection_idle_timeout");
  shutdown_linger_ = conf.get_duration("ms.shutdown_linger");
  configure_auth(conf);
  if (auth_.method == wire::kAuthCephx)
    cephx_keeper_ = std::make_unique<CephxKeeper>(
        auth_, [this](uint64_t global_id) { return connected_monitor(global_id); }, perf_);
  uint64_t segment = conf.get_size("ms.max_frame_segment");
  uint64_t message = conf.get_size("ms.max_message_size");
  limits_.max_segment = static_cast<uint32_t>(std::min<uint64_t>(segment, message));
  limits_.max_data_segment = static_cast<uint32_t>(std::min<uint64_t>(message, 0xffffffffu));
  limits_.max_frame = message + 4096;  // the header segment on top of the message
  policy_throttle_bytes_ = conf.get_size("ms.throttle_bytes");
  int64_t throttle_messages = conf.get_int("ms.throttle_messages");
  if (policy_throttle_bytes_) default_policy_.throttle_bytes = std::make_shared<Throttle>("throttle_bytes", policy_throttle_bytes_);
  if (throttle_messages)
    default_policy_.throttle_messages = std::make_shared<Throttle>("throttle_messages", static_cast<uint64_t>(throttle_messages));
  stack_ = owns_stack_ ? NetworkStack::create(conf) : std::move(stack);
  socket_options_.nodelay = conf.get_bool("ms.tcp_nodelay");
  socket_options_.rcvbuf_bytes = static_cast<int>(conf.get_size("ms.tcp_rcvbuf"));
  socket_options_.sndbuf_bytes = static_cast<int>(conf.get_size("ms.tcp_sndbuf"));
  socket_options_.connect_timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(conf.get_duration("ms.connect_timeout"));
  admin_ = admin::AdminServer::acquire(conf_);  // bound now so a bad path fails create(); serves from start()
}

namespace {
// "secure crc", "crc,secure", "secure" -> CEPH_CON_MODE_* in that order; empty -> empty.
std::vector<uint32_t> parse_modes(const config::Config& conf, const char* key, bool auth_none) {
  std::vector<uint32_t> modes;
  std::string text = conf.get_string(key);
  for (char& c : text)
    if (c == ',') c = ' ';
  size_t pos = 0;
  while ((pos = text.find_first_not_of(' ', pos)) != std::string::npos) {
    size_t end = std::min(text.find(' ', pos), text.size());
    const std::string word = text.substr(pos, end - pos);
    pos = end;
    const uint32_t mode = word == "crc" ? wire::kConModeCrc : word == "secure" ? wire::kConModeSecure : 0;
    if (mode == 0)
      throw config::ConfigError(std::string(key) + ": '" + word + "' is not a mode; use crc and/or secure, "
                                "most preferred first (\"secure crc\")");
    if (std::find(modes.begin(), modes.end(), mode) == modes.end()) modes.push_back(mode);
  }
  if (auth_none && !modes.empty() && modes == std::vector<uint32_t>{wire::kConModeSecure})
    throw config::ConfigError(std::string(key) + "=secure needs ms.auth=cephx or shared_secret (auth none yields no key)");
  return modes;
}
}  // namespace

void AsyncMessenger::configure_auth(const config::Config& conf) {
  const std::string& auth = conf.get_string("ms.auth");
  auth_.method = auth == "shared_secret" ? wire::kAuthSharedSecret
                 : auth == "cephx"       ? wire::kAuthCephx
                                         : wire::kAuthNone;
  auth_.secret = conf.get_string("ms.secret");
  auth_.mode = conf.get_string("ms.mode") == "secure" ? wire::kConModeSecure : wire::kConModeCrc;
  auth_.rekey_after_frames = static_cast<uint64_t>(conf.get_int("ms.rekey_after_frames"));
  if (auth_.method == wire::kAuthSharedSecret && auth_.secret.empty())
    throw config::ConfigError("ms.auth=shared_secret needs ms.secret");
  if (auth_.mode == wire::kConModeSecure && auth_.method == wire::kAuthNone)
    throw config::ConfigError("ms.mode=secure needs ms.auth=cephx or shared_secret (auth none yields no key)");
  const bool none = auth_.method == wire::kAuthNone;
  auth_.mon_client_modes = parse_modes(conf, "ms.mon_client_mode", none);
  auth_.client_modes = parse_modes(conf, "ms.client_mode", none);
  auth_.service_modes = parse_modes(conf, "ms.service_mode", none);
  if (auth_.method != wire::kAuthCephx) return;
  const std::string& name = conf.get_string("ms.auth_name");
  if (!auth::CephxEntity::parse(name, &auth_.cephx_name))
    throw config::ConfigError("ms.auth_name: '" + name + "' is not an entity name like client.admin");
  const std::string& keyring = conf.get_string("ms.keyring");
  if (keyring.empty()) throw config::ConfigError("ms.auth=cephx needs ms.keyring (a Ceph keyring file)");
  try {
    auth_.keyring = std::make_shared<const auth::Keyring>(auth::Keyring::load(keyring));
  } catch (const auth::AuthError& e) {
    throw config::ConfigError(std::string("ms.keyring: ") + e.what());
  }
  auth_.tickets = std::make_shared<auth::CephxTicketStore>();
  auth_.cephx_secrets = auth::CephxServiceSecrets::process();
  auth_.cephx_ticket_ttl = std::chrono::duration_cast<std::chrono::seconds>(conf.get_duration("ms.cephx_ticket_ttl"));
}

AsyncMessenger::~AsyncMessenger() {
  shutdown();
  wait();
}

void AsyncMessenger::set_default_policy(const Policy& policy) {
  std::lock_guard<std::mutex> guard(lock_);
  default_policy_ = policy;
}

void AsyncMessenger::set_policy(EntityType peer_type, const Policy& policy) {
  std::lock_guard<std::mutex> guard(lock_);
  policies_[peer_type] = policy;
}

Policy AsyncMessenger::policy_for(EntityType peer_type) const {
  std::lock_guard<std::mutex> guard(lock_);
  auto it = policies_.find(peer_type);
  return it != policies_.end() ? it->second : default_policy_;
}

void AsyncMessenger::add_dispatcher(Dispatcher* dispatcher) {
  std::lock_guard<std::mutex> guard(lock_);
  const size_t n = dispatcher_count_.load(std::memory_order_relaxed);
  if (n == kMaxDispatchers)
    throw std::length_error("Messenger::add_dispatcher: at most " + std::to_string(kMaxDispatchers) + " dispatchers");
  dispatchers_[n] = dispatcher;
  dispatcher_count_.store(n + 1, std::memory_order_release);
}

HandshakeSettings AsyncMessenger::handshake_settings(bool lossy) const {
  HandshakeSettings s;
  s.my_name = name_;
  {
    std::lock_guard<std::mutex> guard(lock_);
    s.my_addrs = my_addrs_;
  }
  s.lossy = lossy;
  s.auth = auth_;
  s.limits = limits_;
  return s;
}

uint64_t AsyncMessenger::next_global_seq(uint64_t at_least) {
  uint64_t cur = global_seq_.load();
  uint64_t next;
  do {
    next = std::max(cur, at_least) + 1;
  } while (!global_seq_.compare_exchange_weak(cur, next));
  return next;
}

uint64_t AsyncMessenger::new_cookie() { return random_u64(); }

int AsyncMessenger::bind(const EntityAddr& addr) {
  std::lock_guard<std::mutex> guard(lock_);
  if (started_) return -EINVAL;
  if (addr.family() != AF_INET && addr.family() != AF_INET6) return -EAFNOSUPPORT;
  bind_requests_.push_back(addr);
  return 0;
}

EntityAddrVec AsyncMessenger::my_addrs() const {
  std::lock_guard<std::mutex> guard(lock_);
  return my_addrs_;
}

int AsyncMessenger::start() {
  std::vector<EntityAddr> requests;
  {
    std::lock_guard<std::mutex> guard(lock_);
    if (started_) return -EINVAL;
    started_ = true;
    requests = bind_requests_;
  }
  try {
    stack_->start();
  } catch (...) {
    // The transport did not start (e.g. a duplicate IPv6 address): shutdown() must not wait on
    // workers that do not run.
    std::lock_guard<std::mutex> guard(lock_);
    started_ = false;
    throw;
  }
  if (admin_) admin_->attach(stack_.get(), this, &conf_);
  dispatch_thread_ = std::thread([this] { dispatch_loop(); });
  if (cephx_keeper_) cephx_keeper_->start();
  ListenOptions lopts;
  lopts.backlog = static_cast<int>(conf_.get_int("ms.listen_backlog"));
  for (EntityAddr addr : requests) {
    unsigned n = stack_->listen_per_worker() ? stack_->num_workers() : 1;
    for (unsigned i = 0; i < n; ++i) {
      Worker* w = stack_->worker(i);
      int r = 0;
      w->center().submit_and_wait([&] {
        auto listener = std::make_unique<ServerSocket>();
        SocketAddress sa = SocketAddress::from_sockaddr(addr.sockaddr_ptr(), addr.sockaddr_len());
        r = w->listen(sa, lopts, socket_options_, listener.get());
        if (r < 0) return;
        if (addr.port() == 0) addr.set_port(listener->local_address().port());
        ServerSocket* raw = listener.get();
        w->center().create_file_event(raw->fd(), kEventReadable, [this, w, raw](int, int) { on_accept(w, raw); });
        std::lock_guard<std::mutex> guard(lock_);
        listeners_.emplace_back(w, std::move(listener));
      });
      if (r < 0) {
        BYPASS_LOG(Error, "msgr", "%s: cannot listen on %s: %s", name_.to_string().c_str(), addr.to_string().c_str(),
                   socket_error_name(r));
        return r;
      }
    }
    addr.type = EntityAddr::kMsgr2;
    addr.nonce = nonce_;
    std::lock_guard<std::mutex> guard(lock_);
    my_addrs_.addrs.push_back(addr);
    BYPASS_LOG(Info, "msgr", "%s listening on %s", name_.to_string().c_str(), addr.to_string().c_str());
  }
  return 0;
}

void AsyncMessenger::on_accept(Worker* worker, ServerSocket* listener) {
  // While shutdown lingers the listener still accepts: a client may resume its session and take
  // what it holds for replay (accept_session() refuses new sessions from then on).
  for (int i = 0; i < 64 && !closing(); ++i) {
    ConnectedSocket sock;
    SocketAddress peer;
    int r = listener->accept(&sock, socket_options_, &peer, worker);
    if (r == -EAGAIN) return;
    if (r < 0) {
      BYPASS_LOG(Warn, "msgr", "accept failed: %s", socket_error_name(r));
      return;
    }
    auto con = std::make_shared<AsyncConnection>(*this, worker, policy_for(EntityType::Client), EntityType::Client, false);
    track(con);
    con->start_accept(std::move(sock), peer);
  }
}

void AsyncMessenger::track(const AsyncConnectionRef& con) {
  std::lock_guard<std::mutex> guard(lock_);
  connections_.insert(con);
}

void AsyncMessenger::forget(AsyncConnection* con) {
  AsyncConnectionRef keep;  // destroy outside the lock
  std::lock_guard<std::mutex> guard(lock_);
  for (auto it = connections_.begin(); it != connections_.end(); ++it) {
    if (it->get() == con) {
      keep = *it;
      connections_.erase(it);
      break;
    }
  }
  for (auto it = outgoing_.begin(); it != outgoing_.end();) {
    it = it->second.get() == con ? outgoing_.erase(it) : std::next(it);
  }
  sessions_.remove(con);
  // Hand the last reference to the dispatch thread so the object is not destroyed inside one of
  // its own member functions.
  if (keep) {
    std::lock_guard<std::mutex> dguard(dispatch_lock_);
    if (!dispatch_stop_) {
      dispatch_queue_.push_back([keep] {});
      dispatch_cv_.notify_one();
    }
  }
}

std::optional<uint64_t> AsyncMessenger::accept_session(const AsyncConnectionRef& con,
                                                       const wire::ClientIdentFrame& ident, std::string* why) {
  if (stopping()) {
    *why = "messenger is shutting down";
    return std::nullopt;
  }
  uint64_t cookie = new_cookie();
  std::vector<AsyncConnectionRef> replaced, stale;
  {
    std::lock_guard<std::mutex> guard(lock_);
    // The same client incarnation identifying again (its earlier attempt failed before it saw our
    // SERVER_IDENT): the earlier session never carried a message; retire it quietly.
    stale = sessions_.with_client_cookie(ident.cookie, con.get());
    // The same client entity (addresses + cookie changed) came back with a new session: it
    // restarted, so any session we kept for its old incarnation is dead.
    replaced = sessions_.with_addrs_not_cookie(ident.addrs, ident.cookie, con.get());
    sessions_.add(cookie, con, ident.cookie, ident.addrs);
  }
  for (auto& old : replaced) {
    notify(Event::RemoteReset, old);
    old->mark_down();
  }
  for (auto& old : stale) old->mark_down();
  return cookie;
}

AsyncConnectionRef AsyncMessenger::find_session(uint64_t server_cookie) {
  std::lock_guard<std::mutex> guard(lock_);
  return sessions_.find(server_cookie);
}

ConnectionRef AsyncMessenger::connect_to(EntityType peer_type, const EntityAddrVec& addrs) {
  const EntityAddr* addr = addrs.msgr2_addr();
  std::string key = addr ? addr->to_string() : "";
  AsyncConnectionRef con;
  {
    std::lock_guard<std::mutex> guard(lock_);
    auto it = outgoing_.find(key);
    if (it != outgoing_.end()) return it->second;
    auto policy_it = policies_.find(peer_type);
    Policy policy = policy_it != policies_.end() ? policy_it->second : default_policy_;
    con = std::make_shared<AsyncConnection>(*this, stack_->least_loaded_worker(), policy, peer_type, true);
    connections_.insert(con);
    outgoing_[key] = con;
  }
  con->worker()->center().dispatch_external([con, addrs] { con->start_connect(addrs); });
  return con;
}

void AsyncMessenger::mark_down(const EntityAddrVec& addrs) {
  std::vector<AsyncConnectionRef> victims;
  {
    std::lock_guard<std::mutex> guard(lock_);
    for (auto& con : connections_)
      if (con->peer_addrs() == addrs) victims.push_back(con);
  }
  for (auto& con : victims) con->mark_down();
}

void AsyncMessenger::mark_down_all() {
  std::vector<AsyncConnectionRef> victims;
  {
    std::lock_guard<std::mutex> guard(lock_);
    victims.assign(connections_.begin(), connections_.end());
  }
  for (auto& con : victims) con->mark_down();
}

ConnectionRef AsyncMessenger::connected_monitor(uint64_t cephx_global_id) const {
  std::lock_guard<std::mutex> guard(lock_);
  ConnectionRef any;
  for (const auto& [addr, con] : outgoing_) {
    if (con->peer_name().type != EntityType::Mon || !con->is_connected()) continue;
    if (cephx_global_id != 0 && con->cephx_mon_session().global_id == cephx_global_id) return con;
    if (!any) any = con;
  }
  return any;
}

void AsyncMessenger::deliver(const MessageRef& m, const Policy& policy, uint64_t size) {
  // The type first: it is in the message's first line, cephx_keeper_ in a cold line of this object.
  if ((m->type() == kMsgAuth || m->type() == kMsgAuthReply) && cephx_keeper_ && cephx_keeper_->intercept(m)) {
    dispatch_throttle_.put(size);
    if (policy.throttle_bytes) policy.throttle_bytes->put(size);
    if (policy.throttle_messages) policy.throttle_messages->put(1);
    return;
  }
  const size_t count = dispatcher_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) {
    Dispatcher* d = dispatchers_[i];
    if (d->ms_can_fast_dispatch(*m)) {
      d->ms_fast_dispatch(m);
      dispatch_throttle_.put(size);
      if (policy.throttle_bytes) policy.throttle_bytes->put(size);
      if (policy.throttle_messages) policy.throttle_messages->put(1);
      return;
    }
  }
  // Queued dispatch: the closure keeps the policy's throttles alive until it ran.
  auto done = [this, tb = policy.throttle_bytes, tm = policy.throttle_messages, size] {
    dispatch_throttle_.put(size);
    if (tb) tb->put(size);
    if (tm) tm->put(1);
  };
  std::lock_guard<std::mutex> guard(dispatch_lock_);
  if (dispatch_stop_) {
    done();
    return;
  }
  // The message's buffers may share storage with what stays on this worker (the rest of a read
  // chunk): their counts become atomic before the dispatch thread holds views (base/buffer_storage.h).
  m->front().share_across_threads();
  std::as_const(*m).middle().share_across_threads();  // const: makes no list
  m->data().share_across_threads();
  dispatch_queue_.push_back([this, count, m, done = std::move(done)] {
    for (size_t i = 0; i < count; ++i)
      if (dispatchers_[i]->ms_dispatch(m)) break;
    done();
  });
  dispatch_cv_.notify_one();
}

void AsyncMessenger::notify(Event event, const ConnectionRef& con) {
  const size_t count = dispatcher_count_.load(std::memory_order_acquire);
  std::lock_guard<std::mutex> guard(dispatch_lock_);
  if (dispatch_stop_) return;
  dispatch_queue_.push_back([this, count, event, con] {
    for (size_t i = 0; i < count; ++i) {
      Dispatcher* d = dispatchers_[i];
      switch (event) {
        case Event::Connect: d->ms_handle_connect(con); break;
        case Event::Accept: d->ms_handle_accept(con); break;
        case Event::Reset: if (d->ms_handle_reset(con)) return; break;
        case Event::RemoteReset: d->ms_handle_remote_reset(con); break;
        case Event::Refused: if (d->ms_handle_refused(con)) return; break;
      }
    }
  });
  dispatch_cv_.notify_one();
}

void AsyncMessenger::dispatch_loop() {
  for (;;) {
    std::function<void()> item;
    {
      std::unique_lock<std::mutex> guard(dispatch_lock_);
      dispatch_cv_.wait(guard, [this] { return dispatch_stop_ || !dispatch_queue_.empty(); });
      if (dispatch_queue_.empty()) return;  // stopping and drained
      item = std::move(dispatch_queue_.front());
      dispatch_queue_.pop_front();
    }
    item();
  }
}

void AsyncMessenger::shutdown() {
  bool was_started;
  {
    std::lock_guard<std::mutex> guard(lock_);
    if (stopping_.exchange(true)) return;
    was_started = started_;
  }
  if (admin_) {
    admin_->detach(stack_.get(), this);  // waits for a command that is reading this messenger
    admin_.reset();
  }
  if (cephx_keeper_) cephx_keeper_->stop();
  if (was_started) {
    const auto deadline = std::chrono::steady_clock::now() + shutdown_linger_;
    linger_until_acknowledged(deadline);
    closing_.store(true, std::memory_order_release);
    close_all_connections();
    for (unsigned i = 0; i < stack_->num_workers(); ++i) {
      Worker* w = stack_->worker(i);
      w->center().submit_and_wait([&] {
        std::lock_guard<std::mutex> guard(lock_);
        for (auto& [owner, listener] : listeners_) {
          if (owner != w || !*listener) continue;  // only the owning worker touches its listener
          w->center().delete_file_event(listener->fd(), kEventReadable);
          listener->abort_accept();
        }
      });
    }
    if (owns_stack_) {
      // What is left of the linger goes to the transport: closed sockets still send their FIN.
      stack_->stop(std::max<std::chrono::nanoseconds>(std::chrono::nanoseconds(0),
                                                      deadline - std::chrono::steady_clock::now()));
    } else {
      drain_workers();
    }
    {
      std::lock_guard<std::mutex> guard(lock_);
      listeners_.clear();
    }
    {
      std::lock_guard<std::mutex> guard(dispatch_lock_);
      dispatch_stop_ = true;
      dispatch_cv_.notify_all();
    }
    if (dispatch_thread_.joinable()) dispatch_thread_.join();
  }
  {
    std::lock_guard<std::mutex> guard(lock_);
    connections_.clear();
    outgoing_.clear();
    sessions_.clear();
    stopped_ = true;
  }
  stopped_cv_.notify_all();
}

void AsyncMessenger::linger_until_acknowledged(std::chrono::steady_clock::time_point deadline) {
  if (shutdown_linger_.count() <= 0) return;  // ms.shutdown_linger=0: close at once
  // Each session is asked on its own worker (its queues live there). Polled: a shutdown is rare
  // and a millisecond is nothing next to the round trip an acknowledgement takes.
  size_t waiting = 0;
  for (;;) {
    std::map<Worker*, std::vector<AsyncConnectionRef>> by_worker;
    {
      std::lock_guard<std::mutex> guard(lock_);
      for (const auto& con : connections_) by_worker[con->worker()].push_back(con);
    }
    waiting = 0;
    for (auto& [w, cons] : by_worker) {
      w->center().submit_and_wait([&, w = w] {
        for (const auto& con : cons) {
          // A session that moved meanwhile is asked again in the next round.
          if (con->worker() != w || con->awaiting_acknowledgement()) ++waiting;
        }
      });
    }
    const auto now = std::chrono::steady_clock::now();
    if (waiting == 0 || now >= deadline) break;
    // A stack without worker threads polled by this thread runs its loops meanwhile.
    stack_->pause(std::min<std::chrono::nanoseconds>(std::chrono::milliseconds(1), deadline - now));
  }
  if (waiting != 0) {
    BYPASS_LOG(Info, "msgr", "%s: shutdown: %zu sessions still hold unacknowledged messages after ms.shutdown_linger "
               "(%lld ms); they are dropped", name_.to_string().c_str(), waiting,
               static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(shutdown_linger_).count()));
  }
}

void AsyncMessenger::close_all_connections() {
  std::vector<AsyncConnectionRef> all;
  {
    std::lock_guard<std::mutex> guard(lock_);
    all.assign(connections_.begin(), connections_.end());
  }
  // close() runs only on the worker a session lives on, and a session may move to the worker
  // that accepted its client's reconnection while we are on the way: follow it. Each move is one
  // queued hand-over, so a few hops suffice; a session left open on a shared stack would keep
  // calling into this messenger after it is gone.
  constexpr int kMaxHops = 16;
  for (auto& con : all) {
    bool closed = false;
    for (int hop = 0; hop < kMaxHops && !closed; ++hop) {
      Worker* w = con->worker();
      w->center().submit_and_wait([&] {
        if (con->worker() != w) return;
        con->close("messenger shutdown", false);
        closed = true;
      });
    }
    if (!closed) BYPASS_LOG(Error, "msgr", "%s: a session kept moving between workers during shutdown", name_.to_string().c_str());
  }
}

void AsyncMessenger::drain_workers() {
  // A shared stack keeps running after this messenger is gone, so closures its connections queued
  // on the workers (flushes, session hand-overs between workers) must run before shutdown()
  // returns. Two rounds: a closure run in the first round may hand work to another worker.
  for (int round = 0; round < 2; ++round) {
    // On the thread that polls the stack, submit_and_wait would run inline, ahead of what is
    // queued: a poll runs the queued closures instead.
    if (stack_->polled_here()) {
      stack_->poll();
      continue;
    }
    for (unsigned i = 0; i < stack_->num_workers(); ++i) stack_->worker(i)->center().submit_and_wait([] {});
  }
}

void AsyncMessenger::wait() {
  std::unique_lock<std::mutex> guard(lock_);
  stopped_cv_.wait(guard, [this] { return stopped_; });
}

BufferList AsyncMessenger::allocate_payload(size_t bytes) { return stack_->allocate_payload(bytes); }

std::string AsyncMessenger::perf_dump_json() const {
  size_t connections;
  {
    std::lock_guard<std::mutex> guard(lock_);
    connections = connections_.size();
  }
  Json j;
  j.begin_object()
      .field("name", name_.to_string())
      .field("connections", uint64_t{connections})
      .field("dispatch_throttle_bytes", uint64_t{dispatch_throttle_.current()})
      .key("counters")
      .begin_object();
  perf_.for_each([&j](const char* name, uint64_t value) { j.field(name, value); });
  return j.end_object().end_object().str();
}

}  // namespace bypass::msgr
