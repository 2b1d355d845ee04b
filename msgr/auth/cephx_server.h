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
// Tickets are sealed with per-process service secrets (CephxServiceSecrets::process()): every
// Bypass server of this process reads them back, so a client that got its tickets from a Bypass
// `mon` presents them to a Bypass `osd` of the same process (CephxAuthorizerServer):
//
//   AUTH_REQUEST       the authorizer: __u8 1 (AUTH_MODE_AUTHORIZER), global_id, service_id, the
//                      ticket blob, CephXAuthorize {nonce} sealed with the ticket's session key
//   AUTH_REPLY_MORE    CephXAuthorizeChallenge {server_challenge} sealed with the session key
//   AUTH_REQUEST_MORE  the authorizer again, now with server_challenge + 1
//   AUTH_DONE          CephXAuthorizeReply {nonce + 1, connection secret} sealed with the session key
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
  CephxServiceSecrets();  // random secrets
  // One given secret for every service: deterministic tickets (the fuzzer's recorded exchanges).
  explicit CephxServiceSecrets(const CephxKey& every_service);
  // The secrets every Bypass server of this process seals and opens tickets with.
  static std::shared_ptr<const CephxServiceSecrets> process();
  const CephxKey& secret(uint32_t service_id) const;  // any CEPH_ENTITY_TYPE_* bit
  static constexpr uint64_t kSecretId = 1;

 private:
  std::map<uint32_t, CephxKey> secrets_;
};

class CephxMonServer {
 public:
  // `ticket_ttl`: how long the tickets it hands out are valid (Ceph's auth_service_ticket_ttl).
  CephxMonServer(std::shared_ptr<const Keyring> keyring, std::shared_ptr<const CephxServiceSecrets> secrets,
                 std::chrono::seconds ticket_ttl = std::chrono::seconds(3600));
  // AUTH_REQUEST: returns the AUTH_REPLY_MORE payload (our challenge). Throws AuthError on a mode
  // other than AUTH_MODE_MON and wire::DecodeError on a malformed payload.
  std::string start(std::string_view request);
  // AUTH_REQUEST_MORE: checks the client's proof; returns the AUTH_DONE payload and fills `keys`
  // (a 64-byte connection secret in secure mode). Throws AuthError naming the client when its
  // name is not in the keyring or the proof is wrong.
  std::string authenticate(std::string_view request_more, bool secure, SessionKeys* keys);
  const CephxEntity& peer() const { return peer_; }
  uint64_t global_id() const { return global_id_; }
  uint64_t server_challenge() const { return server_challenge_; }

 private:
  std::shared_ptr<const Keyring> keyring_;
  std::shared_ptr<const CephxServiceSecrets> secrets_;
  CephxEntity peer_;
  std::chrono::seconds ticket_ttl_;
  uint64_t global_id_ = 0;
  uint64_t server_challenge_ = 0;
};

// A ticket for `service_id` as a monitor-style server hands it out: `session_key` for its holder,
// the blob sealed with the service's secret, valid for `ttl`.
CephxTicket issue_ticket(const CephxServiceSecrets& secrets, std::chrono::seconds ttl, uint32_t service_id,
                         const CephxEntity& holder, uint64_t global_id, const CephxKey& session_key);

// GET_PRINCIPAL_SESSION_KEY (in an MAuth on an authenticated session): checks the authorizer built
// from the auth ticket and returns the reply with fresh tickets for the services asked for, sealed
// with the auth ticket's session key; `global_id` gets the requester's. Like a Ceph monitor (16.2,
// seen in ceph_interop_test) it hands out no auth ticket there, whatever the request asks for: the
// auth ticket is renewed with GET_AUTH_SESSION_KEY (cephx_auth_renewal_reply). Throws AuthError
// (expired or foreign ticket, or only the auth ticket asked for) and wire::DecodeError.
std::string cephx_principal_reply(const std::shared_ptr<const CephxServiceSecrets>& secrets,
                                  std::chrono::seconds ticket_ttl, std::string_view request, uint64_t* global_id);

// GET_AUTH_SESSION_KEY (in an MAuth) on a session that authenticated monitor-style: the client
// renews its auth ticket, as Ceph's MonClient does on its monitor session. Checks the proof against
// the session's challenge and the old auth ticket against the session's global id, and returns the
// reply: a new auth ticket for `session.entity` (its session key sealed with the entity's key, the
// ticket sealed with the old ticket's session key) and the tickets for `other_keys` sealed with the
// new session key. Throws AuthError naming the entity, and wire::DecodeError.
std::string cephx_auth_renewal_reply(const Keyring& keyring, const CephxServiceSecrets& secrets,
                                     std::chrono::seconds ticket_ttl, const CephxMonSession& session,
                                     std::string_view request);

// A service checking the tickets a monitor-style server of this process handed out.
class CephxAuthorizerServer {
 public:
  // `service_id`: our own CEPH_ENTITY_TYPE_* bit (the ticket must be for us).
  CephxAuthorizerServer(std::shared_ptr<const CephxServiceSecrets> secrets, uint32_t service_id);
  // AUTH_REQUEST: opens the ticket and the authorizer; returns the AUTH_REPLY_MORE payload (our
  // sealed challenge). Throws AuthError when the ticket is not ours, does not open or has expired
  // ("cephx: client.admin's ticket for the osd expired 12 s ago"), wire::DecodeError when malformed.
  std::string start(std::string_view request);
  // AUTH_REQUEST_MORE: checks the challenge answer; returns the AUTH_DONE payload and fills `keys`.
  std::string authenticate(std::string_view request_more, bool secure, SessionKeys* keys);
  const CephxEntity& peer() const { return peer_; }
  uint64_t global_id() const { return global_id_; }

 private:
  struct Authorizer {
    uint64_t nonce = 0;
    bool have_challenge = false;
    uint64_t challenge_plus_one = 0;
  };
  friend std::string cephx_principal_reply(const std::shared_ptr<const CephxServiceSecrets>&, std::chrono::seconds,
                                           std::string_view, uint64_t*);
  Authorizer open_authorizer(wire::Decoder& dec);

  std::shared_ptr<const CephxServiceSecrets> secrets_;
  uint32_t service_id_;
  CephxEntity peer_;
  CephxKey session_key_;
  uint64_t global_id_ = 0;
  uint64_t server_challenge_ = 0;
};

}  // namespace bypass::msgr::auth
