#include "msgr/auth/cephx_server.h"

#include <openssl/rand.h>

#include <atomic>
#include <chrono>

namespace bypass::msgr::auth {

namespace {
constexpr uint32_t kServiceTypes[] = {0x01, 0x02, 0x04, 0x08, 0x10, 0x20};  // mon mds osd client mgr auth

// What a ticket says about its holder (AuthTicket v2 inside CephXServiceTicketInfo), sealed with
// the service's secret: only the service can open it and learn the session key.
std::string sealed_ticket(const CephxServiceSecrets& secrets, std::chrono::seconds ttl, uint32_t service_id,
                          const CephxEntity& holder, uint64_t global_id, const CephxKey& session_key) {
  BufferList bl;
  wire::Encoder enc(bl);
  // utime_t {sec, nsec}: to the nanosecond, so a ticket lives its whole ttl (a short one too).
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  const auto sec = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  const auto nsec = static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch - sec).count());
  const auto now = static_cast<uint32_t>(sec.count());
  enc.u8(1);  // CephXServiceTicketInfo
  enc.u8(2);  // AuthTicket
  enc.u64(global_id);
  holder.encode(enc);
  enc.u32(now);  // created
  enc.u32(nsec);
  enc.u32(now + static_cast<uint32_t>(ttl.count()));  // expires
  enc.u32(nsec);
  enc.u8(1);       // AuthCapsInfo
  enc.u8(1);       // allow_all: this server grants everything it authenticates
  enc.blob("");    // caps
  enc.u32(0);      // flags
  session_key.encode(enc);
  return seal_envelope(secrets.secret(service_id), bl.to_string());
}

// CephXServiceTicketReply: for each service a session key sealed with `principal_key` and the
// opaque ticket. Returns the auth service's session key when `services` includes it. A renewal
// that presented a valid old ticket gets the ticket sealed with that ticket's session key
// (`ticket_enc_key`; cephx_build_service_ticket_reply's should_encrypt_ticket).
void encode_ticket_reply(wire::Encoder& enc, const CephxServiceSecrets& secrets, std::chrono::seconds ttl,
                         const CephxKey& principal_key, uint32_t services, const CephxEntity& holder,
                         uint64_t global_id, CephxKey* auth_session_key, const CephxKey* ticket_enc_key = nullptr) {
  uint32_t count = 0;
  for (uint32_t s : kServiceTypes) count += (services & s) ? 1 : 0;
  enc.u8(1);
  enc.u32(count);
  for (uint32_t s : kServiceTypes) {
    if (!(services & s)) continue;
    CephxKey session_key = CephxKey::random();
    if (s == kServiceAuth && auth_session_key) *auth_session_key = session_key;
    enc.u32(s);
    enc.u8(1);
    BufferList body;
    wire::Encoder b(body);
    b.u8(1);  // CephXServiceTicket {session_key, validity}
    session_key.encode(b);
    b.u32(static_cast<uint32_t>(ttl.count()));
    b.u32(0);
    encode_sealed(enc, principal_key, body.to_string());
    CephxTicket ticket = issue_ticket(secrets, ttl, s, holder, global_id, session_key);
    BufferList blob;
    wire::Encoder t(blob);
    ticket.encode_blob(t);
    enc.u8(ticket_enc_key ? 1 : 0);
    if (ticket_enc_key) {
      // encode_encrypt of the bufferlist: its length prefix goes inside the envelope.
      BufferList inner;
      wire::Encoder i(inner);
      i.blob(blob);
      encode_sealed(enc, *ticket_enc_key, inner.to_string());
    } else {
      enc.blob(blob);
    }
  }
}

}  // namespace

CephxTicket issue_ticket(const CephxServiceSecrets& secrets, std::chrono::seconds ttl, uint32_t service_id,
                         const CephxEntity& holder, uint64_t global_id, const CephxKey& session_key) {
  CephxTicket ticket;
  ticket.service_id = service_id;
  ticket.session_key = session_key;
  ticket.secret_id = CephxServiceSecrets::kSecretId;
  ticket.blob = sealed_ticket(secrets, ttl, service_id, holder, global_id, session_key);
  const auto now = std::chrono::system_clock::now();
  ticket.expires = now + ttl;
  ticket.renew_after = now + ttl / 2;
  return ticket;
}

namespace {
uint64_t next_global_id() {
  // Unique within the process, and unlikely to collide with another server's.
  static std::atomic<uint64_t> next{(random_u64_nonzero() & 0xffffffull) << 16};
  return ++next;
}
}  // namespace

CephxServiceSecrets::CephxServiceSecrets() {
  for (uint32_t s : kServiceTypes) secrets_[s] = CephxKey::random();
}

CephxServiceSecrets::CephxServiceSecrets(const CephxKey& every_service) {
  for (uint32_t s : kServiceTypes) secrets_[s] = every_service;
}

const CephxKey& CephxServiceSecrets::secret(uint32_t service_id) const {
  auto it = secrets_.find(service_id);
  if (it == secrets_.end()) throw AuthError("cephx: no secret for service type " + std::to_string(service_id));
  return it->second;
}

std::shared_ptr<const CephxServiceSecrets> CephxServiceSecrets::process() {
  static const auto secrets = std::make_shared<const CephxServiceSecrets>();
  return secrets;
}

CephxMonServer::CephxMonServer(std::shared_ptr<const Keyring> keyring, std::shared_ptr<const CephxServiceSecrets> secrets,
                               std::chrono::seconds ticket_ttl)
    : keyring_(std::move(keyring)), secrets_(std::move(secrets)), ticket_ttl_(ticket_ttl) {}

std::string CephxMonServer::start(std::string_view request) {
  wire::Decoder dec(request, "cephx AUTH_REQUEST");
  uint8_t mode = dec.u8("auth_mode");
  if (mode != kAuthModeMon)
    throw AuthError("cephx: auth mode " + std::to_string(mode) + " (an authorizer for a service); this server " +
                    "authenticates clients monitor-style (mode 10) only");
  peer_ = CephxEntity::decode(dec);
  dec.u64("global_id");  // a reclaim needs an old ticket; every session gets a new id here
  global_id_ = next_global_id();
  server_challenge_ = random_u64_nonzero();
  BufferList bl;
  wire::Encoder enc(bl);
  enc.u8(1);
  enc.u64(server_challenge_);
  return bl.to_string();
}

std::string CephxMonServer::authenticate(std::string_view request_more, bool secure, SessionKeys* keys) {
  if (server_challenge_ == 0) throw AuthError("cephx: AUTH_REQUEST_MORE before AUTH_REQUEST");
  wire::Decoder dec(request_more, "cephx AUTH_REQUEST_MORE");
  uint16_t type = dec.u16("request_type");
  if (type != kCephxGetAuthSessionKey)
    throw AuthError("cephx: request type " + std::to_string(type) + " from " + peer_.to_string() +
                    " where GET_AUTH_SESSION_KEY (256) belongs");
  dec.u8("CephXAuthenticate.struct_v");
  uint64_t client_challenge = dec.u64("client_challenge");
  uint64_t proof = dec.u64("key");
  CephxTicket old_ticket;
  dec.u8("old_ticket.struct_v");
  old_ticket.secret_id = dec.u64("old_ticket.secret_id");
  old_ticket.blob = dec.blob("old_ticket.blob");
  uint32_t other_keys = dec.remaining() >= 4 ? dec.u32("other_keys") : 0;
  const CephxKey* key = keyring_->find(peer_);
  if (key == nullptr) throw AuthError("cephx: " + peer_.to_string() + " is not in keyring '" + keyring_->path() + "'");
  if (proof != cephx_challenge_proof(*key, server_challenge_, client_challenge))
    throw AuthError("cephx: " + peer_.to_string() + " failed the challenge (its key differs from keyring '" +
                    keyring_->path() + "')");

  BufferList bl;
  wire::Encoder enc(bl);
  enc.u16(kCephxGetAuthSessionKey);
  enc.i32(0);
  CephxKey session_key;
  encode_ticket_reply(enc, *secrets_, ticket_ttl_, *key, kServiceAuth, peer_, global_id_, &session_key);
  std::string connection_secret(secure ? 64 : 0, '\0');
  if (secure && RAND_bytes(reinterpret_cast<unsigned char*>(connection_secret.data()), 64) != 1)
    throw AuthError("RAND_bytes failed");
  if (other_keys != 0) {  // nautilus and later: the connection secret and the service tickets now
    BufferList secret_body;
    wire::Encoder s(secret_body);
    s.blob(connection_secret);
    BufferList sealed;
    wire::Encoder cs(sealed);
    encode_sealed(cs, session_key, secret_body.to_string());
    enc.blob(sealed);
    BufferList extra;
    wire::Encoder e(extra);
    if (other_keys & ~kServiceAuth)
      encode_ticket_reply(e, *secrets_, ticket_ttl_, session_key, other_keys & ~kServiceAuth, peer_, global_id_,
                          nullptr);
    enc.blob(extra);
  } else if (secure) {
    throw AuthError("cephx: " + peer_.to_string() + " asked for no service keys, so it cannot receive the " +
                    "connection secret secure mode needs");
  }
  *keys = cephx_session_keys(session_key, connection_secret, secure);
  return bl.to_string();
}

namespace {
const char* service_label(uint32_t service_id) {
  switch (service_id) {
    case 0x01: return "the monitor";
    case 0x02: return "the mds";
    case 0x04: return "the osd";
    case 0x10: return "the mgr";
    case 0x20: return "the auth service";
    default: return "the service";
  }
}
}  // namespace

CephxAuthorizerServer::CephxAuthorizerServer(std::shared_ptr<const CephxServiceSecrets> secrets, uint32_t service_id)
    : secrets_(std::move(secrets)), service_id_(service_id) {}

namespace {
// What sealed_ticket wrote, opened with the service's secret.
struct OpenedTicket {
  uint64_t global_id = 0;
  CephxEntity holder;
  std::chrono::system_clock::time_point expires;
  CephxKey session_key;

  // "12 s ago" (whole seconds, at least 0).
  std::string expired_ago() const {
    return std::to_string(
               std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() - expires).count()) +
           " s ago";
  }
};

OpenedTicket open_ticket(const CephxServiceSecrets& secrets, uint32_t service_id, uint64_t secret_id,
                         const std::string& blob) {
  if (secret_id != CephxServiceSecrets::kSecretId)
    throw AuthError("cephx: a ticket sealed with secret " + std::to_string(secret_id) + ", not one of ours");
  const std::string ticket_info = open_envelope(secrets.secret(service_id), blob, "the service ticket");
  wire::Decoder info(ticket_info, "AuthTicket");
  info.u8("CephXServiceTicketInfo.struct_v");
  info.u8("AuthTicket.struct_v");
  OpenedTicket t;
  t.global_id = info.u64("AuthTicket.global_id");
  t.holder = CephxEntity::decode(info);
  info.u32("created.sec");
  info.u32("created.nsec");
  const uint32_t expires_sec = info.u32("expires.sec");
  const uint32_t expires_nsec = info.u32("expires.nsec");
  t.expires = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::seconds(expires_sec) +
                                                                     std::chrono::nanoseconds(expires_nsec)));
  info.u8("AuthCapsInfo.struct_v");
  info.u8("allow_all");
  info.blob("caps");
  info.u32("flags");
  t.session_key = CephxKey::decode(info);
  return t;
}
}  // namespace

// The authorizer (see CephxAuthorizerClient::authorizer): the ticket is opened with our service
// secret (what sealed_ticket wrote), the CephXAuthorize with the session key found in it.
CephxAuthorizerServer::Authorizer CephxAuthorizerServer::open_authorizer(wire::Decoder& dec) {
  const uint8_t mode = dec.u8("auth_mode");
  if (mode != kAuthModeAuthorizer)
    throw AuthError("cephx: auth mode " + std::to_string(mode) + " where an authorizer (1) belongs");
  const uint64_t global_id = dec.u64("global_id");
  const uint32_t service_id = dec.u32("service_id");
  dec.u8("ticket.struct_v");
  const uint64_t secret_id = dec.u64("ticket.secret_id");
  const std::string blob = dec.blob("ticket.blob");
  if (service_id != service_id_)
    throw AuthError("cephx: a ticket for service " + std::to_string(service_id) + " presented to " +
                    service_label(service_id_));
  OpenedTicket ticket = open_ticket(*secrets_, service_id_, secret_id, blob);
  if (std::chrono::system_clock::now() >= ticket.expires)
    throw AuthError("cephx: " + ticket.holder.to_string() + "'s ticket for " + service_label(service_id_) +
                    " expired " + ticket.expired_ago());
  if (ticket.global_id != global_id)
    throw AuthError("cephx: " + ticket.holder.to_string() + " presented the ticket of global id " +
                    std::to_string(ticket.global_id) + " as global id " + std::to_string(global_id));
  const CephxKey& session_key = ticket.session_key;
  CephxEntity holder = std::move(ticket.holder);
  const std::string authorize = decode_sealed(dec, session_key, "the authorizer");
  wire::Decoder body(authorize, "CephXAuthorize");
  body.u8("struct_v");
  Authorizer a;
  a.nonce = body.u64("nonce");
  a.have_challenge = body.boolean("have_challenge");
  a.challenge_plus_one = body.u64("server_challenge_plus_one");
  peer_ = std::move(holder);
  session_key_ = session_key;
  global_id_ = global_id;
  return a;
}

std::string CephxAuthorizerServer::start(std::string_view request) {
  wire::Decoder dec(request, "cephx authorizer");
  open_authorizer(dec);
  server_challenge_ = random_u64_nonzero();
  BufferList bl;
  wire::Encoder enc(bl);
  enc.u8(1);
  enc.u64(server_challenge_);
  return seal_envelope(session_key_, bl.to_string());  // encode_encrypt_enc_bl: no length prefix
}

std::string CephxAuthorizerServer::authenticate(std::string_view request_more, bool secure, SessionKeys* keys) {
  if (server_challenge_ == 0) throw AuthError("cephx: AUTH_REQUEST_MORE before AUTH_REQUEST");
  wire::Decoder dec(request_more, "cephx authorizer");
  const Authorizer a = open_authorizer(dec);
  if (!a.have_challenge || a.challenge_plus_one != server_challenge_ + 1)
    throw AuthError("cephx: " + peer_.to_string() + " did not answer our authorizer challenge");
  std::string connection_secret(secure ? 64 : 0, '\0');
  if (secure && RAND_bytes(reinterpret_cast<unsigned char*>(connection_secret.data()), 64) != 1)
    throw AuthError("RAND_bytes failed");
  BufferList body;
  wire::Encoder b(body);
  b.u8(2);  // CephXAuthorizeReply v2: with the connection secret
  b.u64(a.nonce + 1);
  b.blob(connection_secret);
  BufferList bl;
  wire::Encoder enc(bl);
  encode_sealed(enc, session_key_, body.to_string());
  *keys = cephx_session_keys(session_key_, connection_secret, secure);
  return bl.to_string();
}

std::string cephx_principal_reply(const std::shared_ptr<const CephxServiceSecrets>& secrets,
                                  std::chrono::seconds ticket_ttl, std::string_view request, uint64_t* global_id) {
  wire::Decoder dec(request, "cephx GET_PRINCIPAL_SESSION_KEY");
  const uint16_t type = dec.u16("request_type");
  if (type != kCephxGetPrincipalSessionKey)
    throw AuthError("cephx: request type " + std::to_string(type) + " on an authenticated session; only " +
                    "GET_PRINCIPAL_SESSION_KEY (512) is served there");
  CephxAuthorizerServer auth_service(secrets, kServiceAuth);
  auth_service.open_authorizer(dec);
  dec.u8("CephXServiceTicketRequest.struct_v");
  const uint32_t asked = dec.u32("keys");
  const uint32_t services = asked & ~kServiceAuth;
  if (services == 0 && asked != 0)
    throw AuthError("cephx: " + auth_service.peer_.to_string() + " asked for an auth ticket with " +
                    "GET_PRINCIPAL_SESSION_KEY; it is renewed with GET_AUTH_SESSION_KEY");
  *global_id = auth_service.global_id_;
  BufferList bl;
  wire::Encoder enc(bl);
  enc.u16(kCephxGetPrincipalSessionKey);
  enc.i32(0);
  encode_ticket_reply(enc, *secrets, ticket_ttl, auth_service.session_key_, services, auth_service.peer_,
                      auth_service.global_id_, nullptr);
  return bl.to_string();
}

std::string cephx_auth_renewal_reply(const Keyring& keyring, const CephxServiceSecrets& secrets,
                                     std::chrono::seconds ticket_ttl, const CephxMonSession& session,
                                     std::string_view request) {
  if (session.server_challenge == 0)
    throw AuthError("cephx: GET_AUTH_SESSION_KEY on a session that did not authenticate monitor-style");
  wire::Decoder dec(request, "cephx GET_AUTH_SESSION_KEY");
  const uint16_t type = dec.u16("request_type");
  if (type != kCephxGetAuthSessionKey)
    throw AuthError("cephx: request type " + std::to_string(type) + " where GET_AUTH_SESSION_KEY (256) belongs");
  dec.u8("CephXAuthenticate.struct_v");
  const uint64_t client_challenge = dec.u64("client_challenge");
  const uint64_t proof = dec.u64("key");
  dec.u8("old_ticket.struct_v");
  const uint64_t secret_id = dec.u64("old_ticket.secret_id");
  const std::string old_blob = dec.blob("old_ticket.blob");
  const uint32_t other_keys = dec.remaining() >= 4 ? dec.u32("other_keys") : 0;
  // As CephxServiceHandler::handle_request: the session's entity proves its key against the
  // challenge of this session, then verify_old_ticket: on an authenticated session the global id
  // is being reclaimed, so the old auth ticket must be presented, open with the auth service's
  // secret and carry the session's global id. verify_old_ticket does not look at the expiry: a Ceph
  // monitor renews an expired auth ticket for as long as it still holds the rotating secret that
  // sealed it (KeyServer keeps three: previous, current and next, each one ticket period). Our
  // secrets never rotate, so the same grace is one ticket lifetime past the expiry; later, the
  // client authenticates afresh on a new session. (A renewal answered late, as on a slow host with
  // short tickets, must not cost the session its tickets.)
  const std::string who = session.entity.to_string();
  const CephxKey* key = keyring.find(session.entity);
  if (key == nullptr) throw AuthError("cephx: " + who + " is not in keyring '" + keyring.path() + "'");
  if (proof != cephx_challenge_proof(*key, session.server_challenge, client_challenge))
    throw AuthError("cephx: " + who + " failed the challenge of its session (its key differs from keyring '" +
                    keyring.path() + "')");
  if (old_blob.empty()) throw AuthError("cephx: " + who + " asked to renew its auth ticket without presenting it");
  const OpenedTicket old = open_ticket(secrets, kServiceAuth, secret_id, old_blob);
  if (std::chrono::system_clock::now() >= old.expires + ticket_ttl)
    throw AuthError("cephx: " + who + "'s auth ticket expired " + old.expired_ago() +
                    "; it authenticates afresh on a new session");
  if (old.global_id != session.global_id || !(old.holder == session.entity))
    throw AuthError("cephx: " + who + " presented the auth ticket of " + old.holder.to_string() + " (global id " +
                    std::to_string(old.global_id) + ") on the session of global id " +
                    std::to_string(session.global_id));

  BufferList bl;
  wire::Encoder enc(bl);
  enc.u16(kCephxGetAuthSessionKey);
  enc.i32(0);
  CephxKey session_key;
  encode_ticket_reply(enc, secrets, ticket_ttl, *key, kServiceAuth, session.entity, session.global_id, &session_key,
                      &old.session_key);
  if (other_keys != 0) {
    // An MAuth carries no connection secret (AuthMonitor::prep_auth asks for none): an empty one,
    // then the other services' tickets sealed with the new session key.
    enc.blob(std::string_view{});
    BufferList extra;
    wire::Encoder e(extra);
    encode_ticket_reply(e, secrets, ticket_ttl, session_key, other_keys, session.entity, session.global_id, nullptr);
    enc.blob(extra);
  }
  return bl.to_string();
}

}  // namespace bypass::msgr::auth
