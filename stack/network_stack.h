// The socket interface every transport implements and the messenger is written against.
//
// NetworkStack (one per process and transport) owns N Workers; each Worker owns one EventCenter and
// runs on one pinned thread (an lcore for dpdk), or, with ms.worker_threads false, on the thread
// that started the stack, which runs every worker's loop itself (NetworkStack::poll: an application
// that polls in a loop of its own, as fio's job thread does). Sockets belong to the worker that
// created them and are used only on that worker's thread. All calls are non-blocking; errors are negative errno values
// (-EAGAIN: try again when the event fires; -ECONNREFUSED, -ETIMEDOUT, -ECONNRESET, -EPIPE ...).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "config/config.h"
#include "base/buffer_list.h"
#include "stack/event_center.h"

namespace bypass {

// An IPv4 or IPv6 socket address.
class SocketAddress {
 public:
  SocketAddress() = default;
  // An IPv4 address from numbers in host byte order (no parsing, no byte-order slips at call sites).
  static SocketAddress ipv4(uint32_t host_order_ip, uint16_t port);
  // An IPv6 address from its 16 octets in network order.
  static SocketAddress ipv6(const std::array<uint8_t, 16>& octets, uint16_t port);
  // A copy of what the kernel or a transport filled in (accept, getsockname); AF_INET or AF_INET6.
  static SocketAddress from_sockaddr(const sockaddr* sa, socklen_t len);
  // "1.2.3.4:5", "[::1]:5", "localhost:5" is not accepted (no resolver on the hot path).
  // Returns false and leaves *out untouched on a malformed string.
  static bool parse(std::string_view text, SocketAddress* out);

  int family() const { return storage_.ss_family; }  // AF_INET, AF_INET6, or AF_UNSPEC when unset
  bool is_ipv4() const { return family() == AF_INET; }   // every transport takes either family
  bool is_ipv6() const { return family() == AF_INET6; }  // dpdk: with dpdk.host_ipv6 set
  uint32_t ipv4_host_order() const;  // only for is_ipv4()
  std::array<uint8_t, 16> ipv6_octets() const;  // only for is_ipv6(); network order
  uint16_t port() const;  // host byte order
  void set_port(uint16_t port);  // host byte order; e.g. to fill in an ephemeral port
  // For the kernel's socket calls (bind, connect), with sockaddr_len().
  const sockaddr* sockaddr_ptr() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t sockaddr_len() const;  // the family's sockaddr size, not the storage's; 0 when unset
  std::string to_string() const;  // "1.2.3.4:5" or "[::1]:5", the form parse() accepts
  bool operator==(const SocketAddress& other) const;  // same family, address and port

 private:
  sockaddr_storage storage_{};
};

// Per-socket options a transport applies on connect and accept (socket_options_from_config()).
struct SocketOptions {
  bool nodelay = true;  // TCP_NODELAY: small messages go out at once, not held back by Nagle
  int rcvbuf_bytes = 0;  // 0 = transport default
  int sndbuf_bytes = 0;  // 0 = transport default
  int priority = -1;     // SO_PRIORITY / traffic class; -1 = leave alone
  // A connect still in progress after this fails with -ETIMEDOUT.
  std::chrono::milliseconds connect_timeout{10000};
};

// Human-readable name of a negative errno returned by this interface ("ECONNREFUSED").
const char* socket_error_name(int negative_errno);

// What a transport implements for one connection; ConnectedSocket owns it and forwards to it.
class ConnectedSocketImpl {
 public:
  virtual ~ConnectedSocketImpl() = default;
  // Non-blocking connect progress: 1 connected, 0 still in progress (wait for writable), <0 error.
  virtual int is_connected() = 0;
  // Copying read into buf. Returns bytes (>0), 0 at orderly EOF, -EAGAIN, or another -errno.
  virtual ssize_t read(char* buf, size_t len) = 0;
  // Hands over up to max_len received bytes as segments (zero-copy where the transport can).
  virtual ssize_t zero_copy_read(BufferList& out, size_t max_len) = 0;
  // Sends and takes ownership of the bytes it accepted (they are removed from the front of `data`).
  // Returns bytes accepted (may be fewer than data.length(): wait for writable), or -errno.
  // `more`: further data follows immediately (MSG_MORE/cork-like hint).
  virtual ssize_t send(BufferList& data, bool more) = 0;
  virtual void shutdown() = 0;  // no more sends; the peer reads EOF
  virtual void close() = 0;  // releases the connection; no call but the destructor follows
  virtual int fd() const = 0;   // kernel fd or userspace event id
  virtual SocketAddress local_address() const = 0;  // this end's address and port
  virtual SocketAddress peer_address() const = 0;  // the remote end's address and port
};

// Movable owner of one connected socket.
class ConnectedSocket {
 public:
  ConnectedSocket() = default;
  // Takes over a transport's socket (what Worker::connect and accept produce).
  explicit ConnectedSocket(std::unique_ptr<ConnectedSocketImpl> impl) : impl_(std::move(impl)) {}
  ConnectedSocket(ConnectedSocket&&) noexcept = default;  // the source is left empty
  ConnectedSocket& operator=(ConnectedSocket&& other) noexcept;  // closes the socket held before
  ~ConnectedSocket() { close(); }

  // False when empty (default-constructed, moved from or closed): no other call is valid then.
  explicit operator bool() const { return impl_ != nullptr; }
  int is_connected() { return impl_->is_connected(); }  // see ConnectedSocketImpl::is_connected()
  ssize_t read(char* buf, size_t len) { return impl_->read(buf, len); }  // see ConnectedSocketImpl::read()
  // See ConnectedSocketImpl::zero_copy_read().
  ssize_t zero_copy_read(BufferList& out, size_t max_len) { return impl_->zero_copy_read(out, max_len); }
  // See ConnectedSocketImpl::send().
  ssize_t send(BufferList& data, bool more) { return impl_->send(data, more); }
  void shutdown() { impl_->shutdown(); }  // no more sends; the peer reads EOF
  void close();  // closes and empties; a no-op when already empty (the destructor calls it)
  int fd() const { return impl_->fd(); }  // the id to register file events for with the worker's EventCenter
  SocketAddress local_address() const { return impl_->local_address(); }  // this end's address
  SocketAddress peer_address() const { return impl_->peer_address(); }  // the remote end's address
  ConnectedSocketImpl* impl() { return impl_.get(); }  // the transport's object, for transport-specific calls

 private:
  std::unique_ptr<ConnectedSocketImpl> impl_;
};

class Worker;

// What a transport implements for one listening socket; ServerSocket owns it and forwards to it.
class ServerSocketImpl {
 public:
  virtual ~ServerSocketImpl() = default;
  // Returns 0 and fills *sock (owned by `worker`, normally this one) or -EAGAIN / -errno.
  virtual int accept(ConnectedSocket* sock, const SocketOptions& opts, SocketAddress* peer,
                     Worker* worker) = 0;
  virtual void abort_accept() = 0;  // stops listening; no call but the destructor follows
  virtual int fd() const = 0;  // readable when a connection waits to be accepted
  // Where it listens (the chosen port when it asked for port 0).
  virtual SocketAddress local_address() const = 0;
};

// Movable owner of one listening socket.
class ServerSocket {
 public:
  ServerSocket() = default;
  // Takes over a transport's listener (what Worker::listen produces).
  explicit ServerSocket(std::unique_ptr<ServerSocketImpl> impl) : impl_(std::move(impl)) {}
  ServerSocket(ServerSocket&&) noexcept = default;  // the source is left empty
  ServerSocket& operator=(ServerSocket&& other) noexcept;  // stops the listener held before
  ~ServerSocket() { abort_accept(); }

  // False when empty (default-constructed, moved from or aborted): no other call is valid then.
  explicit operator bool() const { return impl_ != nullptr; }
  // See ServerSocketImpl::accept(); `opts` are applied to the accepted socket.
  int accept(ConnectedSocket* sock, const SocketOptions& opts, SocketAddress* peer, Worker* worker) {
    return impl_->accept(sock, opts, peer, worker);
  }
  void abort_accept();  // stops listening and empties; a no-op when already empty
  int fd() const { return impl_->fd(); }  // readable when a connection waits to be accepted
  // Where it listens (the chosen port after port 0).
  SocketAddress local_address() const { return impl_->local_address(); }

 private:
  std::unique_ptr<ServerSocketImpl> impl_;
};

// Options of a listening socket (listen_options_from_config()).
struct ListenOptions {
  int backlog = 512;  // pending connections the transport queues before refusing more
  bool reuse_port = true;  // every worker listens on the same port; the kernel/RSS spreads flows
};

// The options above as configured: ms.tcp_nodelay, ms.tcp_rcvbuf, ms.tcp_sndbuf, ms.connect_timeout;
// ms.listen_backlog and posix.reuse_port.
SocketOptions socket_options_from_config(const config::Config& conf);
// See socket_options_from_config().
ListenOptions listen_options_from_config(const config::Config& conf);

// One event loop thread of a transport and the sockets on it; transports subclass it to create
// their sockets. A socket is used only on the thread of the worker that created it.
class Worker {
 public:
  // Worker `id` (0-based within its stack), waiting through `driver` (epoll or a transport's poller).
  Worker(unsigned id, std::unique_ptr<EventDriver> driver);
  virtual ~Worker();

  unsigned id() const { return id_; }  // index within its NetworkStack
  EventCenter& center() { return center_; }  // the loop its sockets' events and timers run on

  // Owner thread only. Port 0 picks an ephemeral port (see ServerSocket::local_address()).
  virtual int listen(const SocketAddress& addr, const ListenOptions& lopts, const SocketOptions& sopts,
                     ServerSocket* out) = 0;
  // Starts a non-blocking connect; poll is_connected() when the fd turns writable.
  virtual int connect(const SocketAddress& addr, const SocketOptions& opts, ConnectedSocket* out) = 0;

  // Called on the worker thread before the loop starts and after it ends (transport hooks).
  virtual void on_thread_start() {}
  virtual void on_thread_stop() {}  // see on_thread_start()

  // Sockets currently open on this worker (for leak checks and perf dumps).
  std::atomic<int> open_sockets{0};

 private:
  unsigned id_;
  EventCenter center_;
};

// One transport in a process (posix, dpdk, rdma, rsocket) and its workers; see the file comment.
class NetworkStack {
 public:
  // Builds the transport named by `ms.type` with `ms.workers` workers. Throws std::runtime_error
  // with a clear message when the transport cannot run here (e.g. no RDMA device).
  static std::shared_ptr<NetworkStack> create(const config::Config& conf);
  // The same with the transport named by `type` instead of `ms.type`.
  static std::shared_ptr<NetworkStack> create(const config::Config& conf, const std::string& type);

  virtual ~NetworkStack();
  // Spawns one thread per worker, pinned to `ms.cpus` (round-robin; empty = unpinned, or kept to
  // the CPUs the transport chose: the dpdk stack's port's NUMA node). Without worker threads
  // (ms.worker_threads false) the calling thread becomes every worker's thread instead: their loops
  // run only inside poll() and pause() (and the waits of the stack and the messenger, which pause())
  // on this thread, so it polls whenever it waits for the network.
  virtual void start();
  // Stops every loop and joins the threads, after up to `ms.shutdown_linger` during which the
  // workers keep running while their sockets hold data or a FIN the peers have not acknowledged
  // (a clean stop loses nothing a live peer can still take). Idempotent. Without worker threads it
  // runs the loops itself meanwhile: call it on the thread that started the stack, or on another
  // once that one polls no more (it then takes the loops over).
  void stop();
  // The same with `linger` instead of ms.shutdown_linger; 0 stops at once, dropping what the
  // peers have not acknowledged.
  void stop(std::chrono::nanoseconds linger);

  // Whether the workers run on threads of their own (ms.worker_threads; see start()).
  bool worker_threads() const { return worker_threads_; }
  // True on the thread that runs the workers' loops of a started stack without worker threads.
  bool polled_here() const { return !worker_threads_ && started_ && poller_ == std::this_thread::get_id(); }
  // Without worker threads, on the thread that started the stack: one iteration of every worker's
  // loop (received packets, fired socket events, due timers, closures other threads dispatched),
  // without blocking. Returns the callbacks run, 0 when there was nothing to do. Throws
  // std::logic_error on any other thread or stack: only one thread may run a worker's loop.
  // With `max_wait` and a single worker, that loop may wait up to max_wait for an event in its
  // driver (epoll sleeps until a socket is ready; a busy-polling driver returns at once), so an
  // idle caller sleeps as a worker thread would. With several workers it never waits (one may
  // have work while another waits).
  int poll(std::chrono::nanoseconds max_wait = std::chrono::nanoseconds::zero());
  // Waits about `duration`: polls meanwhile where polled_here() (what the caller waits for may
  // need the loops: an acknowledgement, a timer, a closure), sleeps on any other thread.
  void pause(std::chrono::nanoseconds duration);

  const std::string& type() const { return type_; }  // "posix", "dpdk", "rdma", "rsocket"
  unsigned num_workers() const { return static_cast<unsigned>(workers_.size()); }  // `ms.workers`
  Worker* worker(unsigned i) { return workers_.at(i).get(); }  // 0 <= i < num_workers()
  // The worker with the fewest open sockets, ties taken in turn (connections are spread evenly).
  Worker* least_loaded_worker();
  // True when each worker should listen on its own (SO_REUSEPORT / RSS); false when one listener
  // accepts for all and hands sockets to other workers.
  virtual bool listen_per_worker() const { return true; }
  const config::Config& conf() const { return conf_; }  // the configuration it was created with

  // Cumulative transport counters by name since the stack was created, for benchmark reports:
  // posix counts bytes and connections; dpdk adds its port's and TCP/IP stack's counters. Call
  // from any thread other than a worker's while the stack runs (values may be read on workers).
  // Transports without counters return none.
  using Counters = std::vector<std::pair<std::string, uint64_t>>;
  virtual Counters transport_counters();  // the base class has none

  // What the admin socket and /metrics show of one worker: its own transport counters (every one
  // monotonic) and its TCP connections where the transport keeps them (dpdk; the kernel keeps
  // posix's). Called on worker i's thread, which owns the data, so traffic never stops for it.
  struct SocketReport {
    std::string local;   // "10.0.0.1:6800"
    std::string remote;  // the peer's address and port
    std::string state;   // "ESTABLISHED", "TIME-WAIT", ...
    Counters details;    // transport specific: cwnd, srtt_us, retransmits, bytes_in, ...
  };
  // One worker's part of the report.
  struct WorkerReport {
    Counters counters;                  // the worker's transport counters, all monotonic
    Counters gauges;                    // values that go up and down (rdma: bytes pinned)
    std::vector<SocketReport> sockets;  // its TCP connections (none where the kernel keeps them)
  };
  // Worker i's report; call on worker i's thread only (its data is not shared).
  virtual WorkerReport worker_report(unsigned i);
  // Counters of the device under the stack (dpdk: port 0), from any thread; none for the others.
  virtual Counters port_counters() { return {}; }

  // Memory for a message payload of `bytes`, to fill and send (a Message's data, a send()): on
  // rdma it comes from memory registered with the device once, at start-up
  // (rdma.registered_memory), so a payload run of at least rdma.rendezvous_threshold bytes is read
  // by the peer straight from it, with no copy and no registration on the way; the other
  // transports, and rdma when that memory is used up, give ordinary memory. The list holds one
  // segment or several (rdma: up to 1 MiB each): fill them in order (segments()). Any thread.
  virtual BufferList allocate_payload(size_t bytes, BufferSharing sharing = BufferSharing::worker_local);

 protected:
  // Transports construct it through create(), then add their workers with add_worker().
  NetworkStack(const config::Config& conf, std::string type);
  // On worker i's thread: how much of what worker i's sockets sent (data, FIN) the peers have
  // not acknowledged yet, in the transport's units (connections, sends in flight); stop() lingers
  // while any worker reports more than 0. The base class reports 0: the kernel keeps delivering
  // what a posix socket holds after close and after exit.
  virtual size_t awaiting_acknowledgement(unsigned i);
  // Transports may run worker loops on their own threads (DPDK lcores).
  virtual void spawn_worker(unsigned i, std::function<void()> body);
  virtual void join_workers();  // waits for the threads spawn_worker() started
  // Without worker threads: the calling thread becomes every worker's (the one poll() accepts).
  void take_over_loops();
  // In id order: worker(i) has id i.
  void add_worker(std::unique_ptr<Worker> worker) { workers_.push_back(std::move(worker)); }
  // CPUs the workers may run on when ms.cpus leaves them unpinned; empty (the default): any.
  void set_unpinned_cpus(std::vector<int> cpus) { unpinned_cpus_ = std::move(cpus); }

  config::Config conf_;  // a copy: the stack outlives the caller's
  std::string type_;  // see type()
  std::vector<std::unique_ptr<Worker>> workers_;  // indexed by Worker::id()
  std::vector<std::thread> threads_;  // spawned by the default spawn_worker(); join_workers() joins them
  bool started_ = false;  // start() ran and stop() has not
  bool worker_threads_;   // ms.worker_threads
  std::thread::id poller_{};  // without worker threads: the thread that runs the loops
  std::chrono::nanoseconds shutdown_linger_;  // ms.shutdown_linger
  std::atomic<size_t> next_pick_{0};  // round-robin tie-break of least_loaded_worker()
  std::vector<int> unpinned_cpus_;  // see set_unpinned_cpus()
};

}  // namespace bypass
