#include "tests/unit/socket/socket_test_handlers.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace bypass::testing {

namespace {
constexpr size_t kReadChunk = 64 * 1024;
constexpr int kReadsPerEvent = 16;  // bounded work per callback keeps the loop fair
}  // namespace

void EchoServer::start() { set_interest(kEventReadable); }

void EchoServer::on_readable() {
  for (int i = 0; i < kReadsPerEvent && pending_.length() < kMaxPending; ++i) {
    const ssize_t r = socket_.zero_copy_read(pending_, kReadChunk);
    if (r == -EAGAIN) break;
    if (r == 0) {
      eof_ = true;
      break;
    }
    if (r < 0) {
      finish();
      return;
    }
  }
  flush();
}

void EchoServer::flush() {
  if (!pending_.empty()) {
    const ssize_t r = socket_.send(pending_, false);
    if (r < 0 && r != -EAGAIN) {
      finish();
      return;
    }
  }
  if (pending_.empty() && eof_) {
    socket_.shutdown();
    finish();
    return;
  }
  int mask = kEventNone;
  if (!pending_.empty()) mask |= kEventWritable;
  if (!eof_ && pending_.length() < kMaxPending) mask |= kEventReadable;
  set_interest(mask);
}

// ---------------------------------------------------------------------------------------------

void ReplyAfterEofServer::on_readable() {
  char buf[4096];
  for (int i = 0; i < kReadsPerEvent; ++i) {
    const ssize_t r = socket_.read(buf, sizeof(buf));
    if (r == -EAGAIN) return;
    if (r < 0) {
      finish();
      return;
    }
    if (r == 0) {
      reply_.append_copy("reply:" + received_);
      set_interest(kEventWritable);
      return;
    }
    received_.append(buf, static_cast<size_t>(r));
  }
}

void ReplyAfterEofServer::on_writable() {
  const ssize_t r = socket_.send(reply_, false);
  if ((r < 0 && r != -EAGAIN) || reply_.empty()) {
    if (reply_.empty()) socket_.shutdown();
    finish();
  }
}

// ---------------------------------------------------------------------------------------------

void AbortingServer::on_readable() {
  char buf[4096];
  for (int i = 0; i < kReadsPerEvent && received_ < abort_after_; ++i) {
    const ssize_t r = socket_.read(buf, sizeof(buf));
    if (r == -EAGAIN) return;
    if (r <= 0) {
      finish();
      return;
    }
    received_ += static_cast<size_t>(r);
  }
  if (received_ < abort_after_) return;
  if (kernel_socket_) {
    // Kernel socket: SO_LINGER with a zero timeout makes close() send RST (RFC 793 ABORT).
    linger lg{1, 0};
    ::setsockopt(socket_.fd(), SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  }
  aborted_->signal();
  finish();
}

// ---------------------------------------------------------------------------------------------

StreamClient::StreamClient(HandlerPool& pool, Worker& worker, SocketAddress peer, ClientSpec spec,
                           ClientResult* result, Completion* done)
    : StreamHandler(pool, worker, ConnectedSocket()),
      peer_(peer),
      spec_(std::move(spec)),
      result_(result),
      done_(done) {}

void StreamClient::start() {
  const int rc = worker_.connect(peer_, spec_.options, &socket_);
  if (rc < 0) {
    complete(rc);
    return;
  }
  set_interest(kEventWritable);  // connect progress shows as writability
}

void StreamClient::complete(int error) {
  if (completed_) return;
  completed_ = true;
  if (result_->error == 0) result_->error = error;
  if (error == 0 && !spec_.connect_only) {
    result_->verified = result_->received == spec_.expected_length &&
                        (!spec_.wait_for_eof || result_->eof);
  }
  if (error == 0 && spec_.before_close) spec_.before_close(socket_.local_address());
  done_->signal();
  if (spec_.wait_for_eof || error != 0 || spec_.connect_only) {
    finish();
  } else {
    set_interest(kEventNone);  // stay connected until the pool is cleared
  }
}

void StreamClient::on_writable() {
  if (connecting_) {
    const int r = socket_.is_connected();
    if (r == 0) return;
    if (r < 0) {
      complete(r);
      return;
    }
    connecting_ = false;
    result_->connected = true;
    if (spec_.connect_only) {
      complete(0);
      return;
    }
  }
  send_more();
}

void StreamClient::send_more() {
  if (!spec_.payload.empty()) {
    const ssize_t r = socket_.send(spec_.payload, false);
    if (r < 0 && r != -EAGAIN) {
      complete(static_cast<int>(r));
      return;
    }
  }
  if (spec_.payload.empty()) {
    if (spec_.shutdown_after_send) socket_.shutdown();
    set_interest(kEventReadable);
  } else {
    set_interest(kEventReadable | kEventWritable);
  }
}

bool StreamClient::check(const char* data, size_t len) {
  const size_t at = result_->received;
  if (at + len > spec_.expected_length) {
    result_->detail = "received " + std::to_string(at + len) + " bytes, expected only " +
                      std::to_string(spec_.expected_length);
    return false;
  }
  if (std::memcmp(data, spec_.expected->data() + spec_.expected_offset + at, len) != 0) {
    result_->detail = "data mismatch within bytes [" + std::to_string(at) + ", " +
                      std::to_string(at + len) + ")";
    return false;
  }
  result_->received += len;
  return true;
}

void StreamClient::on_readable() {
  char buf[kReadChunk];
  for (int i = 0; i < kReadsPerEvent; ++i) {
    ssize_t r;
    if (spec_.zero_copy) {
      BufferList got;
      r = socket_.zero_copy_read(got, spec_.read_max);
      if (r > 0 && got.length() != static_cast<size_t>(r)) {
        result_->detail = "zero_copy_read returned " + std::to_string(r) + " but appended " +
                          std::to_string(got.length());
        complete(-EBADMSG);
        return;
      }
      for (const auto& seg : got.segments()) {
        if (!check(seg.data(), seg.length())) {
          complete(-EBADMSG);
          return;
        }
      }
    } else {
      r = socket_.read(buf, std::min(sizeof(buf), spec_.read_max));
      if (r > 0 && !check(buf, static_cast<size_t>(r))) {
        complete(-EBADMSG);
        return;
      }
    }
    if (r == -EAGAIN) return;
    if (r < 0) {
      complete(static_cast<int>(r));
      return;
    }
    if (r == 0) {
      result_->eof = true;
      complete(0);
      return;
    }
    result_->max_read_seen = std::max(result_->max_read_seen, static_cast<size_t>(r));
    if (!spec_.wait_for_eof && result_->received == spec_.expected_length) {
      complete(0);
      return;
    }
  }
}

}  // namespace bypass::testing
