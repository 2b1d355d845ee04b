// Bypass's shared-secret auth method for msgr2 (method id kAuthSharedSecret).
//
// Both peers hold the same secret (ms.secret). The exchange is a mutual HMAC-SHA256
// challenge-response carried in msgr2's AUTH frames:
//   client AUTH_REQUEST       payload: __u8 version(1), string entity name, 32-byte client nonce
//   server AUTH_REPLY_MORE    payload: 32-byte server nonce
//   client AUTH_REQUEST_MORE  payload: HMAC(secret, "bypass-client" | name | cn | sn)
//   server AUTH_DONE          payload: HMAC(secret, "bypass-server" | name | cn | sn)
// Each side checks the other's proof in constant time. Both then derive
//   session_key       = HMAC(secret, "bypass-session" | cn | sn)           (signs AUTH_SIGNATURE)
//   connection_secret = HMAC(session_key, "bypass-connection" | 0x01) (first 40 bytes used:
//                       AES key 16 | nonce A 12 | nonce B 12, the layout of Ceph's
//                       connection_secret; the client receives with nonce A, the server with B).
// Fresh nonces on every connection mean every (re)connection gets fresh keys: this is how a
// session rekeys when its nonce budget runs out.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "msgr/wire/aes_gcm.h"

namespace bypass::msgr::auth {

using Digest = std::array<uint8_t, 32>;
using Challenge = std::array<uint8_t, 32>;

Digest hmac_sha256(std::string_view key, std::string_view data);
bool digest_equal(const Digest& a, std::string_view b);  // constant time
Challenge random_challenge();

struct SessionKeys {
  std::string session_key;  // 32 bytes
  wire::AesKey aes_key{};
  wire::AesNonce client_rx_nonce{};
  wire::AesNonce server_rx_nonce{};
};

class AuthError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The client's side of one exchange.
class SharedSecretClient {
 public:
  SharedSecretClient(std::string secret, std::string entity_name);
  std::string request_payload();                              // AUTH_REQUEST
  std::string answer_challenge(std::string_view reply_more);  // AUTH_REQUEST_MORE
  // Verifies the server's AUTH_DONE proof; throws AuthError when it does not match.
  SessionKeys finish(std::string_view done_payload);

 private:
  std::string secret_;
  std::string name_;
  Challenge client_nonce_{};
  Challenge server_nonce_{};
  bool have_server_nonce_ = false;
};

// The server's side of one exchange.
class SharedSecretServer {
 public:
  explicit SharedSecretServer(std::string secret) : secret_(std::move(secret)) {}
  std::string handle_request(std::string_view request);        // -> AUTH_REPLY_MORE payload
  // Verifies the client's proof; returns the AUTH_DONE payload or throws AuthError.
  std::string handle_proof(std::string_view proof);
  SessionKeys keys() const;
  const std::string& peer_name() const { return name_; }

 private:
  std::string secret_;
  std::string name_;
  Challenge client_nonce_{};
  Challenge server_nonce_{};
  bool verified_ = false;
};

SessionKeys derive_session_keys(std::string_view secret, const Challenge& cn, const Challenge& sn);

}  // namespace bypass::msgr::auth
