#include "stack/dpdk/dpdk_socket.h"

#include <cerrno>
#include <new>

#include "base/log.h"
#include "stack/dpdk/dpdk_stack.h"

namespace bypass {

namespace {

int errno_of(inet::TcpError error) {
  switch (error) {
    case inet::TcpError::None: return 0;
    case inet::TcpError::Refused: return -ECONNREFUSED;
    case inet::TcpError::Reset: return -ECONNRESET;
    case inet::TcpError::TimedOut: return -ETIMEDOUT;
    case inet::TcpError::Unreachable: return -EHOSTUNREACH;
  }
  return -EIO;
}

bool handshaking(inet::TcpState state) {
  return state == inet::TcpState::SynSent || state == inet::TcpState::SynReceived;
}

// States in which our side may still queue data (RFC 9293 §3.10.2: SEND is valid until we close).
bool may_send(inet::TcpState state) {
  return state == inet::TcpState::SynSent || state == inet::TcpState::SynReceived ||
         state == inet::TcpState::Established || state == inet::TcpState::CloseWait;
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void forget_event(DpdkWorker& worker, int id) {
  if (id < 0) return;
  if (worker.center().in_thread()) worker.center().delete_file_event(id, kEventReadable | kEventWritable);
  worker.driver().destroy_user_event(id);
}

// Blocks of one size kept for reuse by the thread that freed them (bounded; the rest go back to
// the heap). A block freed on another thread than the one that made it simply joins that thread's
// list: they are plain memory.
class SocketBlockCache {
 public:
  ~SocketBlockCache() {
    while (head_ != nullptr) {
      Node* next = head_->next;
      ::operator delete(head_);
      head_ = next;
    }
    count_ = 0;
    gone_ = true;  // a socket dropped later in this thread's exit goes straight to the heap
  }
  void* get(size_t size) {
    if (size != sizeof(DpdkConnectedSocket) || head_ == nullptr) return ::operator new(size);
    Node* node = head_;
    head_ = node->next;
    --count_;
    return node;
  }
  void put(void* block, size_t size) {
    if (size != sizeof(DpdkConnectedSocket) || count_ >= kMaxCached || gone_) return ::operator delete(block);
    head_ = new (block) Node{head_};
    ++count_;
  }

 private:
  static constexpr size_t kMaxCached = 4096;
  struct Node {
    Node* next;
  };
  Node* head_ = nullptr;
  size_t count_ = 0;
  bool gone_ = false;
};

SocketBlockCache& socket_blocks() {
  thread_local SocketBlockCache cache;
  return cache;
}

}  // namespace

void* DpdkConnectedSocket::operator new(size_t size) { return socket_blocks().get(size); }
void DpdkConnectedSocket::operator delete(void* block, size_t size) { socket_blocks().put(block, size); }

DpdkConnectedSocket::DpdkConnectedSocket(DpdkWorker& worker,
                                         std::shared_ptr<inet::TcpConnection> connection,
                                         const SocketOptions& opts, bool connecting)
    : worker_(worker), connection_(std::move(connection)), event_id_(worker.driver().create_user_event()) {
  worker_.open_sockets.fetch_add(1, std::memory_order_relaxed);
  rng_state_ = worker_.next_socket_seed();
  connection_->set_event_handler([this](int events) { on_connection_event(events); });
  connection_->set_nagle(!opts.nodelay);
  if (connecting && opts.connect_timeout.count() > 0) {
    connect_timer_ = worker_.center().create_timer(opts.connect_timeout, [this] {
      connect_timer_ = 0;
      if (connection_ && handshaking(connection_->state())) {
        timed_out_ = true;
        connection_->abort();
        update_readiness();
      }
    });
  }
  update_readiness();
}

DpdkConnectedSocket::~DpdkConnectedSocket() { close(); }

int DpdkConnectedSocket::maybe_inject_failure() {
  const int every = worker_.inject_socket_failures();
  if (every <= 0 || splitmix64(rng_state_) % static_cast<uint64_t>(every) != 0) return 0;
  BYPASS_LOG(Debug, "dpdk", "event %d: injecting socket failure (ms.inject_socket_failures=%d)",
             event_id_, every);
  injected_reset_ = true;
  connection_->abort();
  update_readiness();
  return -ECONNRESET;
}

int DpdkConnectedSocket::error() const {
  if (timed_out_) return -ETIMEDOUT;
  if (injected_reset_) return -ECONNRESET;
  return errno_of(connection_->error());
}

void DpdkConnectedSocket::on_connection_event(int events) {
  if ((events & inet::kTcpConnected) && connect_timer_ != 0) {
    worker_.center().cancel_timer(connect_timer_);
    connect_timer_ = 0;
  }
  update_readiness();
}

void DpdkConnectedSocket::update_readiness() {
  if (closed_) return;
  const bool failed = error() != 0;
  const inet::TcpState state = connection_->state();
  int ready = kEventNone;
  if (connection_->readable_bytes() > 0 || connection_->end_of_stream() || failed ||
      state == inet::TcpState::Closed) {
    ready |= kEventReadable;
  }
  if (failed || state == inet::TcpState::Closed ||
      (!handshaking(state) && (!may_send(state) || connection_->send_space() > 0))) {
    ready |= kEventWritable;
  }
  PollingDriver& driver = worker_.driver();
  if (ready != kEventNone) driver.notify(event_id_, ready);
  const int not_ready = (kEventReadable | kEventWritable) & ~ready;
  if (not_ready != kEventNone) driver.clear(event_id_, not_ready);
}

int DpdkConnectedSocket::is_connected() {
  if (closed_) return -EBADF;
  if (const int err = error(); err != 0) return err;
  const inet::TcpState state = connection_->state();
  if (handshaking(state)) return 0;
  return 1;
}

ssize_t DpdkConnectedSocket::zero_copy_read(BufferList& out, size_t max_len) {
  if (closed_) return -EBADF;
  if (const int err = maybe_inject_failure()) return err;
  if (max_len == 0) return 0;
  BufferList data = connection_->read(max_len);
  ssize_t result;
  if (!data.empty()) {
    result = static_cast<ssize_t>(data.length());
    out.append(std::move(data));
  } else if (connection_->end_of_stream()) {
    result = 0;
  } else if (const int err = error(); err != 0) {
    result = err;
  } else if (connection_->state() == inet::TcpState::Closed) {
    result = 0;
  } else {
    result = -EAGAIN;
  }
  update_readiness();
  return result;
}

ssize_t DpdkConnectedSocket::read(char* buf, size_t len) {
  BufferList data;
  const ssize_t n = zero_copy_read(data, len);
  if (n > 0) data.copy_out(0, static_cast<size_t>(n), buf);
  return n;
}

ssize_t DpdkConnectedSocket::send(BufferList& data, bool /*more: the stack sends what it may at once*/) {
  if (closed_) return -EBADF;
  if (const int err = maybe_inject_failure()) return err;
  if (const int err = error(); err != 0) return err;
  if (write_shut_ || !may_send(connection_->state())) return -EPIPE;
  if (data.empty()) return 0;
  const size_t taken = connection_->send(data);
  update_readiness();
  return taken > 0 ? static_cast<ssize_t>(taken) : -EAGAIN;
}

void DpdkConnectedSocket::shutdown() {
  if (closed_ || write_shut_) return;
  write_shut_ = true;
  connection_->shutdown_write();
  update_readiness();
}

void DpdkConnectedSocket::close() {
  if (closed_) return;
  closed_ = true;
  if (connect_timer_ != 0) {
    worker_.center().cancel_timer(connect_timer_);
    connect_timer_ = 0;
  }
  connection_->set_event_handler(nullptr);
  connection_->close();
  forget_event(worker_, event_id_);
  event_id_ = -1;
  worker_.open_sockets.fetch_sub(1, std::memory_order_relaxed);
}

namespace {
SocketAddress socket_address(const inet::IpAddress& ip, uint16_t port) {
  return ip.is_v4() ? SocketAddress::ipv4(ip.v4().value, port) : SocketAddress::ipv6(ip.v6().bytes, port);
}
}  // namespace

SocketAddress DpdkConnectedSocket::local_address() const {
  const inet::FourTuple& t = connection_->tuple();
  return socket_address(t.local_ip, t.local_port);
}

SocketAddress DpdkConnectedSocket::peer_address() const {
  const inet::FourTuple& t = connection_->tuple();
  return socket_address(t.remote_ip, t.remote_port);
}

// ---------------------------------------------------------------------------------------------

DpdkServerSocket::DpdkServerSocket(DpdkWorker& worker, std::shared_ptr<inet::TcpListener> listener,
                                   SingleListenerTable* single, bool ipv6)
    : worker_(worker), listener_(std::move(listener)), single_(single), ipv6_(ipv6), event_id_(worker.driver().create_user_event()) {
  if (single_ != nullptr) single_->set(listener_->port(), worker_.id());
  listener_->set_acceptable_handler([this] { worker_.driver().notify(event_id_, kEventReadable); });
  if (listener_->acceptable() > 0) worker_.driver().notify(event_id_, kEventReadable);
}

DpdkServerSocket::~DpdkServerSocket() { abort_accept(); }

int DpdkServerSocket::accept(ConnectedSocket* sock, const SocketOptions& opts, SocketAddress* peer,
                             Worker* /*worker: a TCP connection cannot leave its InetStack*/) {
  if (!listener_) return -EBADF;
  std::shared_ptr<inet::TcpConnection> connection = listener_->accept();
  if (!connection) {
    worker_.driver().clear(event_id_, kEventReadable);
    return -EAGAIN;
  }
  if (listener_->acceptable() == 0) worker_.driver().clear(event_id_, kEventReadable);
  auto impl = std::make_unique<DpdkConnectedSocket>(worker_, std::move(connection), opts, false);
  if (peer != nullptr) *peer = impl->peer_address();
  *sock = ConnectedSocket(std::move(impl));
  return 0;
}

void DpdkServerSocket::abort_accept() {
  if (!listener_) return;
  listener_->set_acceptable_handler(nullptr);
  if (single_ != nullptr) single_->clear(listener_->port());
  worker_.inet().tcp().stop_listening(listener_);
  listener_.reset();
  forget_event(worker_, event_id_);
  event_id_ = -1;
}

SocketAddress DpdkServerSocket::local_address() const {
  // One listener takes both families; it reports the family it was opened with.
  const uint16_t port = listener_ ? listener_->port() : 0;
  return ipv6_ ? SocketAddress::ipv6(worker_.host_ipv6().bytes, port) : SocketAddress::ipv4(worker_.host_ip(), port);
}

}  // namespace bypass
