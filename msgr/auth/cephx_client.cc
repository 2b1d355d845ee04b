#include "msgr/auth/cephx_client.h"

#include <algorithm>
#include <functional>
#include <optional>

namespace bypass::msgr::auth {

namespace {
std::string encoded(const std::function<void(wire::Encoder&)>& fill) {
  BufferList bl;
  wire::Encoder enc(bl);
  fill(enc);
  return bl.to_string();
}

// The opaque ticket as the client stores and presents it: CephXTicketBlob {__u8 1, secret_id, blob}.
void decode_ticket_blob(wire::Decoder& dec, CephxTicket* t) {
  dec.u8("ticket.struct_v");
  t->secret_id = dec.u64("ticket.secret_id");
  t->blob = dec.blob("ticket.blob");
}

// CEPHX_GET_AUTH_SESSION_KEY: CephXRequestHeader, then CephXAuthenticate v3 {client_challenge,
// key = proof(secret, server_challenge, client_challenge), old_ticket, other_keys}.
std::string auth_session_key_request(const CephxKey& key, uint64_t server_challenge, const CephxTicket& old_ticket,
                                     uint32_t other_keys) {
  const uint64_t client_challenge = random_u64_nonzero();
  return encoded([&](wire::Encoder& enc) {
    enc.u16(kCephxGetAuthSessionKey);
    enc.u8(3);  // CephXAuthenticate v3: old_ticket is always filled in when we have one
    enc.u64(client_challenge);
    enc.u64(cephx_challenge_proof(key, server_challenge, client_challenge));
    old_ticket.encode_blob(enc);
    enc.u32(other_keys);  // asking for any also gets the connection secret (nautilus and later)
  });
}
}  // namespace

void CephxTicket::encode_blob(wire::Encoder& enc) const {
  enc.u8(1);
  enc.u64(secret_id);
  enc.blob(blob);
}

void CephxTicketStore::put(const CephxTicket& t) {
  std::lock_guard<std::mutex> guard(lock_);
  tickets_[t.service_id] = t;
}

std::optional<CephxTicket> CephxTicketStore::get(uint32_t service_id) const {
  std::lock_guard<std::mutex> guard(lock_);
  auto it = tickets_.find(service_id);
  if (it == tickets_.end()) return std::nullopt;
  return it->second;
}

void CephxTicketStore::set_global_id(uint64_t id) {
  std::lock_guard<std::mutex> guard(lock_);
  global_id_ = id;
}

uint64_t CephxTicketStore::global_id() const {
  std::lock_guard<std::mutex> guard(lock_);
  return global_id_;
}

void decode_ticket_reply(wire::Decoder& dec, const CephxKey& key, const char* what_ticket,
                         std::vector<CephxTicket>* out, const CephxKey* old_session_key) {
  dec.u8("service_ticket_reply.struct_v");
  uint32_t count = dec.u32("service_ticket_reply.count");
  if (count > 32) dec.fail("service_ticket_reply.count", std::to_string(count) + " tickets");
  const auto now = std::chrono::system_clock::now();
  for (uint32_t i = 0; i < count; ++i) {
    CephxTicket t;
    t.service_id = dec.u32("ticket.service_id");
    dec.u8("ticket.struct_v");
    // CephXServiceTicket {__u8 1, CryptoKey session_key, utime_t validity}, sealed with `key`.
    std::string body = decode_sealed(dec, key, what_ticket);
    wire::Decoder inner(body, "CephXServiceTicket");
    inner.u8("struct_v");
    t.session_key = CephxKey::decode(inner);
    uint32_t sec = inner.u32("validity.sec");
    uint32_t nsec = inner.u32("validity.nsec");
    const auto validity = std::chrono::seconds(sec) + std::chrono::nanoseconds(nsec);
    t.expires = now + validity;
    t.renew_after = now + validity / 2;
    // cephx_build_service_ticket_reply: when the request presented a valid old ticket
    // (should_enc_ticket), the CephXTicketBlob comes encode_encrypt'ed with that ticket's session
    // key, the bufferlist inside keeping its length; otherwise it is the bare bufferlist.
    const bool sealed_ticket = dec.u8("ticket.encrypted") != 0;
    std::string ticket_bl;
    if (sealed_ticket) {
      if (old_session_key == nullptr)
        dec.fail("ticket.encrypted", "ticket sealed with an old session key we never sent");
      std::string body = decode_sealed(dec, *old_session_key, "the renewed ticket (sealed with the old session key)");
      wire::Decoder bdec(body, "sealed ticket");
      ticket_bl = bdec.blob("ticket");
    } else {
      ticket_bl = dec.blob("ticket");
    }
    wire::Decoder tdec(ticket_bl, "CephXTicketBlob");
    decode_ticket_blob(tdec, &t);
    out->push_back(std::move(t));
  }
}

CephxMonClient::CephxMonClient(CephxEntity name, CephxKey key, uint32_t want)
    : name_(std::move(name)), key_(std::move(key)), want_(want) {}

std::string CephxMonClient::request_payload(uint64_t global_id) const {
  return encoded([&](wire::Encoder& enc) {
    enc.u8(kAuthModeMon);
    name_.encode(enc);
    enc.u64(global_id);
  });
}

std::string CephxMonClient::answer_challenge(std::string_view reply_more) {
  wire::Decoder dec(reply_more, "CephXServerChallenge");
  dec.u8("struct_v");
  server_challenge_ = dec.u64("server_challenge");
  // A new session: no old ticket. other_keys: asking for them also gets the connection secret.
  return auth_session_key_request(key_, server_challenge_, CephxTicket{}, want_ & ~kServiceAuth);
}

SessionKeys CephxMonClient::finish(std::string_view done_payload, bool secure) {
  if (server_challenge_ == 0) throw AuthError("cephx: AUTH_DONE arrived before the monitor's challenge");
  AuthSessionKeyReply reply = decode_auth_session_key_reply(done_payload, key_, nullptr);
  tickets_ = std::move(reply.tickets);
  return cephx_session_keys(reply.session_key, reply.connection_secret, secure);
}

AuthSessionKeyReply decode_auth_session_key_reply(std::string_view payload, const CephxKey& key,
                                                  const CephxKey* old_session_key) {
  wire::Decoder dec(payload, "cephx GET_AUTH_SESSION_KEY reply");
  uint16_t type = dec.u16("response.request_type");
  int32_t status = dec.i32("response.status");
  if (type != kCephxGetAuthSessionKey)
    dec.fail("response.request_type", "answer to request " + std::to_string(type) + ", we asked for 0x100");
  if (status != 0) throw AuthError("cephx: the monitor answered with status " + std::to_string(status));
  AuthSessionKeyReply reply;
  decode_ticket_reply(dec, key, "the auth ticket (sealed with our key)", &reply.tickets, old_session_key);
  auto auth = std::find_if(reply.tickets.begin(), reply.tickets.end(),
                           [](const CephxTicket& t) { return t.service_id == kServiceAuth; });
  if (auth == reply.tickets.end()) throw AuthError("cephx: the monitor's reply has no auth ticket");
  reply.session_key = auth->session_key;
  std::rotate(reply.tickets.begin(), auth, auth + 1);  // the auth ticket first
  if (!dec.at_end()) {
    std::string sealed = dec.blob("connection_secret");
    if (!sealed.empty()) {
      wire::Decoder sdec(sealed, "connection_secret");
      std::string body = decode_sealed(sdec, reply.session_key, "the connection secret");
      wire::Decoder bdec(body, "connection_secret");
      reply.connection_secret = bdec.blob("connection_secret");
    }
    std::string extra = dec.blob("extra_tickets");
    if (!extra.empty()) {
      wire::Decoder edec(extra, "extra_tickets");
      decode_ticket_reply(edec, reply.session_key, "the service tickets", &reply.tickets);
    }
  }
  return reply;
}

uint16_t cephx_request_type(std::string_view payload) {
  if (payload.size() < 2) return 0;
  return static_cast<uint16_t>(static_cast<uint8_t>(payload[0]) | static_cast<uint8_t>(payload[1]) << 8);
}

std::string auth_renewal_request(const CephxKey& key, uint64_t server_challenge, const CephxTicket& auth_ticket,
                                 uint32_t other_keys) {
  return auth_session_key_request(key, server_challenge, auth_ticket, other_keys & ~kServiceAuth);
}

std::vector<CephxTicket> auth_renewal_reply(std::string_view reply, const CephxKey& key,
                                            const CephxKey& old_session_key) {
  return decode_auth_session_key_reply(reply, key, &old_session_key).tickets;
}

std::string principal_request(const CephxTicket& auth_ticket, uint64_t global_id, uint32_t services) {
  return encoded([&](wire::Encoder& enc) {
    enc.u16(kCephxGetPrincipalSessionKey);
    enc.raw(CephxAuthorizerClient(auth_ticket, global_id).request_payload());
    enc.u8(1);
    enc.u32(services);
  });
}

std::vector<CephxTicket> principal_reply(std::string_view reply, const CephxKey& auth_session_key) {
  wire::Decoder dec(reply, "cephx GET_PRINCIPAL_SESSION_KEY reply");
  uint16_t type = dec.u16("response.request_type");
  int32_t status = dec.i32("response.status");
  if (type != kCephxGetPrincipalSessionKey)
    dec.fail("response.request_type", "answer to request " + std::to_string(type) + ", we asked for 0x200");
  if (status != 0)
    throw AuthError("cephx: the monitor refused service tickets (status " + std::to_string(status) + ")");
  std::vector<CephxTicket> tickets;
  decode_ticket_reply(dec, auth_session_key, "the renewed service tickets", &tickets);
  return tickets;
}

CephxAuthorizerClient::CephxAuthorizerClient(CephxTicket ticket, uint64_t global_id)
    : ticket_(std::move(ticket)), global_id_(global_id), nonce_(random_u64_nonzero()) {}

std::string CephxAuthorizerClient::authorizer(bool have_challenge, uint64_t challenge_plus_one) const {
  return encoded([&](wire::Encoder& enc) {
    enc.u8(kAuthModeAuthorizer);  // authorizer_v 1, which is also the auth mode byte
    enc.u64(global_id_);
    enc.u32(ticket_.service_id);
    ticket_.encode_blob(enc);
    std::string body = encoded([&](wire::Encoder& b) {
      b.u8(2);  // CephXAuthorize v2
      b.u64(nonce_);
      b.boolean(have_challenge);
      b.u64(challenge_plus_one);
    });
    encode_sealed(enc, ticket_.session_key, body);
  });
}

std::string CephxAuthorizerClient::answer_challenge(std::string_view reply_more) {
  // CephXAuthorizeChallenge sealed without a length prefix (encode_encrypt_enc_bl).
  std::string body = open_envelope(ticket_.session_key, reply_more, "the service's authorizer challenge");
  wire::Decoder dec(body, "CephXAuthorizeChallenge");
  dec.u8("struct_v");
  uint64_t challenge = dec.u64("server_challenge");
  return authorizer(true, challenge + 1);
}

SessionKeys CephxAuthorizerClient::finish(std::string_view done_payload, bool secure) {
  wire::Decoder dec(done_payload, "CephXAuthorizeReply");
  std::string body = decode_sealed(dec, ticket_.session_key, "the service's authorizer reply");
  wire::Decoder bdec(body, "CephXAuthorizeReply");
  uint8_t v = bdec.u8("struct_v");
  uint64_t nonce_plus_one = bdec.u64("nonce_plus_one");
  if (nonce_plus_one != nonce_ + 1)
    throw AuthError("cephx: the service's authorizer reply does not prove it read our ticket (nonce mismatch)");
  std::string connection_secret;
  if (v >= 2) connection_secret = bdec.blob("connection_secret");
  return cephx_session_keys(ticket_.session_key, connection_secret, secure);
}

}  // namespace bypass::msgr::auth
