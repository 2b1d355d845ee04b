// Transport-independent parts of the socket interface: socket owners, Worker, NetworkStack
// lifecycle (threads, CPU pinning) and the choice of a transport by `ms.type` among those
// registered (stack/transport_registry.h).
#include "stack/network_stack.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>

#include <algorithm>
#include <stdexcept>

#include "base/log.h"
#include "stack/transport_registry.h"

namespace bypass {

const char* socket_error_name(int negative_errno) {
  if (negative_errno == 0) return "OK";
  const char* name = strerrorname_np(negative_errno < 0 ? -negative_errno : negative_errno);
  return name != nullptr ? name : "unknown errno";
}

ConnectedSocket& ConnectedSocket::operator=(ConnectedSocket&& other) noexcept {
  if (this != &other) {
    close();
    impl_ = std::move(other.impl_);
  }
  return *this;
}

void ConnectedSocket::close() {
  if (impl_) {
    impl_->close();
    impl_.reset();
  }
}

ServerSocket& ServerSocket::operator=(ServerSocket&& other) noexcept {
  if (this != &other) {
    abort_accept();
    impl_ = std::move(other.impl_);
  }
  return *this;
}

void ServerSocket::abort_accept() {
  if (impl_) {
    impl_->abort_accept();
    impl_.reset();
  }
}

SocketOptions socket_options_from_config(const config::Config& conf) {
  SocketOptions opts;
  opts.nodelay = conf.get_bool("ms.tcp_nodelay");
  opts.rcvbuf_bytes = static_cast<int>(conf.get_size("ms.tcp_rcvbuf"));
  opts.sndbuf_bytes = static_cast<int>(conf.get_size("ms.tcp_sndbuf"));
  opts.connect_timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(conf.get_duration("ms.connect_timeout"));
  return opts;
}

ListenOptions listen_options_from_config(const config::Config& conf) {
  ListenOptions opts;
  opts.backlog = static_cast<int>(conf.get_int("ms.listen_backlog"));
  opts.reuse_port = conf.get_bool("posix.reuse_port");
  return opts;
}

Worker::Worker(unsigned id, std::unique_ptr<EventDriver> driver)
    : id_(id), center_(std::move(driver), "worker-" + std::to_string(id)) {}

Worker::~Worker() = default;

std::shared_ptr<NetworkStack> NetworkStack::create(const config::Config& conf) {
  return create(conf, conf.get_string("ms.type"));
}

std::shared_ptr<NetworkStack> NetworkStack::create(const config::Config& conf,
                                                   const std::string& type) {
  const TransportRegistry& transports = TransportRegistry::compiled_in();
  if (auto factory = transports.find(type)) return factory(conf);
  throw std::runtime_error("ms.type: unknown transport '" + type + "' (this build has " + transports.describe_names() +
                           ")");
}

NetworkStack::NetworkStack(const config::Config& conf, std::string type)
    : conf_(conf),
      type_(std::move(type)),
      worker_threads_(conf_.get_bool("ms.worker_threads")),
      shutdown_linger_(conf_.get_duration("ms.shutdown_linger")) {}

NetworkStack::~NetworkStack() { stop(); }

namespace {

// Every pinned CPU must be one this process may run on; a typo in ms.cpus must not silently
// leave a worker unpinned.
void check_cpus_usable(const std::vector<int>& cpus) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    throw std::runtime_error(std::string("ms.cpus: sched_getaffinity failed: ") + strerror(errno));
  }
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) {
      throw std::runtime_error("ms.cpus: CPU " + std::to_string(cpu) +
                               " is not available to this process (" +
                               std::to_string(CPU_COUNT(&allowed)) + " CPUs allowed)");
    }
  }
}

}  // namespace

void NetworkStack::start() {
  if (started_) return;
  if (!worker_threads_) {
    // The caller's thread is every worker's: it stays where the application placed it.
    take_over_loops();
    started_ = true;
    for (auto& w : workers_) w->on_thread_start();
    return;
  }
  check_cpus_usable(conf_.get_cpus("ms.cpus"));
  started_ = true;
  for (unsigned i = 0; i < workers_.size(); ++i) {
    Worker* w = workers_[i].get();
    spawn_worker(i, [w] {
      w->center().set_owner();
      w->on_thread_start();
      w->center().run();
      w->on_thread_stop();
    });
  }
}

void NetworkStack::spawn_worker(unsigned i, std::function<void()> body) {
  threads_.emplace_back(std::move(body));
  const std::vector<int> cpus = conf_.get_cpus("ms.cpus");
  const std::string name = "bypass-w" + std::to_string(i);
  pthread_setname_np(threads_.back().native_handle(), name.c_str());
  const std::vector<int> allowed = cpus.empty() ? unpinned_cpus_ : std::vector<int>{cpus[i % cpus.size()]};
  if (allowed.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : allowed)
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  const std::string text = config::format_cpu_list(allowed);
  const int rc = pthread_setaffinity_np(threads_.back().native_handle(), sizeof(set), &set);
  if (rc != 0) {
    // check_cpus_usable() already vetted ms.cpus, so this is a race with a cpuset change (or the
    // transport's choice is outside this process's cpuset: the worker then runs unpinned).
    BYPASS_LOG(Error, "stack", "worker %u: cannot pin to CPU %s: %s", i, text.c_str(), strerror(rc));
  } else {
    BYPASS_LOG(Debug, "stack", "worker %u pinned to CPU %s", i, text.c_str());
  }
}

void NetworkStack::join_workers() {
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void NetworkStack::take_over_loops() {
  poller_ = std::this_thread::get_id();
  for (auto& w : workers_) w->center().set_owner();
}

int NetworkStack::poll(std::chrono::nanoseconds max_wait) {
  if (!polled_here())
    throw std::logic_error(type_ + " stack: poll() on a thread that does not run its loops (ms.worker_threads "
                           "false: only the thread that started the stack polls it)");
  if (workers_.size() == 1) return workers_.front()->center().process_events(max_wait);
  int ran = 0;
  for (auto& w : workers_) ran += w->center().process_events(std::chrono::nanoseconds::zero());
  return ran;
}

void NetworkStack::pause(std::chrono::nanoseconds duration) {
  if (!polled_here()) {
    std::this_thread::sleep_for(duration);
    return;
  }
  const auto end = std::chrono::steady_clock::now() + duration;
  do {
    poll();
  } while (std::chrono::steady_clock::now() < end);
}

void NetworkStack::stop() { stop(shutdown_linger_); }

void NetworkStack::stop(std::chrono::nanoseconds linger) {
  if (!started_) return;
  // The thread that polled may be gone (the stack is released elsewhere): this one runs the loops
  // from now on, or the linger below would wait on loops nobody runs.
  if (!worker_threads_ && !polled_here()) take_over_loops();
  // Linger: the loops keep sending and retransmitting until the peers acknowledged everything
  // (checked on each worker, which owns its sockets) or the time is up. Polled: a stop is rare
  // and a millisecond of delay is nothing next to a round trip.
  const auto deadline = std::chrono::steady_clock::now() + linger;
  size_t waiting = 0;
  while (linger.count() > 0) {
    waiting = 0;
    for (unsigned i = 0; i < workers_.size(); ++i)
      workers_[i]->center().submit_and_wait([this, i, &waiting] { waiting += awaiting_acknowledgement(i); });
    const auto now = std::chrono::steady_clock::now();
    if (waiting == 0 || now >= deadline) break;
    pause(std::min<std::chrono::nanoseconds>(std::chrono::milliseconds(1), deadline - now));
  }
  if (waiting != 0) {
    BYPASS_LOG(Info, "stack", "%s: stopping with %zu unacknowledged after ms.shutdown_linger (%lld ms)",
               type_.c_str(), waiting,
               static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(linger).count()));
  }
  for (auto& w : workers_) w->center().stop();
  if (!worker_threads_) {
    // What a worker thread does once its loop was told to stop: run the closures still queued.
    for (auto& w : workers_) {
      w->center().run();
      w->on_thread_stop();
    }
    poller_ = {};
  }
  join_workers();
  started_ = false;
}

size_t NetworkStack::awaiting_acknowledgement(unsigned) { return 0; }

NetworkStack::Counters NetworkStack::transport_counters() { return {}; }

NetworkStack::WorkerReport NetworkStack::worker_report(unsigned) { return {}; }

BufferList NetworkStack::allocate_payload(size_t bytes, BufferSharing sharing) {
  BufferList out;
  if (bytes > 0) out.append(BufferSegment::allocate(bytes, sharing));
  return out;
}

Worker* NetworkStack::least_loaded_worker() {
  if (workers_.empty()) return nullptr;
  // Ties go round-robin. A socket is counted only once its worker thread opened it, so a burst of
  // picks (a messenger connecting to 64 peers at once) sees equal counts throughout and would
  // otherwise put every connection on the first worker.
  const size_t n = workers_.size();
  const size_t start = next_pick_.fetch_add(1, std::memory_order_relaxed) % n;
  size_t best = start;
  for (size_t i = 1; i < n; ++i) {
    const size_t candidate = (start + i) % n;
    if (workers_[candidate]->open_sockets.load(std::memory_order_relaxed) <
        workers_[best]->open_sockets.load(std::memory_order_relaxed))
      best = candidate;
  }
  return workers_[best].get();
}

}  // namespace bypass
