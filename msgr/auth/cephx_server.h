// cephx as a server, monitor-style: the server holds the clients' keys (a keyring) and hands out
// tickets, exactly the exchange CephxMonClient (cephx_client.h) runs against a Ceph monitor, so a
// Bypass client, and Ceph's own clients (the `ceph` CLI), authenticate against a Bypass daemon.
//
//   AUTH_REQUEST       __u8 10 (AUTH_MODE_MON), EntityName, __le64 global_id
//   AUTH_REPLY_MORE    CephXServerChallenge
//   AUTH_REQUEST_MORE  GET_AUTH_SESSION_KEY with the client's proof (checked against the keyring)
//   AUTH_DONE          the auth ticket (sealed with the client's key), the connection secret and
//                      the tickets for the services it asked for (sealed with the new session key)
//
// Tickets are sealed with per-process service secrets (CephxServiceSecrets): only this process
// can read them back, which is all a single Bypass server needs.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "msgr/auth/cephx_client.h"

namespace bypass::msgr::auth {

// One secret (secret_id 1) per service type, made at start-up.
class CephxServiceSecrets {
 public:
  CephxServiceSecrets();
  const CephxKey& secret(uint32_t service_id) const;  // any CEPH_ENTITY_TYPE_* bit
  static constexpr uint64_t kSecretId = 1;
  std::chrono::seconds ticket_ttl{3600};

 private:
  std::map<uint32_t, CephxKey> secrets_;
};

class CephxMonServer {
 public:
  CephxMonServer(std::shared_ptr<const Keyring> keyring, std::shared_ptr<const CephxServiceSecrets> secrets);
  // AUTH_REQUEST: returns the AUTH_REPLY_MORE payload (our challenge). Throws AuthError on a mode
  // other than AUTH_MODE_MON and wire::DecodeError on a malformed payload.
  std::string start(std::string_view request);
  // AUTH_REQUEST_MORE: checks the client's proof; returns the AUTH_DONE payload and fills `keys`
  // (a 64-byte connection secret in secure mode). Throws AuthError naming the client when its
  // name is not in the keyring or the proof is wrong.
  std::string authenticate(std::string_view request_more, bool secure, SessionKeys* keys);
  const CephxEntity& peer() const { return peer_; }
  uint64_t global_id() const { return global_id_; }

 private:
  std::shared_ptr<const Keyring> keyring_;
  std::shared_ptr<const CephxServiceSecrets> secrets_;
  CephxEntity peer_;
  uint64_t global_id_ = 0;
  uint64_t server_challenge_ = 0;
};

}  // namespace bypass::msgr::auth
