// The posix transport: Linux kernel TCP sockets, one epoll loop per worker. Its logic is written
// once over a socket-calls policy (socket_calls.h): StreamWorker<RsocketCalls> and
// StreamNetworkStack<RsocketCalls> are the rsocket transport (stack/rsocket/rsocket_stack.h).
// Member definitions are in posix_stack_impl.h.
#pragma once

#include <atomic>
#include <memory>

#include "config/config.h"
#include "stack/network_stack.h"
#include "stack/transport_registry.h"
#include "stack/posix/socket_calls.h"

namespace bypass {

template <class Calls>
class StreamWorker final : public Worker {
 public:
  StreamWorker(unsigned id, const config::Config& conf);

  int listen(const SocketAddress& addr, const ListenOptions& lopts, const SocketOptions& sopts,
             ServerSocket* out) override;
  int connect(const SocketAddress& addr, const SocketOptions& opts, ConnectedSocket* out) override;

  // ms.inject_socket_failures: 0 = off, N = roughly one read/send in N fails with -ECONNRESET.
  int inject_socket_failures() const { return inject_socket_failures_; }
  // Seed for the failure-injection PRNG of the next socket (distinct per worker and socket, and
  // the same from run to run so a failing sequence can be replayed).
  uint64_t next_socket_seed();

  // Transport counters of sockets owned by this worker (relaxed atomics: an accepting worker may
  // count for another).
  struct Counters {
    std::atomic<uint64_t> bytes_sent{0}, bytes_received{0};
    std::atomic<uint64_t> connections_opened{0}, connections_accepted{0};
  };
  Counters counters;

 private:
  int inject_socket_failures_;
  std::atomic<uint64_t> socket_serial_{0};
};

template <class Calls>
class StreamNetworkStack final : public NetworkStack {
 public:
  // Throws std::runtime_error when the calls cannot work here (Calls::configure) or ms.workers
  // is out of range.
  explicit StreamNetworkStack(const config::Config& conf);
  ~StreamNetworkStack() override;
  bool listen_per_worker() const override { return listen_per_worker_; }
  Counters transport_counters() override;
  WorkerReport worker_report(unsigned i) override;

 private:
  bool listen_per_worker_;
};

using PosixWorker = StreamWorker<KernelSocketCalls>;
using PosixNetworkStack = StreamNetworkStack<KernelSocketCalls>;
extern template class StreamWorker<KernelSocketCalls>;
extern template class StreamNetworkStack<KernelSocketCalls>;

std::shared_ptr<NetworkStack> make_posix_stack(const config::Config& conf);
// Registers make_posix_stack as ms.type=posix (called from the generated compiled_transports.cc).
void register_posix_transport(TransportRegistry& registry);

}  // namespace bypass
