// The handshake's AUTH phase, one object per auth method and side, chosen once when the phase
// begins (make_client_auth, make_server_auth) instead of tested at every step. Like the handshake
// they do no I/O: they turn the peer's payloads into ours and hand back the session keys.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "msgr/auth/shared_secret.h"
#include "msgr/entity.h"
#include "msgr/wire/control_frames.h"

namespace bypass::msgr {

struct AuthSettings;
struct HandshakeResult;

// The methods this build speaks, by their AUTH_REQUEST number: name for messages, and whether the
// method yields a key (secure mode needs one; auth none does not).
struct AuthMethodInfo {
  uint32_t method;
  const char* name;
  bool yields_key;
};
// nullptr for a method we do not speak.
const AuthMethodInfo* find_auth_method(uint32_t method);
std::string auth_method_name(uint32_t method);

// The client's side of one method.
class ClientAuth {
 public:
  virtual ~ClientAuth() = default;
  // AUTH_REQUEST's auth_payload.
  virtual std::string request_payload() = 0;
  // AUTH_REPLY_MORE -> AUTH_REQUEST_MORE's auth_payload. Throws when the method has no rounds.
  virtual std::string answer_challenge(std::string_view reply_more) = 0;
  // AUTH_DONE: verifies the server's part and returns the session keys (empty: no key); records in
  // `result` what the method learned (cephx: the global id, the monitor session).
  virtual auth::SessionKeys finish(const wire::AuthDoneFrame& done, HandshakeResult& result) = 0;
  // Why the server refused us in AUTH_BAD_METHOD when the method suited it (`peer`: "the monitor";
  // `error`: "EPERM"), or empty when the refusal can only be about the connection modes.
  virtual std::string explain_refusal(const std::string& peer, const std::string& error) const {
    (void)peer;
    (void)error;
    return {};
  }
};

// The client's side of settings.method towards a peer of `peer_type`. Throws auth::AuthError with
// the sentence for the user when it cannot start (cephx: no key, no ticket, an expired ticket).
std::unique_ptr<ClientAuth> make_client_auth(const AuthSettings& settings, const EntityName& my_name,
                                             EntityType peer_type, const std::string& peer_label);

// The server's side of one method.
class ServerAuth {
 public:
  virtual ~ServerAuth() = default;
  // AUTH_REQUEST: AUTH_REPLY_MORE's payload, or nullopt when the method has no rounds (AUTH_DONE
  // follows at once, without a key). Throws auth::AuthError to refuse.
  virtual std::optional<std::string> start(std::string_view request) = 0;
  // AUTH_REQUEST_MORE: checks the client's proof; returns what AUTH_DONE carries and fills `keys`
  // (cephx also records its global id and monitor session in `result`). Throws auth::AuthError to
  // refuse.
  struct Done {
    uint64_t global_id = 0;
    std::string payload;
  };
  virtual Done authenticate(std::string_view request_more, bool secure, auth::SessionKeys* keys,
                            HandshakeResult& result) = 0;
  // The errno an AUTH_BAD_METHOD carries when start() / authenticate() refuse, or 0 to end the
  // handshake without telling the client why.
  virtual int32_t refusal_at_start() const { return 0; }
  virtual int32_t refusal_at_proof() const { return 0; }
};

// The server's side of `method` (our configured one), or nullptr when we do not speak it (cephx's
// flavour, a ticket or the monitor-style exchange, follows from the request in start()). Throws
// std::runtime_error when our settings cannot serve it (cephx without a keyring).
std::unique_ptr<ServerAuth> make_server_auth(uint32_t method, const AuthSettings& settings, const EntityName& my_name);

}  // namespace bypass::msgr
