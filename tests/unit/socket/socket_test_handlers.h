// Connection state machines used by the socket-interface suite.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "tests/unit/socket/socket_test_harness.h"

namespace bypass::testing {

// Echoes everything back; after the peer's EOF it flushes, shuts down and closes. Holds at most
// kMaxPending unsent bytes (stops reading until they drain) so a slow reader cannot blow memory.
class EchoServer final : public StreamHandler {
 public:
  EchoServer(HandlerPool& pool, Worker& worker, ConnectedSocket socket)
      : StreamHandler(pool, worker, std::move(socket)) {}
  void start() override;
  static constexpr size_t kMaxPending = 1 << 20;

 private:
  void on_readable() override;
  void on_writable() override { flush(); }
  void flush();

  BufferList pending_;
  bool eof_ = false;
};

// Reads until the peer's EOF (half-close), then answers "reply:" + everything it read, shuts
// down and closes.
class ReplyAfterEofServer final : public StreamHandler {
 public:
  ReplyAfterEofServer(HandlerPool& pool, Worker& worker, ConnectedSocket socket)
      : StreamHandler(pool, worker, std::move(socket)) {}
  void start() override { set_interest(kEventReadable); }

 private:
  void on_readable() override;
  void on_writable() override;

  std::string received_;
  BufferList reply_;
};

// Reads `abort_after` bytes, then resets the connection (SO_LINGER 0 on posix; elsewhere closing
// with unread data, which also sends RST per RFC 2525 section 2.17).
class AbortingServer final : public StreamHandler {
 public:
  // `kernel_socket`: fd() is a kernel fd, so SO_LINGER applies.
  AbortingServer(HandlerPool& pool, Worker& worker, ConnectedSocket socket, size_t abort_after,
                 bool kernel_socket, Completion* aborted)
      : StreamHandler(pool, worker, std::move(socket)),
        abort_after_(abort_after),
        kernel_socket_(kernel_socket),
        aborted_(aborted) {}
  void start() override { set_interest(kEventReadable); }

 private:
  void on_readable() override;

  size_t abort_after_;
  bool kernel_socket_;
  size_t received_ = 0;
  Completion* aborted_;
};

struct ClientSpec {
  BufferList payload;                          // sent, then (optionally) shutdown()
  std::shared_ptr<const std::string> expected; // bytes expected back: [offset, offset + length)
  size_t expected_offset = 0;
  size_t expected_length = 0;
  bool shutdown_after_send = true;
  bool wait_for_eof = true;       // false: done once expected_length bytes arrived (stay open)
  bool connect_only = false;      // done as soon as the connect resolves
  bool zero_copy = false;         // read with zero_copy_read instead of read
  size_t read_max = 64 * 1024;    // max bytes per read call
  SocketOptions options;
  // Runs on the worker when the client completes without error, before it closes its socket
  // (given this end's address): a test reads the connection's state there while it still exists.
  std::function<void(const SocketAddress& local)> before_close;
};

struct ClientResult {
  int error = 0;          // first -errno seen (connect, send or read); -EBADMSG on a data mismatch
  bool connected = false;
  bool eof = false;
  bool verified = false;  // every expected byte arrived intact (and EOF, when waited for)
  size_t received = 0;
  size_t max_read_seen = 0;  // largest single read (checks read_max is honoured)
  std::string detail;
};

// Connects, sends spec.payload, reads and verifies the reply. Writes *result and signals `done`
// exactly once.
class StreamClient final : public StreamHandler {
 public:
  StreamClient(HandlerPool& pool, Worker& worker, SocketAddress peer, ClientSpec spec,
               ClientResult* result, Completion* done);
  void start() override;

 private:
  void on_readable() override;
  void on_writable() override;
  void send_more();
  bool check(const char* data, size_t len);
  void complete(int error);

  SocketAddress peer_;
  ClientSpec spec_;
  ClientResult* result_;
  Completion* done_;
  bool connecting_ = true;
  bool completed_ = false;
};

}  // namespace bypass::testing
