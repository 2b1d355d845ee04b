#include "tools/fio/sender.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "base/log.h"
#include "config/config.h"

namespace bypass::fio {

namespace {

// A request's tid: the io's index above, a sequence number below, so a late reply to an earlier
// request of the same io is recognised. Opens use their own tids (kOpenTid bit).
constexpr int kIndexShift = 40;
constexpr uint64_t kSequenceMask = (uint64_t{1} << kIndexShift) - 1;
constexpr uint64_t kOpenTid = uint64_t{1} << 63;

// Where the job's thread polls the stack: idle polls between two reads of the clock for a deadline,
// and, after as many, the longest it then waits in the loop's driver for an event (so another
// thread's completion, a session's end, is seen within it).
constexpr unsigned kPollsPerDeadlineCheck = 64;
constexpr auto kIdleWait = std::chrono::milliseconds(1);

// How long fio's clean-up waits for the messenger to let go of an io's buffer before giving up.
constexpr auto kReleaseWait = std::chrono::seconds(5);

std::string seconds_text(std::chrono::seconds s) { return std::to_string(s.count()) + " s"; }

// Whether the job's thread may poll for its completions before it sleeps: not when every CPU it
// may run on belongs to a worker that busy-polls (dpdk with dpdk.idle_sleep 0), which its polling
// would only hold off. Checked on the job's thread, whose CPUs fio has set by then.
bool spinning_pays(const config::Config& conf) {
  if (conf.get_string("ms.type") != "dpdk" || conf.get_duration("dpdk.idle_sleep").count() != 0) return true;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return true;
  const std::vector<int> worker_cpus = conf.get_cpus("ms.cpus");
  if (worker_cpus.empty()) return CPU_COUNT(&allowed) > conf.get_int("ms.workers");
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed) && std::find(worker_cpus.begin(), worker_cpus.end(), cpu) == worker_cpus.end())
      return true;
  return false;
}

}  // namespace

struct Sender::Io : CompletionLink {
  // The header of the io_u buffer's storage while a write's message holds it (BufferSegment::wrap
  // with the owner's memory: no allocation per request).
  alignas(8) unsigned char storage_header[BufferSegment::header_size];
  Sender* owner = nullptr;
  void* io_u = nullptr;
  uint32_t index = 0;
  std::atomic<uint64_t> tid{0};
  // What must happen before fio gets the io_u back: the reply, and for a write the release of
  // the buffer's last view.
  std::atomic<int> parts{0};
  std::atomic<bool> awaiting_reply{false};  // cleared by whoever ends the reply part
  int error = 0;      // written by whoever ends the reply part, read once parts reached 0
  bool in_flight = false;  // job thread
  IoOp op = IoOp::read;
  char* buf = nullptr;
  uint64_t length = 0;
  uint64_t offset = 0;
};

Sender::Sender(JobSettings settings, unsigned iodepth)
    : settings_(std::move(settings)), spin_pays_(spinning_pays(settings_.conf)) {
  peer_ = settings_.address.ip_port_string() + " over " + settings_.transport;
  ios_.resize(iodepth == 0 ? 1 : iodepth);
  stack_ = SharedStack::acquire(settings_);
  polls_ = stack_->stack()->polled_here();
  // One messenger per job: its own session, as fio's numjobs promises.
  const int64_t entity = static_cast<int64_t>(getpid()) * 10000 + settings_.job_number;
  messenger_ = msgr::Messenger::create(settings_.conf, msgr::EntityName{msgr::EntityType::Client, entity}, stack_->stack());
  // Lossy: a fault ends the session and fails what is in flight (the receiver keeps nothing of
  // a session across faults either), rather than replaying against a target that forgot it.
  messenger_->set_default_policy(msgr::Policy::lossy_client());
  messenger_->add_dispatcher(this);
  if (messenger_->start() != 0) throw std::runtime_error("the messenger did not start");
  try {
    connect();
  } catch (...) {
    messenger_->shutdown();
    messenger_->wait();
    throw;
  }
}

Sender::~Sender() = default;

bool Sender::retire() {
  messenger_->shutdown();
  messenger_->wait();
  // free_io could not get every buffer back: a release may still come and touch this job.
  if (in_flight_ > 0)
    BYPASS_LOG(Error, "fio", "job %s: %zu requests still held by the messenger at clean-up; keeping their memory",
               settings_.job_name.c_str(), in_flight_);
  return in_flight_ == 0;
}

void Sender::connect() {
  msgr::EntityAddrVec addrs;
  addrs.addrs.push_back(settings_.address);
  const auto deadline = Clock::now() + settings_.timeout;
  std::string last_fault;
  for (;;) {
    connect_failed_.store(false);
    connection_ = messenger_->connect_to(msgr::EntityType::Osd, addrs);
    current_.store(connection_.get());
    // A lossy attempt that faults is over (last_fault says why): its Reset may even have been
    // dispatched before current_ named it.
    while (!connection_->is_connected() && !connect_failed_.load() && connection_->last_fault().empty() &&
           Clock::now() < deadline)
      stack_->stack()->pause(std::chrono::milliseconds(2));  // polls, where this thread runs the loops
    if (connection_->is_connected()) {
      established_.store(true);
      return;
    }
    if (const std::string fault = connection_->last_fault(); !fault.empty()) last_fault = fault;
    current_.store(nullptr);
    connection_->mark_down();
    if (Clock::now() >= deadline) break;
    // Refused: the receiver may still be starting (jobs of one run start together). Try again.
    stack_->stack()->pause(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("no receiver at " + peer_ + " within " + seconds_text(settings_.timeout) + " (bypass_timeout)" +
                           (last_fault.empty() ? std::string() : ": " + last_fault));
}

bool Sender::ms_handle_reset(const msgr::ConnectionRef& connection) {
  if (connection.get() != current_.load()) return true;  // a connect attempt given up on
  if (!established_.load()) {
    connect_failed_.store(true);
  } else {
    const std::string fault = connection->last_fault();
    end_session(ECONNRESET, "the receiver at " + peer_ + " closed the session" + (fault.empty() ? "" : ": " + fault));
  }
  return true;
}

void Sender::ms_handle_remote_reset(const msgr::ConnectionRef& connection) {
  if (connection.get() != current_.load()) return;
  end_session(ECONNRESET, "the receiver at " + peer_ + " restarted: the objects this job wrote are gone");
}

bool Sender::ms_handle_refused(const msgr::ConnectionRef& connection) {
  if (connection.get() == current_.load()) connect_failed_.store(true);
  return true;
}

void Sender::end_session(int error, const std::string& why) {
  {
    std::lock_guard guard(session_lock_);
    if (session_error_.load() != 0) return;
    session_why_ = why;
    session_error_.store(error);
    open_cv_.notify_all();
  }
  note_error(why);
  if (connection_) connection_->mark_down();  // drops what is queued: the buffers' views go
  const size_t count = io_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i)
    if (ios_[i]->awaiting_reply.exchange(false, std::memory_order_acq_rel)) finish_reply(*ios_[i], error);
}

void Sender::finish_reply(Io& io, int error) {
  io.error = error;
  part_done(io);
}

void Sender::part_done(Io& io) {
  if (io.parts.fetch_sub(1, std::memory_order_acq_rel) == 1) io.owner->completions_.push(&io);
}

void Sender::release_payload(void* context, BufferStorage*) { part_done(*static_cast<Io*>(context)); }

int Sender::open_file(const std::string& name, uint64_t size, uint64_t* object, std::string* error) {
  auto m = std::make_shared<msgr::Message>(kOpenRequest);
  OpenRequest{name, size}.encode(m->front());
  std::unique_lock guard(session_lock_);
  if (session_error_.load() != 0) {
    *error = session_why_;
    return -session_error_.load();
  }
  open_tid_ = kOpenTid | ++sequence_;
  open_reply_.reset();
  m->set_tid(open_tid_);
  guard.unlock();
  connection_->send_message(std::move(m));
  const auto answered = [&] { return open_reply_.has_value() || session_error_.load() != 0; };
  bool in_time;
  if (polls_) {
    // The reply arrives on this thread, inside poll() (handle_open_reply takes the lock).
    const auto deadline = Clock::now() + settings_.timeout;
    for (guard.lock(); !answered() && Clock::now() < deadline; guard.lock()) {
      guard.unlock();
      stack_->stack()->poll();
    }
    in_time = answered();
  } else {
    guard.lock();
    in_time = open_cv_.wait_for(guard, settings_.timeout, answered);
  }
  if (!in_time) {
    guard.unlock();
    *error = "no answer from the receiver at " + peer_ + " to opening " + name + " within " +
             seconds_text(settings_.timeout) + " (bypass_timeout)";
    end_session(ETIMEDOUT, *error);
    return -ETIMEDOUT;
  }
  if (!open_reply_) {
    *error = session_why_;
    return -session_error_.load();
  }
  if (open_reply_->status < 0) {
    *error = "the receiver at " + peer_ + " cannot hold " + name + ": " + open_reply_->error;
    return open_reply_->status;
  }
  *object = open_reply_->object;
  return 0;
}

void Sender::handle_open_reply(const msgr::MessageRef& m) {
  OpenReply reply;
  try {
    reply = OpenReply::decode(*m);
  } catch (const msgr::wire::DecodeError& e) {
    reply.status = -EBADMSG;
    reply.error = e.what();
  }
  std::lock_guard guard(session_lock_);
  if (m->tid() != open_tid_ || open_reply_) return;
  open_reply_ = std::move(reply);
  open_cv_.notify_all();
}

void* Sender::create_io(void* io_u) {
  const size_t index = io_count_.load(std::memory_order_relaxed);
  if (index >= ios_.size()) {
    note_error("fio set up more io_us than its iodepth (" + std::to_string(ios_.size()) + ")");
    return nullptr;
  }
  auto io = std::make_unique<Io>();
  io->owner = this;
  io->io_u = io_u;
  io->index = static_cast<uint32_t>(index);
  ios_[index] = std::move(io);
  io_count_.store(index + 1, std::memory_order_release);
  return ios_[index].get();
}

void Sender::free_io(void* opaque) {
  Io* io = static_cast<Io*>(opaque);
  if (!io->in_flight) return;
  // fio frees the io_u's buffer next: first take every view of it back from the messenger.
  end_session(ECANCELED, "fio ended the job with requests to " + peer_ + " still in flight");
  const auto deadline = Clock::now() + kReleaseWait;
  while (io->in_flight && Clock::now() < deadline) {
    wait_for_completion(std::min(deadline, Clock::now() + std::chrono::milliseconds(10)), CompletionQueue::Spin::none);
    collect_completions();
  }
  if (io->in_flight)
    BYPASS_LOG(Error, "fio", "job %s: the messenger still holds an io_u buffer %lld s after the session ended",
               settings_.job_name.c_str(), static_cast<long long>(kReleaseWait.count()));
}

int Sender::queue(void* opaque, int op, void* buf, uint64_t length, uint64_t offset, uint64_t object, uint64_t*,
                  std::string* error) {
  Io& io = *static_cast<Io*>(opaque);
  if (const int e = session_error_.load(); e != 0) return -e;
  if (length > UINT32_MAX) {
    *error = "a request of " + std::to_string(length) + " bytes: at most 4 GiB - 1 per io";
    return -EINVAL;
  }
  io.op = op == BYPASS_FIO_WRITE ? IoOp::write : IoOp::read;
  io.buf = static_cast<char*>(buf);
  io.length = length;
  io.offset = offset;
  io.error = 0;
  const uint64_t tid = (uint64_t{io.index} << kIndexShift) | (++sequence_ & kSequenceMask);
  io.tid.store(tid, std::memory_order_relaxed);
  io.parts.store(io.op == IoOp::write ? 2 : 1, std::memory_order_relaxed);
  io.awaiting_reply.store(true, std::memory_order_release);
  io.in_flight = true;
  ++in_flight_;

  auto m = msgr::make_message(kIoRequest);
  m->set_tid(tid);
  IoRequest{io.op, object, offset, static_cast<uint32_t>(length)}.encode(m->front());
  if (io.op == IoOp::write)
    m->data().append(BufferSegment::wrap(reinterpret_cast<BufferStorage*>(io.storage_header), io.buf, length,
                                         &Sender::release_payload, &io, BufferSharing::across_threads));
  // Where this thread runs the stack's loops, a send would write the link out at once (a system
  // call per request on posix); the requests fio queues between two commits leave in one write.
  const bool sent = polls_ ? connection_->send_message_unflushed(std::move(m)) : connection_->send_message(std::move(m));
  unflushed_ |= polls_;
  if (!sent && io.awaiting_reply.exchange(false, std::memory_order_acq_rel))
    finish_reply(io, ECONNRESET);  // closed meanwhile: the reset names why
  return BYPASS_FIO_QUEUED;
}

void Sender::commit() {
  if (!unflushed_) return;
  unflushed_ = false;
  connection_->flush_output();
}

bool Sender::ms_can_fast_dispatch(const msgr::Message& m) const {
  return m.type() == kIoReply || m.type() == kOpenReply;
}

void Sender::ms_fast_dispatch(const msgr::MessageRef& m) {
  if (m->type() == kOpenReply) {
    handle_open_reply(m);
    return;
  }
  const uint64_t tid = m->tid();
  const size_t index = tid >> kIndexShift;
  if ((tid & kOpenTid) != 0 || index >= io_count_.load(std::memory_order_acquire)) return;
  Io& io = *ios_[index];
  if (io.tid.load(std::memory_order_acquire) != tid || !io.awaiting_reply.exchange(false, std::memory_order_acq_rel))
    return;  // a late reply to a request that already failed
  int error = 0;
  try {
    const IoReply reply = IoReply::decode(*m);
    if (reply.status < 0) {
      error = -reply.status;
      note_error(describe_status(io, reply.status));
    }
  } catch (const msgr::wire::DecodeError& e) {
    error = EBADMSG;
    note_error(std::string("a malformed reply from ") + peer_ + ": " + e.what());
  }
  if (error == 0 && io.op == IoOp::read) {
    if (m->data().length() != io.length) {
      error = EIO;
      note_error("the receiver at " + peer_ + " answered a read of " + std::to_string(io.length) + " bytes with " +
                 std::to_string(m->data().length()));
    } else {
      m->data().copy_out(0, io.length, io.buf);  // the one copy: reply segments -> the io_u buffer
    }
  }
  finish_reply(io, error);
}

std::string Sender::describe_status(const Io& io, int32_t status) const {
  const std::string what = std::string(io.op == IoOp::write ? "write" : "read") + " of " + std::to_string(io.length) +
                           " bytes at offset " + std::to_string(io.offset);
  switch (-status) {
    case ERANGE: return "the receiver at " + peer_ + " refused a " + what + ": past the end of the object";
    case EBADF: return "the receiver at " + peer_ + " refused a " + what + ": it holds no such object for this session";
    default: return "the receiver at " + peer_ + " refused a " + what + ": " + std::strerror(-status);
  }
}

void Sender::collect_completions() {
  const size_t before = ready_.size();
  completions_.take(ready_);
  for (size_t i = before; i < ready_.size(); ++i) {
    static_cast<Io*>(ready_[i])->in_flight = false;
    --in_flight_;
  }
}

bool Sender::wait_for_completion(Clock::time_point deadline, CompletionQueue::Spin spin) {
  if (!polls_) return completions_.wait_until(deadline, spin);
  NetworkStack& stack = *stack_->stack();
  // The deadline is read every kPollsPerDeadlineCheck idle polls: each poll reads the clock once
  // already, and on this kind of VM a clock read is the idle loop's largest cost (perf: ~45 %).
  unsigned idle = 0;
  while (!completions_.pending()) {
    if (stack.poll() != 0 || ++idle % kPollsPerDeadlineCheck != 0) continue;
    const auto now = Clock::now();
    if (now >= deadline) return completions_.pending();
    // Nothing for that many polls: wait in the loop's driver, as a worker thread would. posix
    // sleeps in epoll until a reply is readable, so a thread that shares its CPU runs meanwhile and
    // the kernel does not treat this one as a CPU hog (busy-polling epoll, a loaded machine took it
    // off its CPU for milliseconds); a busy-polling dpdk driver returns at once.
    stack.poll(std::min<Clock::duration>(deadline - now, kIdleWait));
  }
  return true;
}

int Sender::getevents(unsigned min, unsigned max, std::string* error) {
  commit();  // fio commits before it waits; this keeps a request from waiting here regardless
  collect_completions();
  auto deadline = Clock::now() + settings_.timeout;
  while (ready_.size() < min) {
    const auto spin = !spin_pays_ ? CompletionQueue::Spin::none
                      : in_flight_ == 1 ? CompletionQueue::Spin::yield
                                        : CompletionQueue::Spin::pause;
    if (!wait_for_completion(deadline, spin)) {
      const std::string why = "no reply from the receiver at " + peer_ + " within " + seconds_text(settings_.timeout) +
                              " (bypass_timeout; " + std::to_string(in_flight_) + " requests in flight)";
      end_session(ETIMEDOUT, why);
      take_error();  // told once, through the error returned here
      *error = why;
      return -ETIMEDOUT;
    }
    collect_completions();
    deadline = Clock::now() + settings_.timeout;
  }
  const size_t n = std::min<size_t>(ready_.size(), max);
  events_.clear();
  for (size_t i = 0; i < n; ++i) events_.push_back(static_cast<Io*>(ready_[i]));
  ready_.erase(ready_.begin(), ready_.begin() + static_cast<std::ptrdiff_t>(n));
  return static_cast<int>(n);
}

void* Sender::event(int i, int* error) {
  Io& io = *events_.at(static_cast<size_t>(i));
  *error = io.error;
  return io.io_u;
}

}  // namespace bypass::fio
