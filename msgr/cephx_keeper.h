// cephx ticket upkeep on authenticated sessions, the part of Ceph's MonClient and AuthMonitor a
// messenger needs (MAuth / MAuthReply, mon_auth.h):
//
//  - as a client, tickets are renewed before they expire, once half-way through their validity
//    (renew_after), on a connected monitor session, the way MonClient::_check_auth_tickets does:
//      * the auth ticket (CEPH_ENTITY_TYPE_AUTH) with GET_AUTH_SESSION_KEY presenting the old
//        ticket, on the session it came from (the proof answers that session's challenge); the
//        reply's new auth ticket comes sealed with the old session key, and the service tickets
//        due then come along, sealed with the new one;
//      * the service tickets otherwise with GET_PRINCIPAL_SESSION_KEY, an authorizer built from
//        the auth ticket; the reply's tickets are sealed with the auth ticket's session key.
//    Sessions already open are not affected by expiry; a reconnect presents the renewed ticket.
//    When the auth ticket cannot be renewed (no monitor session, or the monitor refused; a refusal
//    is retried later while the ticket lasts) the log says so and when it expires; the next
//    monitor session authenticates afresh.
//  - as a server holding a keyring, MAuths are answered here (never dispatched), both requests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "msgr/handshake.h"
#include "msgr/message.h"
#include "msgr/perf_counters.h"

namespace bypass::msgr {

class CephxKeeper {
 public:
  // `monitor(global_id)`: a connected session to a monitor, preferably the one that assigned
  // `global_id`, or null (asked each time a renewal is due).
  CephxKeeper(const AuthSettings& auth, std::function<ConnectionRef(uint64_t global_id)> monitor, PerfCounters& perf);
  ~CephxKeeper();
  CephxKeeper(const CephxKeeper&) = delete;
  CephxKeeper& operator=(const CephxKeeper&) = delete;

  // Starts the renewal thread (clients: only when there is a ticket store).
  void start();
  void stop();
  // From deliver(): true when `m` was an MAuth this server answered (not to be dispatched). An
  // MAuthReply is read for its tickets and still dispatched (the application may await it too).
  bool intercept(const MessageRef& m);

 private:
  using SysClock = std::chrono::system_clock;
  enum class Request { None, AuthTicket, ServiceTickets };

  void renew_loop();
  // Sends the renewal request when due; returns when to look again.
  SysClock::time_point renew_if_due();
  // Renews the auth ticket on `mon` when it is the session the ticket came from; false when not.
  bool request_auth_renewal(const ConnectionRef& mon, const auth::CephxTicket& auth_ticket, uint32_t other_keys);
  // Says once per auth ticket that it can no longer be renewed, and why.
  void warn_auth_ticket_lost(const auth::CephxTicket& auth_ticket, const std::string& why);
  void answer_request(const MessageRef& m);
  void take_reply(const MessageRef& m);

  const AuthSettings& auth_;
  std::function<ConnectionRef(uint64_t global_id)> monitor_;
  PerfCounters& perf_;
  std::mutex lock_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool replied_ = false;  // a reply arrived: the loop looks at the new tickets' times at once
  std::chrono::system_clock::time_point request_sent_{};  // an unanswered request (or epoch)
  Request pending_ = Request::None;
  // After the monitor refused to renew the auth ticket expiring at auth_retry_for_, the next try
  // waits until auth_retry_at_ (a new auth ticket, from a new session, does not).
  SysClock::time_point auth_retry_at_{};
  SysClock::time_point auth_retry_for_{};
  SysClock::time_point auth_loss_reported_for_{};  // the expiry of the auth ticket whose loss was logged
  std::thread thread_;
};

}  // namespace bypass::msgr
