#include "msgr/handshake_auth.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <stdexcept>

#include "msgr/auth/cephx_client.h"
#include "msgr/auth/cephx_server.h"
#include "msgr/handshake.h"
#include "msgr/wire/codec.h"

namespace bypass::msgr {

namespace {

constexpr AuthMethodInfo kAuthMethods[] = {
    {wire::kAuthNone, "none", false},
    {wire::kAuthCephx, "cephx", true},
    {wire::kAuthSharedSecret, "shared_secret", true},
};

std::string keyring_path(const AuthSettings& a) { return a.keyring ? a.keyring->path() : std::string(); }

// ---- client side ----------------------------------------------------------------------------

class NoneClientAuth final : public ClientAuth {
 public:
  explicit NoneClientAuth(const EntityName& me) : me_(me) {}
  std::string request_payload() override {
    // Ceph's auth-none payload: the entity name and global id (AuthNoneClientHandler):
    // __u8 struct_v=1, EntityName {__le32 type, string id}, __le64 global_id.
    BufferList payload;
    wire::Encoder enc(payload);
    enc.u8(1);
    enc.u32(static_cast<uint32_t>(me_.type));
    enc.blob(std::to_string(me_.num));
    enc.u64(0);
    return payload.to_string();
  }
  std::string answer_challenge(std::string_view) override {
    throw auth::AuthError("AUTH_REPLY_MORE for an auth method without rounds");
  }
  auth::SessionKeys finish(const wire::AuthDoneFrame& done, HandshakeResult&) override {
    if (done.con_mode != wire::kConModeCrc) throw auth::AuthError("secure mode without an auth key");
    return {};
  }

 private:
  EntityName me_;
};

class SharedSecretClientAuth final : public ClientAuth {
 public:
  SharedSecretClientAuth(const AuthSettings& a, const EntityName& me) : client_(a.secret, me.to_string()) {}
  std::string request_payload() override { return client_.request_payload(); }
  std::string answer_challenge(std::string_view reply_more) override { return client_.answer_challenge(reply_more); }
  auth::SessionKeys finish(const wire::AuthDoneFrame& done, HandshakeResult&) override {
    return client_.finish(done.auth_payload);
  }

 private:
  auth::SharedSecretClient client_;
};

// cephx with our own key, as with a monitor (CephxClientHandler's GET_AUTH_SESSION_KEY).
class CephxMonClientAuth final : public ClientAuth {
 public:
  CephxMonClientAuth(const AuthSettings& a, const auth::CephxKey& key, EntityType peer_type)
      : settings_(a), peer_type_(peer_type), client_(a.cephx_name, key, a.cephx_want) {}
  std::string request_payload() override { return client_.request_payload(0); }  // a new global id: no old ticket
  std::string answer_challenge(std::string_view reply_more) override {
    answered_ = true;
    return client_.answer_challenge(reply_more);
  }
  auth::SessionKeys finish(const wire::AuthDoneFrame& done, HandshakeResult& result) override {
    auth::SessionKeys keys = client_.finish(done.auth_payload, done.con_mode == wire::kConModeSecure);
    result.auth_global_id = done.global_id;
    result.cephx_mon_session = {client_.server_challenge(), done.global_id, settings_.cephx_name};
    // Only a monitor's tickets are for the cluster's services; another Bypass server that
    // authenticated us with our key sealed them with secrets no other service holds.
    if (settings_.tickets && peer_type_ == EntityType::Mon) {
      for (const auto& t : client_.tickets()) settings_.tickets->put(t);
      settings_.tickets->set_global_id(done.global_id);
    }
    return keys;
  }
  std::string explain_refusal(const std::string& peer, const std::string& error) const override {
    const std::string me = settings_.cephx_name.to_string();
    if (!answered_ && peer_type_ != EntityType::Mon)
      return "cephx: " + peer + " refused a monitor-style exchange (" + error + "): it takes tickets only, and " + me +
             " has no ticket for it; authenticate with a monitor first (it hands out the service tickets)";
    if (answered_)
      return "cephx: " + peer + " rejected " + me + "'s key (" + error + "): either it does not know " + me +
             " or its key differs from the one in '" + keyring_path(settings_) + "'";
    return {};
  }

 private:
  const AuthSettings& settings_;  // the handshake's, which outlives this object
  EntityType peer_type_;
  auth::CephxMonClient client_;
  bool answered_ = false;  // we sent our proof (AUTH_REQUEST_MORE)
};

// cephx to a service: the authorizer built from the ticket the monitor gave us for it.
class CephxAuthorizerClientAuth final : public ClientAuth {
 public:
  CephxAuthorizerClientAuth(const AuthSettings& a, const auth::CephxTicket& ticket)
      : settings_(a), client_(ticket, a.tickets->global_id()) {}
  std::string request_payload() override { return client_.request_payload(); }
  std::string answer_challenge(std::string_view reply_more) override { return client_.answer_challenge(reply_more); }
  auth::SessionKeys finish(const wire::AuthDoneFrame& done, HandshakeResult& result) override {
    auth::SessionKeys keys = client_.finish(done.auth_payload, done.con_mode == wire::kConModeSecure);
    result.auth_global_id = settings_.tickets->global_id();
    return keys;
  }
  std::string explain_refusal(const std::string& peer, const std::string& error) const override {
    return "cephx: " + peer + " rejected " + settings_.cephx_name.to_string() + "'s ticket (" + error +
           "): it may have expired or the service's keys rotated; authenticate with a monitor again";
  }

 private:
  const AuthSettings& settings_;
  auth::CephxAuthorizerClient client_;
};

// A monitor gets the cephx exchange proper; any other service the authorizer built from the
// ticket the monitor gave us for it.
std::unique_ptr<ClientAuth> make_cephx_client_auth(const AuthSettings& a, EntityType peer_type,
                                                   const std::string& peer_label) {
  const std::string me = a.cephx_name.to_string();
  const auth::CephxKey* key = a.keyring ? a.keyring->find(a.cephx_name) : nullptr;
  std::optional<auth::CephxTicket> ticket;
  if (peer_type != EntityType::Mon && a.tickets) ticket = a.tickets->get(static_cast<uint32_t>(peer_type));
  // Monitor-style with our own key: to a monitor, and to any other service we hold no ticket for
  // (a Bypass server with a keyring authenticates every peer type that way; a Ceph daemon refuses,
  // and explain_refusal says to get a ticket from a monitor first).
  if (peer_type == EntityType::Mon || (!ticket && key != nullptr)) {
    if (key == nullptr)
      throw auth::AuthError("cephx: keyring '" + (a.keyring ? a.keyring->path() : std::string("(none)")) +
                            "' has no key for " + me + " (ms.keyring, ms.auth_name)");
    return std::make_unique<CephxMonClientAuth>(a, *key, peer_type);
  }
  if (!ticket)
    throw auth::AuthError("cephx: " + me + " has no ticket for " + peer_label +
                          "; authenticate with a monitor first (it hands out the service tickets)");
  const auto now = std::chrono::system_clock::now();
  if (ticket->expires != std::chrono::system_clock::time_point{} && ticket->expires <= now) {
    auto ago = std::chrono::duration_cast<std::chrono::seconds>(now - ticket->expires).count();
    throw auth::AuthError("cephx: " + me + "'s ticket for " + peer_label + " expired " + std::to_string(ago) +
                          " s ago; authenticate with a monitor again for a new one");
  }
  return std::make_unique<CephxAuthorizerClientAuth>(a, *ticket);
}

// ---- server side ----------------------------------------------------------------------------

class NoneServerAuth final : public ServerAuth {
 public:
  std::optional<std::string> start(std::string_view) override { return std::nullopt; }
  Done authenticate(std::string_view, bool, auth::SessionKeys*, HandshakeResult&) override {
    throw auth::AuthError("AUTH_REQUEST_MORE for an auth method without rounds");
  }
};

class SharedSecretServerAuth final : public ServerAuth {
 public:
  explicit SharedSecretServerAuth(const AuthSettings& a) : server_(a.secret) {}
  std::optional<std::string> start(std::string_view request) override { return server_.handle_request(request); }
  Done authenticate(std::string_view proof, bool, auth::SessionKeys* keys, HandshakeResult& result) override {
    Done done;
    done.payload = server_.handle_proof(proof);  // throws on a bad proof
    done.global_id = static_cast<uint64_t>(std::max<int64_t>(0, result.peer_name.num));
    *keys = server_.keys();
    return done;
  }

 private:
  auth::SharedSecretServer server_;
};

class CephxServerAuth final : public ServerAuth {
 public:
  CephxServerAuth(const AuthSettings& a, EntityType my_type) : settings_(a), my_type_(my_type) {}
  std::optional<std::string> start(std::string_view request) override {
    // The first byte is the auth mode: a ticket (authorizer) or the monitor-style exchange.
    if (!request.empty() && static_cast<uint8_t>(request[0]) == auth::kAuthModeAuthorizer) {
      authorizer_ = std::make_unique<auth::CephxAuthorizerServer>(settings_.cephx_secrets,
                                                                  static_cast<uint32_t>(my_type_));
      return authorizer_->start(request);
    }
    mon_ = std::make_unique<auth::CephxMonServer>(settings_.keyring, settings_.cephx_secrets,
                                                  settings_.cephx_ticket_ttl);
    return mon_->start(request);
  }
  Done authenticate(std::string_view request_more, bool secure, auth::SessionKeys* keys,
                    HandshakeResult& result) override {
    Done done;
    if (mon_) {
      done.payload = mon_->authenticate(request_more, secure, keys);
      done.global_id = mon_->global_id();
      result.cephx_mon_session = {mon_->server_challenge(), mon_->global_id(), mon_->peer()};
    } else {
      done.payload = authorizer_->authenticate(request_more, secure, keys);
      done.global_id = authorizer_->global_id();
    }
    result.auth_global_id = done.global_id;
    return done;
  }
  // Like a Ceph monitor: EACCES for a request it cannot take, EPERM for an unknown name or a wrong
  // key alike.
  int32_t refusal_at_start() const override { return -EACCES; }
  int32_t refusal_at_proof() const override { return -EPERM; }

 private:
  const AuthSettings& settings_;
  EntityType my_type_;
  std::unique_ptr<auth::CephxMonServer> mon_;
  std::unique_ptr<auth::CephxAuthorizerServer> authorizer_;
};

}  // namespace

const AuthMethodInfo* find_auth_method(uint32_t method) {
  for (const auto& info : kAuthMethods) {
    if (info.method == method) return &info;
  }
  return nullptr;
}

std::string auth_method_name(uint32_t method) {
  const AuthMethodInfo* info = find_auth_method(method);
  return info ? info->name : "method " + std::to_string(method);
}

std::unique_ptr<ClientAuth> make_client_auth(const AuthSettings& settings, const EntityName& my_name,
                                             EntityType peer_type, const std::string& peer_label) {
  switch (settings.method) {
    case wire::kAuthNone: return std::make_unique<NoneClientAuth>(my_name);
    case wire::kAuthCephx: return make_cephx_client_auth(settings, peer_type, peer_label);
    default: return std::make_unique<SharedSecretClientAuth>(settings, my_name);
  }
}

std::unique_ptr<ServerAuth> make_server_auth(uint32_t method, const AuthSettings& settings,
                                             const EntityName& my_name) {
  switch (method) {
    case wire::kAuthNone: return std::make_unique<NoneServerAuth>();
    case wire::kAuthCephx:
      if (!settings.keyring || !settings.cephx_secrets) throw std::runtime_error("cephx server without a keyring");
      return std::make_unique<CephxServerAuth>(settings, my_name.type);
    case wire::kAuthSharedSecret: return std::make_unique<SharedSecretServerAuth>(settings);
    default: return nullptr;
  }
}

}  // namespace bypass::msgr
