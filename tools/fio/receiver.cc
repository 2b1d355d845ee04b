#include "tools/fio/receiver.h"

#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <thread>

#include "base/log.h"
#include "tools/fio/target_protocol.h"

namespace bypass::fio {

namespace {

using Clock = std::chrono::steady_clock;

// Once the last sender has gone, how long the receiver waits for another (senders of one run
// start together, but not to the microsecond) before it ends.
constexpr auto kLastSenderLinger = std::chrono::seconds(1);
// How often a receiver waiting for requests hands control back to fio, so fio can end it at its
// runtime or on a signal; and how often it looks for requests served meanwhile.
constexpr auto kIdleReturn = std::chrono::milliseconds(100);
constexpr auto kPoll = std::chrono::milliseconds(1);
constexpr int kPollsPerCheck = 64;  // polling the stack itself: polls between two looks at the clock

}  // namespace

Receiver::Receiver(JobSettings settings)
    : settings_(std::move(settings)), store_(settings_.size) {
  BufferList encoded;
  IoReply{0}.encode(encoded);
  // Shared by the replies of every worker that serves (bypass_poll=workers): counted atomically.
  ok_reply_front_.append(BufferSegment::copy_of(encoded.to_string().data(), encoded.length(), BufferSharing::across_threads));
  stack_ = SharedStack::acquire(settings_);
  messenger_ = msgr::Messenger::create(settings_.conf, msgr::EntityName{msgr::EntityType::Osd, 0}, stack_->stack());
  // Stateless: a session that faults is over, and its objects with it (the senders are lossy).
  messenger_->set_default_policy(msgr::Policy::stateless_server());
  messenger_->add_dispatcher(this);
  const std::string where = settings_.address.ip_port_string() + " over " + settings_.transport;
  if (const int rc = messenger_->bind(settings_.address); rc != 0)
    throw std::runtime_error("cannot listen on " + where + ": " + socket_error_name(rc));
  if (messenger_->start() != 0) throw std::runtime_error("cannot listen on " + where + ": the messenger did not start");
}

bool Receiver::retire() {
  messenger_->shutdown();
  messenger_->wait();
  return true;
}

bool Receiver::ms_can_fast_dispatch(const msgr::Message& m) const {
  return m.type() == kIoRequest || m.type() == kOpenRequest;
}

void Receiver::ms_fast_dispatch(const msgr::MessageRef& m) {
  if (m->type() == kIoRequest) {
    serve_io(m);
  } else {
    serve_open(m);
  }
}

void Receiver::serve_open(const msgr::MessageRef& m) {
  OpenReply reply;
  try {
    const OpenRequest request = OpenRequest::decode(*m);
    const ObjectStore::Opened opened = store_.open(m->connection().get(), request.name, request.size);
    reply = OpenReply{opened.status, opened.handle, opened.error};
  } catch (const msgr::wire::DecodeError& e) {
    reply = OpenReply{-EBADMSG, 0, e.what()};
  }
  auto answer = std::make_shared<msgr::Message>(kOpenReply);
  answer->set_tid(m->tid());
  reply.encode(answer->front());
  m->connection()->send_message(std::move(answer));
}

void Receiver::serve_io(const msgr::MessageRef& m) {
  auto answer = msgr::make_message(kIoReply);
  answer->set_tid(m->tid());
  int status = 0;
  uint64_t bytes = 0;
  try {
    const IoRequest request = IoRequest::decode(*m);
    bytes = request.length;
    const ObjectStore::Owner owner = m->connection().get();
    if (request.op == IoOp::write) {
      status = m->data().length() == request.length ? store_.write(owner, request.object, request.offset, m->data()) : -EINVAL;
    } else {
      status = store_.read(owner, request.object, request.offset, request.length, answer->data());
    }
  } catch (const msgr::wire::DecodeError& e) {
    BYPASS_LOG(Warn, "fio", "receiver %s: %s", settings_.job_name.c_str(), e.what());
    status = -EBADMSG;
  }
  if (status == 0) {
    answer->front().append(ok_reply_front_);
  } else {
    IoReply{status}.encode(answer->front());
  }
  m->connection()->send_message(std::move(answer));
  if (status == 0) {
    served_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    served_requests_.fetch_add(1, std::memory_order_release);
  }
}

void Receiver::ms_handle_accept(const msgr::ConnectionRef&) {
  sessions_.fetch_add(1);
  had_session_.store(true);
}

bool Receiver::ms_handle_reset(const msgr::ConnectionRef& connection) {
  // Reset comes after every message of the session was dispatched: nothing touches its objects now.
  store_.release(connection.get());
  sessions_.fetch_sub(1);
  return true;
}

bool Receiver::senders_gone() {
  if (!had_session_.load() || sessions_.load() > 0) {
    quiet_since_ = {};
    return false;
  }
  const auto now = Clock::now();
  if (quiet_since_ == Clock::time_point{}) quiet_since_ = now;
  return now - quiet_since_ >= kLastSenderLinger;
}

int Receiver::queue(void*, int, void*, uint64_t, uint64_t, uint64_t, uint64_t* bytes, std::string*) {
  // Read the clock only once nothing is waiting: fio calls this once per served request.
  Clock::time_point give_back{};
  for (;;) {
    const uint64_t requests = served_requests_.load(std::memory_order_acquire) - reported_requests_;
    if (requests > 0) {
      // Sizes of single requests are not kept: each gets its share of the bytes served since the
      // last call, the last one the remainder, so the totals are exact.
      const uint64_t unreported = served_bytes_.load(std::memory_order_relaxed) - reported_bytes_;
      *bytes = requests == 1 ? unreported : unreported / requests;
      ++reported_requests_;
      reported_bytes_ += *bytes;
      return BYPASS_FIO_COMPLETED;
    }
    if (senders_gone()) return BYPASS_FIO_JOB_DONE;
    const auto now = Clock::now();
    if (give_back == Clock::time_point{}) give_back = now + kIdleReturn;
    if (now >= give_back) return BYPASS_FIO_IDLE;
    if (stack_->stack()->polled_here()) {
      // This thread runs the stack's loops (bypass_poll=job): it serves in here. The clock above
      // is read once per kPollsPerCheck polls (each poll reads it once already).
      for (int i = 0; i < kPollsPerCheck && served_requests_.load(std::memory_order_acquire) == reported_requests_; ++i)
        stack_->stack()->poll();
      // Nothing came: wait in the loop's driver (posix sleeps in epoll until a request is readable,
      // as a worker thread would; a busy-polling dpdk driver returns at once).
      if (served_requests_.load(std::memory_order_acquire) == reported_requests_) stack_->stack()->poll(kPoll);
    } else {
      std::this_thread::sleep_for(kPoll);
    }
  }
}

}  // namespace bypass::fio
