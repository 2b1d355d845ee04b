// Connections for bypass-pmd's stack commands, driven by their worker's EventCenter (see
// bench::BenchConnection): a discard server connection and a bulk sender. The echo server reuses
// bench::EchoServerConnection.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>

#include "tools/bypass-bench/echo_connections.h"

namespace bypass::tools {

// Totals over every connection of one server, read by the tool thread at any time.
struct ServerTotals {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> received{0};
};

// Reads and drops everything (RFC 863 discard), closing at the peer's end of stream.
class DiscardConnection final : public bench::BenchConnection {
 public:
  DiscardConnection(Worker& worker, ConnectedSocket socket, ServerTotals& totals);

 private:
  void on_readable() override;
  void on_writable() override {}
  ServerTotals& totals_;
};

// What a SendConnection did, published for the tool thread. Times are steady_clock nanoseconds
// since its epoch, 0 until the event happened.
struct SendProgress {
  std::atomic<uint64_t> sent{0};      // bytes the stack accepted
  std::atomic<uint64_t> received{0};  // bytes the peer sent back (an echo peer), dropped
  std::atomic<int> error{0};          // negative errno once the connection failed
  std::atomic<int64_t> connected_at{0}, all_sent_at{0}, peer_closed_at{0};
  bool finished() const { return error.load() != 0 || peer_closed_at.load() != 0; }
};

// Connects, sends `total` pseudo-random bytes, then half-closes and reads (dropping) until the
// peer closes: a peer that closed after our FIN has received every byte.
class SendConnection final : public bench::BenchConnection {
 public:
  SendConnection(Worker& worker, SendProgress& progress, uint64_t total, uint64_t seed);
  // Worker thread. Returns 0 or the negative errno of a connect that failed at once.
  int connect(const SocketAddress& peer, const SocketOptions& options);

 private:
  void on_readable() override;
  void on_writable() override;
  void fill();
  void fail(int error);

  static constexpr size_t kChunk = 64 * 1024;
  SendProgress& progress_;
  uint64_t total_;
  uint64_t queued_ = 0;  // bytes generated into out_ so far
  bool connecting_ = true;
  bool shut_down_ = false;
  std::mt19937_64 random_;
  BufferList out_;
};

int64_t steady_now_ns();

}  // namespace bypass::tools
