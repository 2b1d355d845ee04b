// The posix transport: Linux kernel TCP sockets, one epoll loop per worker.
#pragma once

#include <memory>

#include "config/config.h"
#include "stack/network_stack.h"

namespace bypass {

class PosixWorker final : public Worker {
 public:
  PosixWorker(unsigned id, const config::Config& conf);

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

class PosixNetworkStack final : public NetworkStack {
 public:
  explicit PosixNetworkStack(const config::Config& conf);
  ~PosixNetworkStack() override;
  bool listen_per_worker() const override { return listen_per_worker_; }
  Counters transport_counters() override;
  WorkerReport worker_report(unsigned i) override;

 private:
  bool listen_per_worker_;
};

std::shared_ptr<NetworkStack> make_posix_stack(const config::Config& conf);

}  // namespace bypass
