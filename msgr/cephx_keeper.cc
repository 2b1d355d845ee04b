#include "msgr/cephx_keeper.h"

#include <cerrno>

#include "base/log.h"
#include "msgr/auth/cephx_server.h"
#include "msgr/connection.h"
#include "msgr/mon_auth.h"

namespace bypass::msgr {

namespace {
using SysClock = std::chrono::system_clock;
// How long an unanswered renewal request blocks the next one, and the longest sleep between looks
// (a monitor session may come up, or new tickets arrive, at any time).
constexpr auto kRequestPatience = std::chrono::seconds(5);
constexpr auto kIdleLook = std::chrono::seconds(1);
constexpr uint32_t kCephxProtocol = 2;  // CEPH_AUTH_CEPHX
}  // namespace

CephxKeeper::CephxKeeper(const AuthSettings& auth, std::function<ConnectionRef()> monitor)
    : auth_(auth), monitor_(std::move(monitor)) {}

CephxKeeper::~CephxKeeper() { stop(); }

void CephxKeeper::start() {
  if (auth_.method != wire::kAuthCephx || !auth_.tickets || thread_.joinable()) return;
  thread_ = std::thread([this] { renew_loop(); });
}

void CephxKeeper::stop() {
  {
    std::lock_guard<std::mutex> guard(lock_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CephxKeeper::renew_loop() {
  std::unique_lock<std::mutex> guard(lock_);
  while (!stop_) {
    guard.unlock();
    SysClock::time_point next = renew_if_due();
    guard.lock();
    const auto limit = SysClock::now() + kIdleLook;
    wake_.wait_until(guard, std::min(next, limit), [this] { return stop_; });
  }
}

SysClock::time_point CephxKeeper::renew_if_due() {
  const auto now = SysClock::now();
  std::optional<auth::CephxTicket> auth_ticket = auth_.tickets->get(auth::kServiceAuth);
  if (!auth_ticket) return now + kIdleLook;  // not authenticated with a monitor (yet)
  uint32_t services = 0;
  SysClock::time_point due = SysClock::time_point::max();
  for (uint32_t s = 1; s <= auth::kServiceAuth; s <<= 1) {
    std::optional<auth::CephxTicket> t = auth_.tickets->get(s);
    if (!t) continue;
    services |= s;
    due = std::min(due, t->renew_after);
  }
  if (now < due) return due;
  {
    std::lock_guard<std::mutex> guard(lock_);
    if (request_sent_ + kRequestPatience > now) return request_sent_ + kRequestPatience;
  }
  ConnectionRef mon = monitor_ ? monitor_() : nullptr;
  if (!mon) return now + kIdleLook;
  if (auth_ticket->expires <= now) {
    BYPASS_LOG(Warn, "msgr", "cephx: %s's auth ticket expired before it could be renewed; its next monitor "
               "session authenticates afresh", auth_.cephx_name.to_string().c_str());
    return now + kIdleLook;
  }
  auto request = std::make_shared<MonAuth>(
      kCephxProtocol, auth::principal_request(*auth_ticket, auth_.tickets->global_id(), services));
  {
    std::lock_guard<std::mutex> guard(lock_);
    request_sent_ = now;
  }
  mon->send_message(request);
  return now + kRequestPatience;
}

bool CephxKeeper::intercept(const MessageRef& m) {
  if (auth_.method != wire::kAuthCephx) return false;
  if (m->type() == kMsgAuth && auth_.keyring && auth_.cephx_secrets) {
    answer_request(m);
    return true;
  }
  if (m->type() == kMsgAuthReply && auth_.tickets) take_reply(m);
  return false;
}

void CephxKeeper::answer_request(const MessageRef& m) {
  MonAuth request;
  request.front() = m->front();
  auto reply = std::make_shared<MonAuthReply>();
  reply->protocol = kCephxProtocol;
  try {
    request.decode_payload();
    reply->result_bl = auth::cephx_principal_reply(auth_.cephx_secrets, auth_.cephx_ticket_ttl,
                                                   request.auth_payload(), &reply->global_id);
  } catch (const std::exception& e) {
    reply->result = -EACCES;
    reply->result_msg = e.what();
    BYPASS_LOG(Info, "msgr", "refused GET_PRINCIPAL_SESSION_KEY from %s: %s", m->source().to_string().c_str(),
               e.what());
  }
  if (m->connection()) m->connection()->send_message(reply);
}

void CephxKeeper::take_reply(const MessageRef& m) {
  MonAuthReply reply;
  reply.front() = m->front();
  std::optional<auth::CephxTicket> auth_ticket = auth_.tickets->get(auth::kServiceAuth);
  try {
    reply.decode_payload();
    if (reply.result != 0) {
      BYPASS_LOG(Warn, "msgr", "cephx: ticket renewal refused (%d): %s", reply.result, reply.result_msg.c_str());
    } else if (auth_ticket) {
      for (const auto& t : auth::principal_reply(reply.result_bl, auth_ticket->session_key)) auth_.tickets->put(t);
    }
  } catch (const std::exception& e) {
    BYPASS_LOG(Warn, "msgr", "cephx: unusable ticket renewal reply: %s", e.what());
  }
  std::lock_guard<std::mutex> guard(lock_);
  request_sent_ = {};
  wake_.notify_all();
}

}  // namespace bypass::msgr
