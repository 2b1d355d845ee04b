// cephx ticket upkeep on authenticated sessions, the part of Ceph's MonClient and AuthMonitor a
// messenger needs (MAuth / MAuthReply carrying GET_PRINCIPAL_SESSION_KEY, mon_auth.h):
//
//  - as a client, tickets are renewed before they expire: once any ticket is half-way through its
//    validity (renew_after, as MonClient::_check_auth_tickets does), an MAuth asking for all the
//    services we hold tickets for goes out on a connected monitor session, and the tickets of
//    every MAuthReply that decrypts with our auth ticket's session key replace the old ones.
//    Sessions already open are not affected by expiry; a reconnect presents the renewed ticket.
//  - as a server holding a keyring, MAuths are answered here (never dispatched): the authorizer
//    built from the auth ticket is checked and fresh tickets sealed with its session key go back.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "msgr/handshake.h"
#include "msgr/message.h"

namespace bypass::msgr {

class CephxKeeper {
 public:
  // `monitor`: a connected session to a monitor, or null (asked each time a renewal is due).
  CephxKeeper(const AuthSettings& auth, std::function<ConnectionRef()> monitor);
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
  void renew_loop();
  // Sends the renewal request when due; returns when to look again.
  std::chrono::system_clock::time_point renew_if_due();
  void answer_request(const MessageRef& m);
  void take_reply(const MessageRef& m);

  const AuthSettings& auth_;
  std::function<ConnectionRef()> monitor_;
  std::mutex lock_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::chrono::system_clock::time_point request_sent_{};  // an unanswered request (or epoch)
  std::thread thread_;
};

}  // namespace bypass::msgr
