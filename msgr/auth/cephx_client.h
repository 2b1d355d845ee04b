// cephx as a client (doc/dev/cephx_protocol.rst), in msgr2's AUTH frames:
//
// To a monitor (auth mode AUTH_MODE_MON), CephxMonClient:
//   AUTH_REQUEST       __u8 10, EntityName, __le64 global_id
//   AUTH_REPLY_MORE    CephXServerChallenge {__u8 1, __le64 server_challenge}
//   AUTH_REQUEST_MORE  CephXRequestHeader {__le16 GET_AUTH_SESSION_KEY}, CephXAuthenticate {__u8 3,
//                      client_challenge, key = proof(secret, challenges), old ticket, other_keys}
//   AUTH_DONE          CephXResponseHeader, the service ticket reply (the "auth" ticket: a session
//                      key sealed with the entity's secret plus the opaque ticket), the connection
//                      secret sealed with that session key, and the tickets for other_keys sealed
//                      with it too.
// To any other service (auth mode AUTH_MODE_AUTHORIZER), CephxAuthorizerClient sends an authorizer
// built from the service's ticket: __u8 1, global_id, service_id, ticket blob, then CephXAuthorize
// {nonce, challenge answer} sealed with the ticket's session key; the service may answer
// AUTH_REPLY_MORE with a sealed challenge first, then AUTH_DONE with CephXAuthorizeReply
// {nonce + 1, connection secret}.
//
// The session key signs AUTH_SIGNATURE; the connection secret keys secure mode.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "msgr/auth/cephx_crypto.h"

namespace bypass::msgr::auth {

constexpr uint16_t kCephxGetAuthSessionKey = 0x0100;
constexpr uint16_t kCephxGetPrincipalSessionKey = 0x0200;
constexpr uint8_t kAuthModeAuthorizer = 1;
constexpr uint8_t kAuthModeMon = 10;
constexpr uint32_t kServiceAuth = 0x20;  // CEPH_ENTITY_TYPE_AUTH

// One service ticket: what the client keeps (the session key for that service and the ticket it
// cannot read, sealed with the service's secret).
struct CephxTicket {
  uint32_t service_id = 0;
  CephxKey session_key;
  uint64_t secret_id = 0;
  std::string blob;
  std::chrono::system_clock::time_point expires{};
  // Half-way through its validity (Ceph's CephXTicketHandler renews later, at three quarters:
  // expires - validity / 4 in verify_service_ticket_reply; half-way leaves more room for a retry).
  std::chrono::system_clock::time_point renew_after{};

  void encode_blob(wire::Encoder& enc) const;  // CephXTicketBlob
};

// A session's monitor-style cephx authentication (AUTH_MODE_MON), from either end: the challenge
// the server sent, the global id it assigned and the entity that proved its key. Ceph keeps these
// in the session's auth handler (CephxClientHandler in MonConnection, CephxServiceHandler in the
// monitor's MonSession); a renewal of the auth ticket on the session (GET_AUTH_SESSION_KEY in an
// MAuth) answers the same challenge and keeps the global id.
struct CephxMonSession {
  uint64_t server_challenge = 0;  // 0: the session did not authenticate monitor-style with cephx
  uint64_t global_id = 0;
  CephxEntity entity;
};

// The tickets a messenger got from its monitor, shared by its connections (any thread).
class CephxTicketStore {
 public:
  void put(const CephxTicket& t);
  std::optional<CephxTicket> get(uint32_t service_id) const;
  void set_global_id(uint64_t id);
  uint64_t global_id() const;

 private:
  mutable std::mutex lock_;
  std::map<uint32_t, CephxTicket> tickets_;
  uint64_t global_id_ = 0;
};

// Decodes a CephXServiceTicketReply sealed for `key`, appending each ticket; the AUTH ticket's and
// every other. A renewal's ticket blob comes sealed with the old session key (`old_session_key`;
// null: a sealed blob is an error). Throws AuthError / wire::DecodeError.
void decode_ticket_reply(wire::Decoder& dec, const CephxKey& key, const char* what_ticket,
                         std::vector<CephxTicket>* out, const CephxKey* old_session_key = nullptr);

// CEPHX_GET_AUTH_SESSION_KEY's reply (CephxServiceHandler::handle_request): CephXResponseHeader, the
// auth ticket (its session key sealed with the entity's key), then, when the request asked for
// other_keys, the connection secret sealed with the new session key and the other services'
// tickets sealed with it too.
struct AuthSessionKeyReply {
  std::vector<CephxTicket> tickets;  // the auth ticket first
  CephxKey session_key;              // the auth ticket's
  std::string connection_secret;     // empty when none came (always, on an MAuth)
};
// Throws AuthError with the monitor's status when it refused, or when the reply does not decrypt.
AuthSessionKeyReply decode_auth_session_key_reply(std::string_view reply, const CephxKey& key,
                                                  const CephxKey* old_session_key);

// The request type a cephx request or reply begins with (CephXRequestHeader /
// CephXResponseHeader.request_type), 0 when it is too short to have one.
uint16_t cephx_request_type(std::string_view payload);

class CephxMonClient {
 public:
  // `want`: CEPH_ENTITY_TYPE_* bits of the services to get tickets for along with the auth ticket.
  CephxMonClient(CephxEntity name, CephxKey key, uint32_t want);
  std::string request_payload(uint64_t global_id) const;
  std::string answer_challenge(std::string_view reply_more);
  // Decrypts the AUTH_DONE payload; throws AuthError when it does not decrypt with our key.
  SessionKeys finish(std::string_view done_payload, bool secure);
  const std::vector<CephxTicket>& tickets() const { return tickets_; }
  // The monitor's CephXServerChallenge: a renewal of the auth ticket on this session answers it.
  uint64_t server_challenge() const { return server_challenge_; }

 private:
  CephxEntity name_;
  CephxKey key_;
  uint32_t want_;
  uint64_t server_challenge_ = 0;
  std::vector<CephxTicket> tickets_;
};

// Renewal of the auth ticket on the monitor session it came from, sent in an MAuth as Ceph's
// MonClient does (MonClient::_check_auth_tickets; CephxClientHandler::build_request when `need`
// has CEPH_ENTITY_TYPE_AUTH): GET_AUTH_SESSION_KEY again, the proof computed from the challenge the
// monitor sent when the session authenticated and a new client challenge, old_ticket the current
// auth ticket. The monitor checks the old ticket (CephxServiceHandler::verify_old_ticket: same
// global id) and answers with a new auth ticket whose blob is sealed with the old session key
// (should_enc_ticket). `other_keys`: services whose tickets come along (sealed with the new key).
std::string auth_renewal_request(const CephxKey& key, uint64_t server_challenge, const CephxTicket& auth_ticket,
                                 uint32_t other_keys);
// The renewed auth ticket first, then the others. Throws AuthError (refused, or does not decrypt
// with our key and the old session key) and wire::DecodeError.
std::vector<CephxTicket> auth_renewal_reply(std::string_view reply, const CephxKey& key,
                                            const CephxKey& old_session_key);

// GET_PRINCIPAL_SESSION_KEY, sent in an MAuth message on an authenticated monitor session to get
// (or renew) service tickets: the header, an authorizer built from the auth ticket, then
// CephXServiceTicketRequest {__u8 1, __le32 services}. The reply's tickets are sealed with the
// auth ticket's session key.
std::string principal_request(const CephxTicket& auth_ticket, uint64_t global_id, uint32_t services);
// Throws AuthError with the monitor's status when it refused, or when the reply does not decrypt.
std::vector<CephxTicket> principal_reply(std::string_view reply, const CephxKey& auth_session_key);

class CephxAuthorizerClient {
 public:
  CephxAuthorizerClient(CephxTicket ticket, uint64_t global_id);
  std::string request_payload() const { return authorizer(false, 0); }
  std::string answer_challenge(std::string_view reply_more);
  // Checks the service's nonce + 1; throws AuthError when it is wrong or does not decrypt.
  SessionKeys finish(std::string_view done_payload, bool secure);

 private:
  std::string authorizer(bool have_challenge, uint64_t challenge_plus_one) const;
  CephxTicket ticket_;
  uint64_t global_id_;
  uint64_t nonce_;
};

}  // namespace bypass::msgr::auth
