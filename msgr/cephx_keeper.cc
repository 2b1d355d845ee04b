#include "msgr/cephx_keeper.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "base/log.h"
#include "msgr/async_connection.h"
#include "msgr/auth/cephx_server.h"
#include "msgr/mon_auth.h"

namespace bypass::msgr {

namespace {
using SysClock = std::chrono::system_clock;
// How long an unanswered renewal request blocks the next one, and the longest sleep between looks
// (a monitor session may come up, or new tickets arrive, at any time).
constexpr auto kRequestPatience = std::chrono::seconds(5);
constexpr auto kIdleLook = std::chrono::seconds(1);
constexpr uint32_t kCephxProtocol = 2;  // CEPH_AUTH_CEPHX

// After a refused renewal of the auth ticket: a quarter of what is left of it, within these.
constexpr auto kRefusedRetryMin = std::chrono::seconds(5);
constexpr auto kRefusedRetryMax = std::chrono::minutes(10);

// "in 43199.8 s", "2.0 s ago".
std::string seconds_from_now(std::chrono::system_clock::time_point t) {
  const double s = std::chrono::duration<double>(t - std::chrono::system_clock::now()).count();
  char text[48];
  std::snprintf(text, sizeof(text), s >= 0 ? "in %.1f s" : "%.1f s ago", s >= 0 ? s : -s);
  return text;
}
}  // namespace

CephxKeeper::CephxKeeper(const AuthSettings& auth, std::function<ConnectionRef(uint64_t)> monitor, PerfCounters& perf)
    : auth_(auth), monitor_(std::move(monitor)), perf_(perf) {}

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
    wake_.wait_until(guard, std::min(next, limit), [this] { return stop_ || replied_; });
    replied_ = false;
  }
}

SysClock::time_point CephxKeeper::renew_if_due() {
  const auto now = SysClock::now();
  std::optional<auth::CephxTicket> auth_ticket = auth_.tickets->get(auth::kServiceAuth);
  if (!auth_ticket) return now + kIdleLook;  // not authenticated with a monitor (yet)
  // The auth ticket is due at its renew_after unless the monitor refused to renew it; the service
  // tickets at the earliest of theirs. MonClient asks for the services separately from the auth
  // ticket too (CephxClientHandler::build_request: GET_PRINCIPAL_SESSION_KEY never carries AUTH).
  uint32_t services = 0;
  SysClock::time_point services_due = SysClock::time_point::max();
  for (uint32_t s = 1; s < auth::kServiceAuth; s <<= 1) {
    std::optional<auth::CephxTicket> t = auth_.tickets->get(s);
    if (!t) continue;
    services |= s;
    services_due = std::min(services_due, t->renew_after);
  }
  SysClock::time_point auth_due;
  {
    std::lock_guard<std::mutex> guard(lock_);
    auth_due = auth_retry_for_ == auth_ticket->expires ? std::max(auth_ticket->renew_after, auth_retry_at_)
                                                       : auth_ticket->renew_after;
  }
  // Past its expiry the auth ticket is still offered for renewal (CephxClientHandler does: the
  // monitor accepts an old ticket while its rotating secret lasts), but no longer used for service
  // tickets.
  const bool auth_expired = auth_ticket->expires <= now;
  const SysClock::time_point next_due = auth_expired ? auth_due : std::min(auth_due, services_due);
  if (now < next_due) return auth_expired ? next_due : std::min(next_due, auth_ticket->expires);
  {
    std::lock_guard<std::mutex> guard(lock_);
    if (request_sent_ + kRequestPatience > now) return request_sent_ + kRequestPatience;
  }
  ConnectionRef mon = monitor_ ? monitor_(auth_.tickets->global_id()) : nullptr;
  if (!mon) {
    if (auth_expired) warn_auth_ticket_lost(*auth_ticket, "no monitor session was up to renew it on");
    return now + kIdleLook;
  }
  if (now >= auth_due) {
    // The services due now come along with the new auth ticket.
    if (request_auth_renewal(mon, *auth_ticket, now >= services_due ? services : 0)) return now + kRequestPatience;
    if (auth_expired) warn_auth_ticket_lost(*auth_ticket, "the monitor session up is not the one it came from");
    if (auth_expired || now < services_due) return now + kIdleLook;
  }
  auto request = std::make_shared<MonAuth>(
      kCephxProtocol, auth::principal_request(*auth_ticket, auth_.tickets->global_id(), services));
  {
    std::lock_guard<std::mutex> guard(lock_);
    request_sent_ = now;
    pending_ = Request::ServiceTickets;
  }
  mon->send_message(request);
  return now + kRequestPatience;
}

bool CephxKeeper::request_auth_renewal(const ConnectionRef& mon, const auth::CephxTicket& auth_ticket,
                                       uint32_t other_keys) {
  const std::string me = auth_.cephx_name.to_string();
  const auth::CephxKey* key = auth_.keyring ? auth_.keyring->find(auth_.cephx_name) : nullptr;
  const auth::CephxMonSession session = cephx_mon_session_of(*mon);
  // The monitor checks the proof against the challenge of the session the request arrives on and
  // the old ticket against that session's global id (CephxServiceHandler::verify_old_ticket). Our
  // tickets are those of the last monitor session that authenticated; a session that is not it
  // (another monitor, or a link that just reconnected) cannot renew them; a reconnect brings new
  // tickets anyway.
  if (key == nullptr || session.server_challenge == 0 || session.global_id != auth_.tickets->global_id()) {
    BYPASS_LOG(Debug, "msgr", "cephx: %s's auth ticket is due, but the monitor session up (global id %llu) is "
               "not the one it came from (global id %llu)", me.c_str(),
               static_cast<unsigned long long>(session.global_id),
               static_cast<unsigned long long>(auth_.tickets->global_id()));
    return false;
  }
  auto request = std::make_shared<MonAuth>(
      kCephxProtocol, auth::auth_renewal_request(*key, session.server_challenge, auth_ticket, other_keys));
  {
    std::lock_guard<std::mutex> guard(lock_);
    request_sent_ = SysClock::now();
    pending_ = Request::AuthTicket;
  }
  BYPASS_LOG(Debug, "msgr", "cephx: renewing %s's auth ticket (expires %s) on the monitor session", me.c_str(),
             seconds_from_now(auth_ticket.expires).c_str());
  mon->send_message(request);
  return true;
}

void CephxKeeper::warn_auth_ticket_lost(const auth::CephxTicket& auth_ticket, const std::string& why) {
  {
    std::lock_guard<std::mutex> guard(lock_);
    if (auth_loss_reported_for_ == auth_ticket.expires) return;
    auth_loss_reported_for_ = auth_ticket.expires;
  }
  BYPASS_LOG(Warn, "msgr", "cephx: %s's auth ticket expired %s and %s: its service tickets cannot be renewed until "
             "a new monitor session authenticates afresh (a reconnect to a monitor does)",
             auth_.cephx_name.to_string().c_str(), seconds_from_now(auth_ticket.expires).c_str(), why.c_str());
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
  const char* what = "GET_PRINCIPAL_SESSION_KEY";
  try {
    request.decode_payload();
    if (auth::cephx_request_type(request.auth_payload()) == auth::kCephxGetAuthSessionKey) {
      // The auth ticket's renewal on this session (CephxServiceHandler::handle_request).
      what = "GET_AUTH_SESSION_KEY";
      const auth::CephxMonSession session =
          m->connection() ? cephx_mon_session_of(*m->connection()) : auth::CephxMonSession{};
      reply->global_id = session.global_id;
      reply->result_bl = auth::cephx_auth_renewal_reply(*auth_.keyring, *auth_.cephx_secrets, auth_.cephx_ticket_ttl,
                                                        session, request.auth_payload());
      bump(perf_.cephx_auth_renewals_served);
    } else {
      reply->result_bl = auth::cephx_principal_reply(auth_.cephx_secrets, auth_.cephx_ticket_ttl,
                                                     request.auth_payload(), &reply->global_id);
    }
  } catch (const std::exception& e) {
    reply->result = -EACCES;
    reply->result_msg = e.what();
    BYPASS_LOG(Info, "msgr", "refused %s from %s: %s", what, m->source().to_string().c_str(), e.what());
  }
  if (m->connection()) m->connection()->send_message(reply);
}

void CephxKeeper::take_reply(const MessageRef& m) {
  MonAuthReply reply;
  reply.front() = m->front();
  std::optional<auth::CephxTicket> auth_ticket = auth_.tickets->get(auth::kServiceAuth);
  Request pending;
  {
    std::lock_guard<std::mutex> guard(lock_);
    pending = pending_;
    request_sent_ = {};
    pending_ = Request::None;
  }
  const std::string me = auth_.cephx_name.to_string();
  try {
    reply.decode_payload();
    // The reply says which request it answers (CephXResponseHeader); a refusal may carry none.
    const uint16_t type = auth::cephx_request_type(reply.result_bl);
    const bool auth_reply = type == auth::kCephxGetAuthSessionKey || (type == 0 && pending == Request::AuthTicket);
    if (reply.result != 0 && auth_reply) {
      const std::string why = "the monitor refused to renew it (" + std::to_string(reply.result) + ": " +
                              reply.result_msg + ")";
      const auto now = SysClock::now();
      if (!auth_ticket || auth_ticket->expires <= now) {
        // Not tried again: only a new monitor session brings a new auth ticket now.
        {
          std::lock_guard<std::mutex> guard(lock_);
          auth_retry_at_ = SysClock::time_point::max();
          auth_retry_for_ = auth_ticket ? auth_ticket->expires : SysClock::time_point{};
        }
        if (auth_ticket) warn_auth_ticket_lost(*auth_ticket, why);
      } else {
        const auto left = std::chrono::duration_cast<SysClock::duration>(auth_ticket->expires - now);
        const SysClock::time_point retry =
            now + std::clamp<SysClock::duration>(left / 4, kRefusedRetryMin, kRefusedRetryMax);
        {
          std::lock_guard<std::mutex> guard(lock_);
          auth_retry_at_ = retry;
          auth_retry_for_ = auth_ticket->expires;
        }
        BYPASS_LOG(Warn, "msgr", "cephx: %s; %s's auth ticket expires %s, trying again %s (once it expires its "
                   "service tickets cannot be renewed until a new monitor session authenticates afresh)",
                   why.c_str(), me.c_str(), seconds_from_now(auth_ticket->expires).c_str(),
                   seconds_from_now(retry).c_str());
      }
    } else if (reply.result != 0) {
      BYPASS_LOG(Warn, "msgr", "cephx: ticket renewal refused (%d): %s", reply.result, reply.result_msg.c_str());
    } else if (auth_ticket && type == auth::kCephxGetAuthSessionKey) {
      const auth::CephxKey* key = auth_.keyring ? auth_.keyring->find(auth_.cephx_name) : nullptr;
      if (key == nullptr) throw auth::AuthError("cephx: no key for " + me + " to open the renewed auth ticket with");
      std::vector<auth::CephxTicket> tickets = auth::auth_renewal_reply(reply.result_bl, *key, auth_ticket->session_key);
      for (const auto& t : tickets) auth_.tickets->put(t);
      bump(perf_.cephx_auth_renewals);
      BYPASS_LOG(Info, "msgr", "cephx: %s's auth ticket renewed on the monitor session (expires %s)", me.c_str(),
                 seconds_from_now(tickets.front().expires).c_str());
    } else if (auth_ticket) {
      for (const auto& t : auth::principal_reply(reply.result_bl, auth_ticket->session_key)) auth_.tickets->put(t);
    }
  } catch (const std::exception& e) {
    BYPASS_LOG(Warn, "msgr", "cephx: unusable ticket renewal reply: %s", e.what());
  }
  {
    std::lock_guard<std::mutex> guard(lock_);
    replied_ = true;
  }
  wake_.notify_all();
}

}  // namespace bypass::msgr
